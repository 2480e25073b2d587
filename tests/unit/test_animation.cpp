// The animation of a mechanism (docs/animation.md): the shape table the compiler builds against
// the MSL's documented defaults, the glTF read back by a small reader here against the
// pendulum's analytic pose, the HTML page's embedded library and frames, and the resampling to
// the display rate with event instants kept.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "mech_test_util.h"
#include "runtime/anim/Animation.h"

namespace mbs {
namespace {

using testutil::compile_source;

// ---- a small JSON reader (objects, arrays, strings without escapes beyond \", numbers, true,
// false, null): enough for the glTF this writer makes
struct Json {
  std::variant<std::nullptr_t, bool, double, std::string, std::vector<Json>,
               std::map<std::string, Json>>
      v;
  const Json& operator[](const std::string& k) const {
    static const Json none;
    const auto* o = std::get_if<std::map<std::string, Json>>(&v);
    if (o == nullptr) return none;
    auto it = o->find(k);
    return it == o->end() ? none : it->second;
  }
  const Json& operator[](size_t i) const { return std::get<std::vector<Json>>(v).at(i); }
  size_t size() const {
    if (const auto* a = std::get_if<std::vector<Json>>(&v)) return a->size();
    return 0;
  }
  bool has(const std::string& k) const {
    const auto* o = std::get_if<std::map<std::string, Json>>(&v);
    return o != nullptr && o->count(k) != 0;
  }
  double num() const { return std::get<double>(v); }
  const std::string& str() const { return std::get<std::string>(v); }
};

class JsonParser {
 public:
  explicit JsonParser(std::string_view s) : s_(s) {}
  Json parse() {
    Json j = value();
    ws();
    if (at_ != s_.size()) throw std::runtime_error("trailing text at " + std::to_string(at_));
    return j;
  }

 private:
  void ws() {
    while (at_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[at_]))) ++at_;
  }
  char peek() {
    ws();
    if (at_ >= s_.size()) throw std::runtime_error("unexpected end");
    return s_[at_];
  }
  void expect(char c) {
    if (peek() != c)
      throw std::runtime_error(std::string("expected ") + c + " at " + std::to_string(at_));
    ++at_;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (at_ < s_.size() && s_[at_] != '"') {
      if (s_[at_] == '\\') ++at_;
      out += s_[at_++];
    }
    expect('"');
    return out;
  }
  Json value() {
    const char c = peek();
    Json j;
    if (c == '{') {
      ++at_;
      std::map<std::string, Json> o;
      if (peek() != '}')
        for (;;) {
          std::string k = string();
          expect(':');
          o[k] = value();
          if (peek() == ',') {
            ++at_;
            continue;
          }
          break;
        }
      expect('}');
      j.v = std::move(o);
    } else if (c == '[') {
      ++at_;
      std::vector<Json> a;
      if (peek() != ']')
        for (;;) {
          a.push_back(value());
          if (peek() == ',') {
            ++at_;
            continue;
          }
          break;
        }
      expect(']');
      j.v = std::move(a);
    } else if (c == '"') {
      j.v = string();
    } else if (s_.substr(at_, 4) == "true") {
      at_ += 4;
      j.v = true;
    } else if (s_.substr(at_, 5) == "false") {
      at_ += 5;
      j.v = false;
    } else if (s_.substr(at_, 4) == "null") {
      at_ += 4;
    } else {
      size_t used = 0;
      j.v = std::stod(std::string(s_.substr(at_, 40)), &used);
      at_ += used;
    }
    return j;
  }
  std::string_view s_;
  size_t at_ = 0;
};

uint32_t u32(const std::string& b, size_t at) {
  uint32_t x = 0;
  std::memcpy(&x, b.data() + at, 4);
  return x;
}

