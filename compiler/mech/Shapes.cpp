// Default shapes of the multibody elements, as the Modelica Standard Library draws them
// (Modelica.Mechanics.MultiBody: World, Parts.Body, Parts.FixedTranslation, Joints.Revolute,
// Joints.Prismatic, Forces.Spring, Visualizers.FixedShape; Types.Defaults for the colours).
// A visualisation parameter that keeps the default of its declaration in stdlib/Mechanics.mbs
// and whose MSL default reads the World (`sphereDiameter = world.defaultBodyDiameter`) takes the
// World's value here, as the MSL's inner/outer world would give it.
#include "compiler/mech/Shapes.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

namespace mbs::mech {
namespace {

using V = std::array<double, 3>;

double norm(const V& v) {
  return std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
}
V unit_or(const V& v, const V& fallback) {
  const double n = norm(v);
  return n > 1e-15 ? V{v[0] / n, v[1] / n, v[2] / n} : fallback;
}

// The World's defaults (MSL World, tab "Defaults"), nominalLength = 1 unless the model's World
// says otherwise.
struct WorldDefaults {
  bool enable = true, animate_world = true, animate_gravity = true;
  double joint_length = 0.1, joint_width = 0.05, force_width = 0.05, body_diameter = 1.0 / 9;
  double width_fraction = 20, specular = 0.7;
  double axis_length = 0.5, axis_diameter = 0.5 / 40;
  double gravity_length = 0.25, gravity_diameter = 0.25 / 20;
  V gravity{0, -1, 0};
  V gravity_color{0, 230, 0};
};

class Builder {
 public:
  Builder(const FlatModel& flat, const std::unordered_map<std::string, size_t>& var_index, int root)
      : flat_(flat), index_(var_index), root_(root) {}

  const FlatVar* var(const std::string& path, const std::string& member) const {
    auto it = index_.find(path + "." + member);
    return it == index_.end() ? nullptr : &flat_.vars[it->second];
  }
  // The value of a parameter of the element, or `fallback` when it has none.
  double num(const std::string& path, const std::string& member, double fallback) const {
    const FlatVar* v = var(path, member);
    return v != nullptr && v->role != VarRole::Variable ? v->value : fallback;
  }
  // ... or the World's default when the parameter keeps its declaration's default
  double world_num(const std::string& path, const std::string& member, double world) const {
    const FlatVar* v = var(path, member);
    if (v == nullptr || v->role == VarRole::Variable) return world;
    return v->value_origin == ValueOrigin::Declaration ? world : v->value;
  }
  bool declared_default(const std::string& path, const std::string& member) const {
    const FlatVar* v = var(path, member);
    return v == nullptr || v->value_origin == ValueOrigin::Declaration;
  }
  V vec(const std::string& path, const std::string& member, const V& fallback) const {
    V out = fallback;
    for (int i = 0; i < 3; ++i)
      out[static_cast<size_t>(i)] =
          num(path, fmt::format("{}[{}]", member, i + 1), fallback[static_cast<size_t>(i)]);
    return out;
  }
  bool flag(const std::string& path, const std::string& member) const {
    return num(path, member, 1.0) != 0.0;
  }

  void world_defaults(const std::vector<ShapeElement>& elements) {
    for (const auto& e : elements) {
      if (e.el->kind != "World") continue;
      const std::string& p = e.el->path;
      w_.enable = flag(p, "enableAnimation");
      w_.animate_world = flag(p, "animateWorld");
      w_.animate_gravity = flag(p, "animateGravity");
      w_.joint_length = num(p, "defaultJointLength", w_.joint_length);
      w_.joint_width = num(p, "defaultJointWidth", w_.joint_width);
      w_.force_width = num(p, "defaultForceWidth", w_.force_width);
      w_.body_diameter = num(p, "defaultBodyDiameter", w_.body_diameter);
      w_.width_fraction = num(p, "defaultWidthFraction", w_.width_fraction);
      w_.specular = num(p, "defaultSpecularCoefficient", w_.specular);
      w_.axis_length = num(p, "axisLength", w_.axis_length);
      w_.axis_diameter = num(p, "axisDiameter", w_.axis_diameter);
      w_.gravity_length = num(p, "gravityArrowLength", w_.gravity_length);
      w_.gravity_diameter = num(p, "gravityArrowDiameter", w_.gravity_diameter);
      w_.gravity = unit_or(vec(p, "g", {0, -9.80665, 0}), {0, -1, 0});
      w_.gravity_color = vec(p, "gravityArrowColor", w_.gravity_color);
      return;
    }
  }

