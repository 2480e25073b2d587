// glTF 2.0 of an animation (docs/animation.md, "glTF"): a node per shape frame with its
// translation and rotation sampled at every frame (LINEAR), a child node per shape with the
// shape's placement (animated too for a shape that stretches), triangle meshes of the unit
// shapes, a material per colour. Binary (.glb: a JSON and a BIN chunk) or JSON with the buffer
// as a base64 data URI (.gltf). Layout per the glTF 2.0 specification: every buffer view starts
// at a multiple of 4, POSITION accessors and the animation's input accessor have min and max,
// the animation's input is strictly increasing.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <tuple>

#include "runtime/anim/Animation.h"

namespace mbs::rt {
namespace {

constexpr double kPi = 3.14159265358979323846;

struct Mesh {
  std::vector<float> pos, nrm;
  std::vector<uint32_t> idx;
  uint32_t vertex(double x, double y, double z, double nx, double ny, double nz) {
    const double n = std::sqrt(nx * nx + ny * ny + nz * nz);
    pos.insert(pos.end(), {static_cast<float>(x), static_cast<float>(y), static_cast<float>(z)});
    nrm.insert(nrm.end(), {static_cast<float>(nx / n), static_cast<float>(ny / n),
                           static_cast<float>(nz / n)});
    return static_cast<uint32_t>(pos.size() / 3 - 1);
  }
  void tri(uint32_t a, uint32_t b, uint32_t c) { idx.insert(idx.end(), {a, b, c}); }
  void quad(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
    tri(a, b, c);
    tri(a, c, d);
  }
};

// Unit shapes: along +x from 0 to 1, width 1 along y, height 1 along z (Shapes.h), outward
// normals, counter-clockwise front faces.
Mesh box_mesh() {
  Mesh m;
  for (int a = 0; a < 3; ++a)
    for (int sign = -1; sign <= 1; sign += 2) {
      // the face normal to axis a on side `sign`: u, v along the next two axes (u x v = e_a)
      const int b = (a + 1) % 3, c = (a + 2) % 3;
      const double su[4] = {-1, 1, 1, -1}, sv[4] = {-1, -1, 1, 1};
      uint32_t k[4];
      for (int i = 0; i < 4; ++i) {
        double x[3], n[3] = {0, 0, 0};
        x[a] = 0.5 * sign;
        x[b] = 0.5 * su[i];
        x[c] = 0.5 * sv[i];
        n[a] = sign;
        k[i] = m.vertex(x[0] + 0.5, x[1], x[2], n[0], n[1], n[2]);
      }
      if (sign > 0)
        m.quad(k[0], k[1], k[2], k[3]);
      else
        m.quad(k[0], k[3], k[2], k[1]);
    }
  return m;
}

// a solid of revolution about x: radius r0 at x = 0 to r1 at x = 1, with end caps
Mesh frustum_mesh(double r0, double r1, int n = 32) {
  Mesh m;
  const double slope = r0 - r1;  // the side's normal: (slope, cos, sin)
  for (int i = 0; i < n; ++i) {
    const double a = 2 * kPi * i / n, b = 2 * kPi * (i + 1) / n;
    const double ca = std::cos(a), sa = std::sin(a), cb = std::cos(b), sb = std::sin(b);
    const uint32_t p = m.vertex(0, r0 * ca, r0 * sa, slope, ca, sa);
    const uint32_t q = m.vertex(0, r0 * cb, r0 * sb, slope, cb, sb);
    const uint32_t s = m.vertex(1, r1 * cb, r1 * sb, slope, cb, sb);
    const uint32_t t = m.vertex(1, r1 * ca, r1 * sa, slope, ca, sa);
    if (r1 > 0)
      m.quad(p, q, s, t);
    else
      m.tri(p, q, s);
    // caps
    if (r0 > 0) {
      const uint32_t c = m.vertex(0, 0, 0, -1, 0, 0), u = m.vertex(0, r0 * ca, r0 * sa, -1, 0, 0),
                     w = m.vertex(0, r0 * cb, r0 * sb, -1, 0, 0);
      m.tri(c, w, u);
    }
    if (r1 > 0) {
      const uint32_t c = m.vertex(1, 0, 0, 1, 0, 0), u = m.vertex(1, r1 * ca, r1 * sa, 1, 0, 0),
                     w = m.vertex(1, r1 * cb, r1 * sb, 1, 0, 0);
      m.tri(c, u, w);
    }
  }
  return m;
}

Mesh sphere_mesh(int lat = 16, int lon = 32) {
  Mesh m;
  auto at = [&](int i, int j) {
    const double th = kPi * i / lat, ph = 2 * kPi * j / lon;
    const double nx = std::cos(th), ny = std::sin(th) * std::cos(ph),
                 nz = std::sin(th) * std::sin(ph);
    return m.vertex(0.5 + 0.5 * nx, 0.5 * ny, 0.5 * nz, nx, ny, nz);
  };
  for (int i = 0; i < lat; ++i)
    for (int j = 0; j < lon; ++j) {
      const uint32_t a = at(i, j), b = at(i + 1, j), c = at(i + 1, j + 1), d = at(i, j + 1);
      if (i == 0)
        m.tri(a, b, c);  // at the pole a and d coincide
      else if (i == lat - 1)
        m.tri(a, b, d);
      else
        m.quad(a, b, c, d);
    }
  return m;
}

// a coil of `windings` turns of a wire of radius `wire` (unit width) along x
Mesh spring_mesh(double windings, double wire) {
  Mesh m;
  const double n = std::max(1.0, windings), rw = std::clamp(wire, 0.005, 0.25), rh = 0.5 - rw;
  const int seg = static_cast<int>(std::ceil(24 * n)), around = 8;
  for (int i = 0; i < seg; ++i)
    for (int j = 0; j < around; ++j) {
      uint32_t k[4];
      const int di[4] = {0, 1, 1, 0}, dj[4] = {0, 0, 1, 1};
      for (int c = 0; c < 4; ++c) {
        const double u = static_cast<double>(i + di[c]) / seg, a = 2 * kPi * n * u;
        const double b = 2 * kPi * (j + dj[c]) / around;
        // the wire's frame: N radial, B = T x N with the tangent T = (1, -w sin a, w cos a)
        const double w = rh * 2 * kPi * n;
        const double Tx = 1, Ty = -w * std::sin(a), Tz = w * std::cos(a);
        const double Nx = 0, Ny = std::cos(a), Nz = std::sin(a);
        double Bx = Ty * Nz - Tz * Ny, By = Tz * Nx - Tx * Nz, Bz = Tx * Ny - Ty * Nx;
        const double bn = std::sqrt(Bx * Bx + By * By + Bz * Bz);
        Bx /= bn, By /= bn, Bz /= bn;
        const double ox = std::cos(b) * Nx + std::sin(b) * Bx,
                     oy = std::cos(b) * Ny + std::sin(b) * By,
                     oz = std::cos(b) * Nz + std::sin(b) * Bz;
        k[c] = m.vertex(u + rw * ox, rh * Ny + rw * oy, rh * Nz + rw * oz, ox, oy, oz);
      }
      m.quad(k[0], k[3], k[2], k[1]);
    }
  return m;
}

class Gltf {
 public:
  // a buffer view of `bytes` (padded to 4) and an accessor of it; returns the accessor
  int accessor(const void* data, size_t bytes, int component, size_t count, const char* type,
               int target, const std::string& minmax) {
    while (bin_.size() % 4 != 0) bin_.push_back('\0');
    const size_t offset = bin_.size();
    bin_.append(static_cast<const char*>(data), bytes);
    views_.push_back(fmt::format("{{\"buffer\":0,\"byteOffset\":{},\"byteLength\":{}{}}}", offset,
                                 bytes, target ? fmt::format(",\"target\":{}", target) : ""));
    accessors_.push_back(
        fmt::format("{{\"bufferView\":{},\"componentType\":{},\"count\":{},"
                    "\"type\":\"{}\"{}}}",
                    views_.size() - 1, component, count, type, minmax));
    return static_cast<int>(accessors_.size() - 1);
  }
  static std::string bounds(const std::vector<float>& v, int n) {
    std::vector<float> lo(static_cast<size_t>(n), INFINITY), hi(static_cast<size_t>(n), -INFINITY);
    for (size_t i = 0; i < v.size(); ++i) {
      const size_t c = i % static_cast<size_t>(n);
      lo[c] = std::min(lo[c], v[i]);
      hi[c] = std::max(hi[c], v[i]);
    }
    std::string s = ",\"min\":[";
    for (int c = 0; c < n; ++c) s += fmt::format("{}{}", c ? "," : "", lo[static_cast<size_t>(c)]);
    s += "],\"max\":[";
    for (int c = 0; c < n; ++c) s += fmt::format("{}{}", c ? "," : "", hi[static_cast<size_t>(c)]);
    return s + "]";
  }
  int floats(const std::vector<float>& v, const char* type, int n, int target, bool minmax) {
    return accessor(v.data(), v.size() * 4, 5126, v.size() / static_cast<size_t>(n), type, target,
                    minmax ? bounds(v, n) : "");
  }
  int mesh(const Mesh& m, int material, const std::string& name) {
    const int p = floats(m.pos, "VEC3", 3, 34962, true);
    const int n = floats(m.nrm, "VEC3", 3, 34962, false);
    const int i = accessor(m.idx.data(), m.idx.size() * 4, 5125, m.idx.size(), "SCALAR", 34963, "");
    meshes_.push_back(
        fmt::format("{{\"name\":\"{}\",\"primitives\":[{{\"attributes\":{{"
                    "\"POSITION\":{},\"NORMAL\":{}}},\"indices\":{},\"material\":{}}}]}}",
                    name, p, n, i, material));
    return static_cast<int>(meshes_.size() - 1);
  }
  std::string bin_;
  std::vector<std::string> views_, accessors_, meshes_;
};

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    o += c;
  }
  return o;
}