// A glTF file read back: its JSON and its binary buffer.
struct Gltf {
  Json json;
  std::string bin;
  // the floats of accessor a (tightly packed)
  std::vector<float> floats(size_t a) const {
    const Json& acc = json["accessors"][a];
    const Json& view = json["bufferViews"][static_cast<size_t>(acc["bufferView"].num())];
    const auto count = static_cast<size_t>(acc["count"].num());
    const std::string& type = acc["type"].str();
    const size_t n = type == "SCALAR" ? 1 : type == "VEC3" ? 3 : 4;
    std::vector<float> out(count * n);
    std::memcpy(out.data(), bin.data() + static_cast<size_t>(view["byteOffset"].num()),
                out.size() * 4);
    return out;
  }
};

Gltf read_glb(const std::string& b) {
  Gltf g;
  EXPECT_EQ(u32(b, 0), 0x46546C67u);  // "glTF"
  EXPECT_EQ(u32(b, 4), 2u);
  EXPECT_EQ(u32(b, 8), b.size());
  const uint32_t json_len = u32(b, 12);
  EXPECT_EQ(u32(b, 16), 0x4E4F534Au);  // "JSON"
  EXPECT_EQ(json_len % 4, 0u);
  g.json = JsonParser(std::string_view(b).substr(20, json_len)).parse();
  const size_t bin_at = 20 + json_len;
  const uint32_t bin_len = u32(b, bin_at);
  EXPECT_EQ(u32(b, bin_at + 4), 0x004E4942u);  // "BIN\0"
  EXPECT_EQ(bin_len % 4, 0u);
  EXPECT_EQ(bin_at + 8 + bin_len, b.size());
  g.bin = b.substr(bin_at + 8, bin_len);
  return g;
}

const char* kRodPendulum = R"(
model RodPendulum
  import Mechanics.*;
  parameter Real L = 0.8;
  World world;
  Revolute j(phi(start = 0.7, fixed = true), w(start = 0, fixed = true));
  FixedTranslation rod(r = {0, -L, 0});
  Body b(m = 1, r_cm = {0, 0, 0}, I = diagonal({0.01, 0.01, 0.01}));
equation
  connect(world.frame, j.frame_a);
  connect(j.frame_b, rod.frame_a);
  connect(rod.frame_b, b.frame_a);
end RodPendulum;
)";

std::shared_ptr<const rt::CompiledModel> animated(const std::string& name,
                                                  const std::string& text) {
  CompileOptions o;
  o.animation = true;
  o.cache_dir = "off";
  return compile_source(name, text, o);
}

const rt::Shape* find_shape(const rt::CompiledModel& m, const std::string& element,
                            const std::string& part) {
  for (const rt::Shape& s : m.shapes)
    if (s.element == element && s.part == part) return &s;
  ADD_FAILURE() << "no shape " << element << " " << part;
  return nullptr;
}

void expect_vec(const std::array<double, 3>& v, double x, double y, double z) {
  EXPECT_NEAR(v[0], x, 1e-12);
  EXPECT_NEAR(v[1], y, 1e-12);
  EXPECT_NEAR(v[2], z, 1e-12);
}