  rt::Shape& add(const ShapeElement& e, const char* part, rt::ShapeType type, int node) {
    rt::Shape s;
    s.element = e.el->path;
    s.part = part;
    s.type = type;
    s.frame = node == root_ ? -1 : node;
    s.specular = w_.specular;
    out_.push_back(std::move(s));
    return out_.back();
  }
  // an arrow from `tail` along the unit vector `dir`: a cylinder and a cone (the MSL's arrow
  // head: FrameHeadLengthFraction 5 and FrameHeadWidthFraction 3 times the diameter)
  void arrow(const ShapeElement& e, const std::string& part, int node, const V& tail, const V& dir,
             double length, double diameter, const V& color, double head_length_fraction,
             double head_width_fraction) {
    const double head = std::min(length, diameter * head_length_fraction);
    const double line = length - head;
    const V width_dir = std::abs(dir[1]) > 0.9 ? V{1, 0, 0} : V{0, 1, 0};
    if (line > 0) {
      rt::Shape& s = add(e, "", rt::ShapeType::Cylinder, node);
      s.part = part + " line";
      s.r_shape = tail;
      s.length_direction = dir;
      s.width_direction = width_dir;
      s.length = line;
      s.width = s.height = diameter;
      s.color = color;
    }
    rt::Shape& h = add(e, "", rt::ShapeType::Cone, node);
    h.part = part + " head";
    h.r_shape = {tail[0] + dir[0] * line, tail[1] + dir[1] * line, tail[2] + dir[2] * line};
    h.length_direction = dir;
    h.width_direction = width_dir;
    h.length = head;
    h.width = h.height = diameter * head_width_fraction;
    h.color = color;
  }

  // The MSL's Visualizers.Advanced.Shape parameters of an element that declares them.
  void general(const ShapeElement& e, const char* part, int node, double default_width_fraction) {
    const std::string& p = e.el->path;
    const double type = num(p, "shapeType", 2);
    const int t = static_cast<int>(std::lround(type)) - 1;
    rt::Shape& s = add(e, part, rt::ShapeType::Cylinder, node);
    if (t >= 0 && t < rt::kShapeTypeCount) s.type = static_cast<rt::ShapeType>(t);
    s.r_shape = vec(p, "r_shape", {0, 0, 0});
    s.length_direction = unit_or(vec(p, "lengthDirection", {1, 0, 0}), {1, 0, 0});
    s.width_direction = vec(p, "widthDirection", {0, 1, 0});
    s.length = num(p, "length", 0.1);
    // width = length/world.defaultWidthFraction when the declaration's default is kept
    s.width = declared_default(p, "width") ? s.length / default_width_fraction
                                           : num(p, "width", s.length / 20);
    s.height = declared_default(p, "height") && declared_default(p, "width")
                   ? s.width
                   : num(p, "height", s.width);
    s.extra = num(p, "extra", 0);
    s.color = vec(p, "color", {0, 128, 255});
    s.specular = world_num(p, "specularCoefficient", w_.specular);
    if (!(s.length > 0)) out_.pop_back();
  }