std::string vec(const std::array<double, 3>& v) {
  return fmt::format("[{},{},{}]", static_cast<float>(v[0]), static_cast<float>(v[1]),
                     static_cast<float>(v[2]));
}
std::string quat(const std::array<double, 4>& q) {
  return fmt::format("[{},{},{},{}]", static_cast<float>(q[0]), static_cast<float>(q[1]),
                     static_cast<float>(q[2]), static_cast<float>(q[3]));
}

}  // namespace

std::string animation_gltf(const CompiledModel& model, const AnimationTrack& track, bool binary) {
  Gltf g;
  const size_t nT = track.size(), nF = track.n_frames;
  // materials by colour and specular coefficient
  std::map<std::array<double, 4>, int> material_of;
  std::vector<std::string> materials;
  auto material = [&](const Shape& s) {
    const std::array<double, 4> key{s.color[0], s.color[1], s.color[2], s.specular};
    auto [it, inserted] = material_of.emplace(key, static_cast<int>(materials.size()));
    if (inserted)
      materials.push_back(fmt::format(
          "{{\"pbrMetallicRoughness\":{{\"baseColorFactor\":[{},{},{},1],\"metallicFactor\":0,"
          "\"roughnessFactor\":{}}},\"doubleSided\":true}}",
          std::clamp(s.color[0] / 255, 0.0, 1.0), std::clamp(s.color[1] / 255, 0.0, 1.0),
          std::clamp(s.color[2] / 255, 0.0, 1.0), std::clamp(1 - 0.5 * s.specular, 0.0, 1.0)));
    return it->second;
  };
  // meshes by geometry and material
  std::map<std::tuple<int, double, double, int>, int> mesh_of;
  auto mesh = [&](const Shape& s) {
    const int mat = material(s);
    const bool spring = s.type == ShapeType::Spring;
    const double windings = spring ? s.extra : 0;
    const double wire = spring ? s.height / 2 / std::max(s.width, 1e-9) : 0;
    const auto key = std::make_tuple(static_cast<int>(s.type), windings, wire, mat);
    auto it = mesh_of.find(key);
    if (it != mesh_of.end()) return it->second;
    Mesh m;
    switch (s.type) {
      case ShapeType::Box:
        m = box_mesh();
        break;
      case ShapeType::Cylinder:
      case ShapeType::Pipe:
        m = frustum_mesh(0.5, 0.5);
        break;
      case ShapeType::Cone:
        m = frustum_mesh(0.5, 0);
        break;
      case ShapeType::Sphere:
        m = sphere_mesh();
        break;
      case ShapeType::Spring:
        m = spring_mesh(windings, wire);
        break;
    }
    const int id = g.mesh(m, mat, shape_type_name(s.type));
    mesh_of.emplace(key, id);
    return id;
  };

  // the animation's input: the frame times, strictly increasing as float (an event's second row
  // one float step later)
  std::vector<float> times(nT);
  for (size_t i = 0; i < nT; ++i) {
    times[i] = static_cast<float>(track.t[i]);
    if (i > 0 && !(times[i] > times[i - 1])) times[i] = std::nextafter(times[i - 1], INFINITY);
  }
  std::vector<std::string> nodes, samplers, channels;
  std::vector<int> roots;
  std::vector<std::vector<int>> children(nF);
  const bool animated = nT >= 1;
  int input = -1;  // made with the first channel: an accessor nothing uses is reported
  auto sampler = [&](const std::vector<float>& out, const char* type, int n, int node,
                     const char* path) {
    if (input < 0) input = g.floats(times, "SCALAR", 1, 0, true);
    const int a = g.floats(out, type, n, 0, false);
    samplers.push_back(
        fmt::format("{{\"input\":{},\"output\":{},\"interpolation\":\"LINEAR\"}}", input, a));
    channels.push_back(fmt::format("{{\"sampler\":{},\"target\":{{\"node\":{},\"path\":\"{}\"}}}}",
                                   samplers.size() - 1, node, path));
  };
  // frame nodes first: node f is shape frame f
  for (size_t f = 0; f < nF; ++f) nodes.emplace_back();
  const double* first = nT > 0 ? track.pose.data() : nullptr;
  for (size_t i = 0; i < model.shapes.size(); ++i) {
    const Shape& s = model.shapes[i];
    const double* fp =
        s.frame >= 0 && first ? first + static_cast<size_t>(s.frame) * kPoseValues : nullptr;
    const double* bp = s.stretch && s.frame_b >= 0 && first
                           ? first + static_cast<size_t>(s.frame_b) * kPoseValues
                           : nullptr;
    const ShapePlacement p = place_shape(s, fp, bp);
    const int id = static_cast<int>(nodes.size());
    nodes.push_back(fmt::format(
        "{{\"name\":\"{}\",\"mesh\":{},\"translation\":{},\"rotation\":{},\"scale\":{}}}",
        json_escape(s.element + " " + s.part), mesh(s), vec(p.position), quat(p.rotation),
        vec(p.scale)));
    if (s.frame >= 0)
      children[static_cast<size_t>(s.frame)].push_back(id);
    else
      roots.push_back(id);
    if (s.stretch && animated) {
      std::vector<float> rot(nT * 4), scale(nT * 3);
      for (size_t k = 0; k < nT; ++k) {
        const double* row = track.pose.data() + k * nF * kPoseValues;
        const ShapePlacement q = place_shape(
            s, s.frame >= 0 ? row + static_cast<size_t>(s.frame) * kPoseValues : nullptr,
            s.frame_b >= 0 ? row + static_cast<size_t>(s.frame_b) * kPoseValues : nullptr);
        for (int c = 0; c < 4; ++c)
          rot[4 * k + static_cast<size_t>(c)] =
              static_cast<float>(q.rotation[static_cast<size_t>(c)]);
        for (int c = 0; c < 3; ++c)
          scale[3 * k + static_cast<size_t>(c)] =
              static_cast<float>(q.scale[static_cast<size_t>(c)]);
      }
      sampler(rot, "VEC4", 4, id, "rotation");
      sampler(scale, "VEC3", 3, id, "scale");
    }
  }
  for (size_t f = 0; f < nF; ++f) {
    std::string kids;
    for (int c : children[f]) kids += (kids.empty() ? "" : ",") + std::to_string(c);
    std::array<double, 3> t0{0, 0, 0};
    std::array<double, 4> q0{0, 0, 0, 1};
    if (first)
      for (int c = 0; c < 3; ++c)
        t0[static_cast<size_t>(c)] = first[f * kPoseValues + static_cast<size_t>(c)];
    if (first)
      for (int c = 0; c < 4; ++c)
        q0[static_cast<size_t>(c)] = first[f * kPoseValues + 3 + static_cast<size_t>(c)];
    nodes[f] = fmt::format("{{\"name\":\"{}\",\"translation\":{},\"rotation\":{}{}}}",
                           json_escape(model.shape_frames[f]), vec(t0), quat(q0),
                           kids.empty() ? "" : ",\"children\":[" + kids + "]");
    roots.push_back(static_cast<int>(f));
    if (animated) {
      std::vector<float> tr(nT * 3), rot(nT * 4);
      for (size_t k = 0; k < nT; ++k) {
        const double* p = track.pose.data() + (k * nF + f) * kPoseValues;
        for (int c = 0; c < 3; ++c) tr[3 * k + static_cast<size_t>(c)] = static_cast<float>(p[c]);
        for (int c = 0; c < 4; ++c)
          rot[4 * k + static_cast<size_t>(c)] = static_cast<float>(p[3 + c]);
      }
      sampler(tr, "VEC3", 3, static_cast<int>(f), "translation");
      sampler(rot, "VEC4", 4, static_cast<int>(f), "rotation");
    }
  }
  while (g.bin_.size() % 4 != 0) g.bin_.push_back('\0');
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
    return s;
  };
  std::string roots_s;
  for (int r : roots) roots_s += (roots_s.empty() ? "" : ",") + std::to_string(r);
  std::string buffer = fmt::format("{{\"byteLength\":{}", g.bin_.size());
  if (!binary) buffer += ",\"uri\":\"data:application/octet-stream;base64," + base64(g.bin_) + "\"";
  buffer += "}";
  std::string json = "{\"asset\":{\"version\":\"2.0\",\"generator\":\"mbsc --animate\"},";
  // an empty array is invalid glTF: a model without shapes has a scene without nodes
  json += "\"scene\":0,\"scenes\":[{\"name\":\"" + json_escape(model.name) + "\"" +
          (roots_s.empty() ? "" : ",\"nodes\":[" + roots_s + "]") + "}]";
  if (!nodes.empty()) json += ",\"nodes\":[" + join(nodes) + "]";
  if (!g.meshes_.empty()) json += ",\"meshes\":[" + join(g.meshes_) + "]";
  if (!materials.empty()) json += ",\"materials\":[" + join(materials) + "]";
  if (!g.accessors_.empty()) json += ",\"accessors\":[" + join(g.accessors_) + "]";
  if (!g.views_.empty()) json += ",\"bufferViews\":[" + join(g.views_) + "]";
  if (!g.bin_.empty()) json += ",\"buffers\":[" + buffer + "]";
  if (!channels.empty())
    json += ",\"animations\":[{\"name\":\"run\",\"samplers\":[" + join(samplers) +
            "],\"channels\":[" + join(channels) + "]}]";
  json += "}";
  if (!binary) return json + "\n";
  // GLB: a 12-byte header, the JSON chunk padded with spaces, the BIN chunk padded with zeros
  while (json.size() % 4 != 0) json += ' ';
  std::string out;
  auto u32 = [&](uint32_t x) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((x >> (8 * i)) & 0xff));
  };
  const size_t total = 12 + 8 + json.size() + (g.bin_.empty() ? 0 : 8 + g.bin_.size());
  u32(0x46546C67);  // "glTF"
  u32(2);
  u32(static_cast<uint32_t>(total));
  u32(static_cast<uint32_t>(json.size()));
  u32(0x4E4F534A);  // "JSON"
  out += json;
  if (!g.bin_.empty()) {
    u32(static_cast<uint32_t>(g.bin_.size()));
    u32(0x004E4942);  // "BIN\0"
    out += g.bin_;
  }
  return out;
}

}  // namespace mbs::rt