// The MSL's defaults (World: nominalLength = 1, defaultBodyDiameter = 1/9, defaultJointLength
// = 1/10, defaultJointWidth = 1/20, defaultWidthFraction = 20, axisLength = 1/2; Types.Defaults:
// BodyColor {0,128,255}, RodColor {155,155,155}, JointColor {255,0,0},
// BodyCylinderDiameterFraction = 3).
TEST(Animation, ShapeTableOfAPendulumHasTheMslDefaults) {
  auto m = animated("anim_defaults", kRodPendulum);
  ASSERT_TRUE(m);
  const rt::Shape* joint = find_shape(*m, "j", "cylinder");
  const rt::Shape* rod = find_shape(*m, "rod", "rod");
  const rt::Shape* sphere = find_shape(*m, "b", "sphere");
  ASSERT_TRUE(joint && rod && sphere);
  EXPECT_EQ(joint->type, rt::ShapeType::Cylinder);
  EXPECT_EQ(joint->frame, -1);  // frame_a is the world's frame
  EXPECT_NEAR(joint->length, 0.1, 1e-12);
  EXPECT_NEAR(joint->width, 0.05, 1e-12);
  expect_vec(joint->r_shape, 0, 0, -0.05);  // centred on the axis n = {0, 0, 1}
  expect_vec(joint->color, 255, 0, 0);
  EXPECT_EQ(rod->type, rt::ShapeType::Cylinder);
  EXPECT_NEAR(rod->length, 0.8, 1e-12);
  EXPECT_NEAR(rod->width, 0.8 / 20, 1e-12);
  expect_vec(rod->length_direction, 0, -1, 0);
  expect_vec(rod->color, 155, 155, 155);
  EXPECT_EQ(sphere->type, rt::ShapeType::Sphere);
  EXPECT_NEAR(sphere->length, 1.0 / 9, 1e-12);
  expect_vec(sphere->r_shape, -1.0 / 18, 0, 0);  // its centre at r_cm = 0
  expect_vec(sphere->color, 0, 128, 255);
  // r_cm = 0: no cylinder to the centre of mass
  for (const rt::Shape& s : m->shapes) EXPECT_FALSE(s.element == "b" && s.part == "cylinder");
  // the world: three axes of length 1/2 and the gravity arrow along g
  const rt::Shape* gravity = find_shape(*m, "world", "gravity head");
  ASSERT_TRUE(gravity);
  expect_vec(gravity->length_direction, 0, -1, 0);
  // the rod moves with the joint's frame_b, the body with the rod's frame_b: two frames, each
  // with kPoseColumns outputs of role ShapePose
  ASSERT_EQ(m->shape_frames.size(), 2u);
  EXPECT_NE(rod->frame, sphere->frame);
  for (int32_t c : m->shape_frame_column)
    for (int k = 0; k < rt::kPoseColumns; ++k)
      EXPECT_EQ(m->output_role[static_cast<size_t>(c + k)], rt::OutputRole::ShapePose);
}

TEST(Animation, VisualisationParametersOverrideTheDefaults) {
  const std::string text = R"(
model Overrides
  import Mechanics.*;
  World world(nominalLength = 2, animateWorld = false, animateGravity = false);
  Revolute j(phi(start = 0.7, fixed = true), w(start = 0, fixed = true));
  FixedTranslation rod(r = {0, -0.8, 0}, shapeType = 1, width = 0.1, color = {9, 8, 7});
  Body b(m = 1, r_cm = {0.5, 0, 0}, I = diagonal({0.01, 0.01, 0.01}), sphereDiameter = 0.3,
    sphereColor = {1, 2, 3});
equation
  connect(world.frame, j.frame_a);
  connect(j.frame_b, rod.frame_a);
  connect(rod.frame_b, b.frame_a);
end Overrides;
)";
  auto m = animated("anim_override", text);
  ASSERT_TRUE(m);
  const rt::Shape* joint = find_shape(*m, "j", "cylinder");
  const rt::Shape* rod = find_shape(*m, "rod", "rod");
  const rt::Shape* sphere = find_shape(*m, "b", "sphere");
  const rt::Shape* cylinder = find_shape(*m, "b", "cylinder");
  ASSERT_TRUE(joint && rod && sphere && cylinder);
  EXPECT_NEAR(joint->length, 0.2, 1e-12);  // world.defaultJointLength = nominalLength/10
  EXPECT_NEAR(joint->width, 0.1, 1e-12);
  EXPECT_EQ(rod->type, rt::ShapeType::Box);
  EXPECT_NEAR(rod->width, 0.1, 1e-12);
  EXPECT_NEAR(rod->height, 0.1, 1e-12);  // height = width
  expect_vec(rod->color, 9, 8, 7);
  EXPECT_NEAR(sphere->length, 0.3, 1e-12);
  expect_vec(sphere->color, 1, 2, 3);
  expect_vec(cylinder->color, 1, 2, 3);      // cylinderColor = sphereColor
  EXPECT_NEAR(cylinder->width, 0.1, 1e-12);  // sphereDiameter/3
  EXPECT_NEAR(cylinder->length, 0.5, 1e-12);
  for (const rt::Shape& s : m->shapes) EXPECT_NE(s.element, "world");
}