  void element(const ShapeElement& e) {
    const std::string& k = e.el->kind;
    const std::string& p = e.el->path;
    if (!flag(p, "animation")) return;
    if (k == "World") {
      if (w_.animate_world) {
        const char* names[3] = {"axis x", "axis y", "axis z"};
        for (int i = 0; i < 3; ++i) {
          V d{0, 0, 0};
          d[static_cast<size_t>(i)] = 1;
          arrow(e, names[i], root_, {0, 0, 0}, d, w_.axis_length, w_.axis_diameter, {0, 0, 0}, 5,
                3);
        }
      }
      if (w_.animate_gravity)
        arrow(e, "gravity", root_, vec(p, "gravityArrowTail", {0, 0, 0}), w_.gravity,
              w_.gravity_length, w_.gravity_diameter, w_.gravity_color, 4, 3);
    } else if (k == "Body") {
      const double d = world_num(p, "sphereDiameter", w_.body_diameter);
      // cylinderDiameter = sphereDiameter/Types.Defaults.BodyCylinderDiameterFraction
      const double cd =
          declared_default(p, "cylinderDiameter") ? d / 3 : num(p, "cylinderDiameter", d / 3);
      const V r_cm = vec(p, "r_cm", {0, 0, 0});
      const double specular = world_num(p, "specularCoefficient", w_.specular);
      const double l = norm(r_cm);
      const double cyl = l > d / 2 ? l - (cd > 1.1 * d ? d / 2 : 0) : 0;
      if (cyl > 0) {
        rt::Shape& c = add(e, "cylinder", rt::ShapeType::Cylinder, e.nodes[0]);
        c.length_direction = unit_or(r_cm, {1, 0, 0});
        c.length = cyl;
        c.width = c.height = cd;
        c.color = vec(p, "cylinderColor", vec(p, "sphereColor", {0, 128, 255}));
        c.specular = specular;
      }
      if (d > 0) {
        rt::Shape& s = add(e, "sphere", rt::ShapeType::Sphere, e.nodes[0]);
        s.r_shape = {r_cm[0] - d / 2, r_cm[1], r_cm[2]};
        s.length = s.width = s.height = d;
        s.color = vec(p, "sphereColor", {0, 128, 255});
        s.specular = specular;
      }
    } else if (k == "FixedTranslation" || k == "FixedShape") {
      general(e, k == "FixedShape" ? "shape" : "rod", e.nodes[0], w_.width_fraction);
    } else if (k == "FixedRotation") {
      // the MSL draws it as FixedTranslation does (a rod of RodColor); no parameters here
      const V r = vec(p, "r", {0, 0, 0});
      if (norm(r) > 0) {
        rt::Shape& s = add(e, "rod", rt::ShapeType::Cylinder, e.nodes[0]);
        s.length_direction = unit_or(r, {1, 0, 0});
        s.length = norm(r);
        s.width = s.height = s.length / w_.width_fraction;
        s.color = {155, 155, 155};
      }
    } else if (k == "Revolute") {
      const V n = unit_or(vec(p, "n", {0, 0, 1}), {0, 0, 1});
      const double l = world_num(p, "cylinderLength", w_.joint_length);
      rt::Shape& s = add(e, "cylinder", rt::ShapeType::Cylinder, e.nodes[0]);
      s.r_shape = {-n[0] * l / 2, -n[1] * l / 2, -n[2] * l / 2};
      s.length_direction = n;
      s.length = l;
      s.width = s.height = world_num(p, "cylinderDiameter", w_.joint_width);
      s.color = vec(p, "cylinderColor", {255, 0, 0});
      s.specular = world_num(p, "specularCoefficient", w_.specular);
    } else if (k == "Prismatic" || k == "Cylindrical") {
      // a box (a cylinder) from frame_a to frame_b along the axis, of length s
      const bool box = k == "Prismatic";
      rt::Shape& s = add(e, box ? "box" : "cylinder",
                         box ? rt::ShapeType::Box : rt::ShapeType::Cylinder, e.nodes[0]);
      s.stretch = true;
      s.frame_b = e.nodes[1] == root_ ? -1 : e.nodes[1];
      s.length_direction = unit_or(vec(p, "n", {1, 0, 0}), {1, 0, 0});
      s.width_direction = vec(p, "boxWidthDirection", {0, 1, 0});
      s.width = world_num(p, "boxWidth", w_.joint_width);
      s.height = declared_default(p, "boxHeight") && declared_default(p, "boxWidth")
                     ? s.width
                     : num(p, "boxHeight", s.width);
      s.color = vec(p, "boxColor", {255, 0, 0});
      s.specular = world_num(p, "specularCoefficient", w_.specular);
      if (s.frame_b < 0 && s.frame < 0) out_.pop_back();
    } else if (k == "Spherical") {
      rt::Shape& s = add(e, "sphere", rt::ShapeType::Sphere, e.nodes[0]);
      s.r_shape = {-w_.joint_length / 2, 0, 0};
      s.length = s.width = s.height = w_.joint_length;
      s.color = {255, 0, 0};
    } else if (k == "Universal") {
      const V n = unit_or(vec(p, "n_a", {1, 0, 0}), {1, 0, 0});
      rt::Shape& s = add(e, "cylinder", rt::ShapeType::Cylinder, e.nodes[0]);
      const double l = w_.joint_length;
      s.r_shape = {-n[0] * l / 2, -n[1] * l / 2, -n[2] * l / 2};
      s.length_direction = n;
      s.length = l;
      s.width = s.height = w_.joint_width;
      s.color = {255, 0, 0};
    } else if (k == "LineForce" && var(p, "numberOfWindings") != nullptr) {
      // a spring (MSL Forces.Spring): from frame_a to frame_b
      if (e.nodes[0] == root_ && e.nodes[1] == root_) return;
      rt::Shape& s = add(e, "spring", rt::ShapeType::Spring, e.nodes[0]);
      s.stretch = true;
      s.frame_b = e.nodes[1] == root_ ? -1 : e.nodes[1];
      s.width = world_num(p, "width", w_.force_width);
      s.height = declared_default(p, "coilWidth") && declared_default(p, "width")
                     ? s.width / 10
                     : num(p, "coilWidth", s.width / 10);
      s.height *= 2;  // the MSL's spring: height = 2*coilWidth
      s.extra = num(p, "numberOfWindings", 5);
      s.color = vec(p, "color", {0, 0, 255});
      s.specular = world_num(p, "specularCoefficient", w_.specular);
    }
  }

  std::vector<rt::Shape> run(const std::vector<ShapeElement>& elements) {
    world_defaults(elements);
    if (!w_.enable) return {};
    for (const auto& e : elements) element(e);
    return std::move(out_);
  }

 private:
  const FlatModel& flat_;
  const std::unordered_map<std::string, size_t>& index_;
  int root_;
  WorldDefaults w_;
  std::vector<rt::Shape> out_;
};

}  // namespace

std::vector<rt::Shape> element_shapes(const FlatModel& flat,
                                      const std::unordered_map<std::string, size_t>& var_index,
                                      const std::vector<ShapeElement>& elements, int root) {
  Builder b(flat, var_index, root);
  return b.run(elements);
}

}  // namespace mbs::mech