// A track of the pendulum run at `fps` and the column of j.phi.
struct PendulumRun {
  std::shared_ptr<const rt::CompiledModel> model;
  testutil::Run run;
  rt::AnimationTrack track;
  int phi = 0;
};

PendulumRun pendulum_run(double fps) {
  PendulumRun p;
  p.model = animated("anim_run", kRodPendulum);
  if (!p.model) return p;
  rt::SolverOptions so;
  so.t_end = 0.5;
  so.h = 1e-3;
  p.run = testutil::simulate(*p.model, so);
  p.phi = testutil::output_column(*p.model, "j.phi");
  rt::AnimationRecorder rec(*p.model, {"j.phi"}, fps);
  for (size_t i = 0; i < p.run.t.size(); ++i) rec.add_row(p.run.t[i], p.run.rows[i]);
  p.track = rec.finish();
  return p;
}

TEST(Animation, GltfNodesFollowThePendulumsAnalyticPose) {
  // 50 frames per second: every frame is a row of the run (h = 1 ms)
  PendulumRun p = pendulum_run(50);
  ASSERT_TRUE(p.model);
  const rt::CompiledModel& m = *p.model;
  ASSERT_EQ(p.track.size(), 26u);  // 0, 0.02, ..., 0.5
  const Gltf g = read_glb(rt::animation_gltf(m, p.track, true));
  // well-formed: buffer views aligned and inside the buffer, accessors within their views,
  // POSITION and the animation's input with min and max
  ASSERT_EQ(static_cast<size_t>(g.json["buffers"][0]["byteLength"].num()), g.bin.size());
  for (size_t i = 0; i < g.json["bufferViews"].size(); ++i) {
    const Json& v = g.json["bufferViews"][i];
    EXPECT_EQ(static_cast<size_t>(v["byteOffset"].num()) % 4, 0u);
    EXPECT_LE(v["byteOffset"].num() + v["byteLength"].num(), static_cast<double>(g.bin.size()));
  }
  for (size_t i = 0; i < g.json["accessors"].size(); ++i) {
    const Json& a = g.json["accessors"][i];
    const Json& v = g.json["bufferViews"][static_cast<size_t>(a["bufferView"].num())];
    const std::string& type = a["type"].str();
    const double n = type == "SCALAR" ? 1 : type == "VEC3" ? 3 : 4;
    EXPECT_EQ(a["count"].num() * n * 4, v["byteLength"].num()) << "accessor " << i;
  }
  for (size_t i = 0; i < g.json["meshes"].size(); ++i) {
    const Json& a = g.json["accessors"][static_cast<size_t>(
        g.json["meshes"][i]["primitives"][0]["attributes"]["POSITION"].num())];
    EXPECT_TRUE(a.has("min") && a.has("max"));
  }
  const Json& anim = g.json["animations"][0];
  // the body's frame: the origin of rod.frame_b, at L (sin phi, -cos phi, 0)
  const rt::Shape* sphere = find_shape(m, "b", "sphere");
  ASSERT_TRUE(sphere && sphere->frame >= 0);
  const std::string frame = m.shape_frames[static_cast<size_t>(sphere->frame)];
  size_t node = 0;
  while (node < g.json["nodes"].size() && g.json["nodes"][node]["name"].str() != frame) ++node;
  ASSERT_LT(node, g.json["nodes"].size());
  int checked = 0;
  for (size_t c = 0; c < anim["channels"].size(); ++c) {
    const Json& ch = anim["channels"][c];
    if (static_cast<size_t>(ch["target"]["node"].num()) != node) continue;
    const Json& s = anim["samplers"][static_cast<size_t>(ch["sampler"].num())];
    EXPECT_EQ(s["interpolation"].str(), "LINEAR");
    const Json& input = g.json["accessors"][static_cast<size_t>(s["input"].num())];
    ASSERT_TRUE(input.has("min") && input.has("max"));
    const std::vector<float> t = g.floats(static_cast<size_t>(s["input"].num()));
    const std::vector<float> out = g.floats(static_cast<size_t>(s["output"].num()));
    const bool translation = ch["target"]["path"].str() == "translation";
    for (size_t k = 0; k < t.size(); ++k) {
      if (k > 0) {
        EXPECT_GT(t[k], t[k - 1]);
      }
      const auto row = static_cast<size_t>(std::lround(t[k] / 1e-3));
      ASSERT_LT(row, p.run.t.size());
      ASSERT_NEAR(p.run.t[row], t[k], 1e-6);
      const double phi = p.run.rows[row][static_cast<size_t>(p.phi)], L = 0.8;
      if (translation) {
        EXPECT_NEAR(out[3 * k], L * std::sin(phi), 1e-6);
        EXPECT_NEAR(out[3 * k + 1], -L * std::cos(phi), 1e-6);
        EXPECT_NEAR(out[3 * k + 2], 0, 1e-6);
      } else {  // about z by phi, either sign
        const double sign = out[4 * k + 3] < 0 ? -1 : 1;
        EXPECT_NEAR(out[4 * k], 0, 1e-6);
        EXPECT_NEAR(out[4 * k + 1], 0, 1e-6);
        EXPECT_NEAR(sign * out[4 * k + 2], std::sin(phi / 2), 1e-6);
        EXPECT_NEAR(sign * out[4 * k + 3], std::cos(phi / 2), 1e-6);
      }
    }
    ++checked;
  }
  EXPECT_EQ(checked, 2);  // translation and rotation
  // the .gltf form: the same scene with the buffer as a data URI
  const std::string text = rt::animation_gltf(m, p.track, false);
  const Json j = JsonParser(text).parse();
  const std::string uri = j["buffers"][0]["uri"].str();
  EXPECT_EQ(uri.rfind("data:application/octet-stream;base64,", 0), 0u);
  EXPECT_EQ(uri.size() - std::strlen("data:application/octet-stream;base64,"),
            (g.bin.size() + 2) / 3 * 4);
}

TEST(Animation, HtmlEmbedsThreeJsAndEveryFrame) {
  const std::string dir = rt::three_js_dir();
  if (dir.empty()) GTEST_SKIP() << "three.js (libjs-three) is not installed";
  PendulumRun p = pendulum_run(60);
  ASSERT_TRUE(p.model);
  // 0 to 0.5 s at 60 frames per second: 31 frames (the last at 0.5)
  ASSERT_EQ(p.track.size(), 31u);
  const std::string html = rt::animation_html(*p.model, p.track, "RodPendulum");
  std::ifstream in(dir + "/three.min.js");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string three = ss.str();
  ASSERT_GT(three.size(), 1000u);
  EXPECT_NE(html.find(three.substr(0, 4000)), std::string::npos);
  EXPECT_NE(html.find("OrbitControls"), std::string::npos);
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  const size_t at = html.find("\"n_t\":");
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(std::stoul(html.substr(at + 6)), 31u);
  // the times as base64 of 31 doubles
  const size_t t_at = html.find("\"t\":\"", at);
  ASSERT_NE(t_at, std::string::npos);
  const size_t t_end = html.find('"', t_at + 5);
  EXPECT_EQ(t_end - (t_at + 5), (31 * 8 + 2) / 3 * 4);
}

// A model with the outputs of one shape frame (pose columns) and an event at t = 0.0105: the
// rows before and after it are kept as frames besides the 60 per second.
TEST(Animation, ResamplingKeepsTheEventInstants) {
  rt::CompiledModel m;
  m.output_names = {"x"};
  m.output_role = {rt::OutputRole::Variable};
  for (int k = 0; k < rt::kPoseColumns; ++k) {
    m.output_names.push_back("f.shape[" + std::to_string(k) + "]");
    m.output_role.push_back(rt::OutputRole::ShapePose);
  }
  m.shape_frames = {"f"};
  m.shape_frame_column = {1};
  rt::AnimationRecorder rec(m, {"x"}, 60);
  std::vector<double> row(13, 0.0);
  row[4] = row[8] = row[12] = 1;  // R = identity
  const double h = 1e-3;
  for (int i = 0; i <= 1000; ++i) {
    const double t = i * h;
    row[0] = std::cos(t);
    row[1] = std::sin(t);
    rec.add_row(t, row);
    if (i == 10 || i == 500) {  // an event at 10.5 ms and one at 0.5005 s: two rows each
      const double te = t + 0.5 * h;
      row[1] = std::sin(te);
      row[0] = 5;
      rec.add_row(te, row);
      row[0] = -5;
      rec.add_row(te, row);
    }
  }
  const rt::AnimationTrack track = rec.finish();
  // 0 .. 1 s at 60 per second: 61 frames, plus the two rows of each event
  ASSERT_EQ(track.size(), 61u + 4u);
  for (size_t i = 1; i < track.size(); ++i) EXPECT_GE(track.t[i], track.t[i - 1]);
  int pairs = 0;
  for (size_t i = 1; i < track.size(); ++i)
    if (track.t[i] == track.t[i - 1]) {
      ++pairs;
      EXPECT_EQ(track.show[i - 1], 5);  // before and after the jump
      EXPECT_EQ(track.show[i], -5);
    }
  EXPECT_EQ(pairs, 2);
  // interpolated between rows: x = sin(t) to O(h^2)
  for (size_t i = 0; i < track.size(); ++i)
    EXPECT_NEAR(track.pose[i * rt::kPoseValues], std::sin(track.t[i]), 1e-6);
}

// A model without shapes (no mechanism): a valid glTF has no empty arrays, so no nodes, no
// accessors (the animation's input would be unused) and no BIN chunk.
TEST(Animation, GltfOfAModelWithoutShapesHasNoEmptyArrays) {
  rt::CompiledModel m;
  m.name = "Empty";
  rt::AnimationTrack track;
  track.t = {0, 0.5, 1};
  const std::string b = rt::animation_gltf(m, track, true);
  ASSERT_GE(b.size(), 20u);
  EXPECT_EQ(u32(b, 8), b.size());
  const uint32_t json_len = u32(b, 12);
  EXPECT_EQ(20 + json_len, b.size());
  const Json j = JsonParser(std::string_view(b).substr(20, json_len)).parse();
  EXPECT_EQ(j["asset"]["version"].str(), "2.0");
  for (const char* key : {"nodes", "accessors", "bufferViews", "buffers", "animations", "meshes"})
    EXPECT_FALSE(j.has(key)) << key;
  EXPECT_FALSE(j["scenes"][0].has("nodes"));
}

TEST(Animation, UnknownShownVariableIsAnError) {
  rt::CompiledModel m;
  try {
    rt::AnimationRecorder rec(m, {"nope"}, 60);
    ADD_FAILURE() << "no error";
  } catch (const rt::AnimationError& e) {
    EXPECT_NE(std::string(e.what()).find("nope"), std::string::npos);
  }
  EXPECT_THROW(rt::animation_format("a.png"), rt::AnimationError);
  EXPECT_EQ(rt::animation_format("a.GLB"), rt::AnimationFormat::Glb);
}

}  // namespace
}  // namespace mbs
