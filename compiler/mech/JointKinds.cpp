// The table of joint kinds (JointKinds.h).
#include "compiler/mech/JointKinds.h"

#include <string>

namespace mbs::mech {

int JointKind::quaternion_offset() const {
  for (size_t i = 0; i < coordinates.size(); ++i)
    if (coordinates[i].motion == Motion::Quaternion) return static_cast<int>(i);
  return -1;
}

int JointKind::rotation_vector_offset() const {
  for (size_t i = 0; i < coordinates.size(); ++i)
    if (coordinates[i].motion == Motion::RotationVector) return static_cast<int>(i);
  return -1;
}

namespace {

struct Table {
  std::vector<JointKind> kinds;     // looked up by name
  std::vector<JointKind> variants;  // reached through JointKind::variant only
};

Table make_table() {
  using M = Motion;
  using A = Axis;
  const std::vector<JointCoordinate> quaternion = {
      {"Q[1]", "dQ[1]", nullptr, M::Quaternion, A::None},
      {"Q[2]", "dQ[2]", nullptr, M::Quaternion, A::None},
      {"Q[3]", "dQ[3]", nullptr, M::Quaternion, A::None},
      {"Q[4]", "dQ[4]", nullptr, M::Quaternion, A::None}};
  // made by the lowering: the chart's rotation vector and the angular velocity in frame_b
  const std::vector<JointCoordinate> rotation_vector = {
      {"theta[1]", "w[1]", nullptr, M::RotationVector, A::None},
      {"theta[2]", "w[2]", nullptr, M::RotationVector, A::None},
      {"theta[3]", "w[3]", nullptr, M::RotationVector, A::None}};
  std::vector<JointKind> t;
  std::vector<JointKind> variants;
  {
    JointKind k;
    k.kind = "FixedTranslation";
    k.fixed = FixedTransform::Translation;
    t.push_back(k);
  }
  {
    JointKind k;
    k.kind = "FixedRotation";
    k.fixed = FixedTransform::Rotation;
    t.push_back(k);
  }
  for (const char* name : {"Weld", "CutForceTorque"}) {
    JointKind k;
    k.kind = name;
    k.fixed = FixedTransform::Identity;
    k.measures_wrench = std::string_view(name) == "CutForceTorque";
    t.push_back(k);
  }
  {
    // a closure of a loop with no joint of its own: always cut, all six directions
    JointKind k;
    k.kind = "LoopClosure";
    k.always_cut = true;
    t.push_back(k);
  }
  {
    JointKind k;
    k.kind = "Revolute";
    k.coordinates = {{"phi", "w", "tau", M::Rotation, A::N, AngleFrom::PerpendicularBasis}};
    k.translations = Translations::XYZ;
    k.rotations = Rotations::AxisTilt;
    t.push_back(k);
  }
  {
    JointKind k;
    k.kind = "Prismatic";
    k.coordinates = {{"s", "v", "f", M::Translation, A::N}};
    k.translations = Translations::Perpendicular;
    k.rotations = Rotations::All;
    t.push_back(k);
  }
  {
    JointKind k;
    k.kind = "Cylindrical";
    k.coordinates = {{"s", "v", "f", M::Translation, A::N},
                     {"phi", "w", "tau", M::Rotation, A::N, AngleFrom::PerpendicularBasis}};
    k.translations = Translations::Perpendicular;
    k.rotations = Rotations::AxisTilt;
    t.push_back(k);
  }
  {
    JointKind k;
    k.kind = "Universal";
    k.coordinates = {{"phi_a", "w_a", "tau_a", M::Rotation, A::NA, AngleFrom::UniversalA},
                     {"phi_b", "w_b", "tau_b", M::Rotation, A::NB, AngleFrom::UniversalB}};
    k.translations = Translations::XYZ;
    k.rotations = Rotations::AxesAngle;
    k.perpendicular_a = "n_a";
    k.perpendicular_b = "n_b";
    k.perpendicular_message = "needs perpendicular axes n_a and n_b";
    k.cut_efforts = false;
    t.push_back(k);
  }
  {
    JointKind k;
    k.kind = "Planar";
    k.coordinates = {{"x", "vx", "f_x", M::Translation, A::NX},
                     {"y", "vy", "f_y", M::Translation, A::NxNX},
                     {"phi", "w", "tau", M::Rotation, A::N, AngleFrom::PlaneAxes}};
    k.translations = Translations::Normal;
    k.rotations = Rotations::AxisTilt;
    k.perpendicular_a = "n";
    k.perpendicular_b = "n_x";
    k.perpendicular_message = "needs n_x perpendicular to the plane normal n";
    k.tilt_first = A::NX;
    k.tilt_second = A::NxNX;
    t.push_back(k);
  }
  {
    JointKind k;
    k.kind = "Spherical";
    k.coordinates = quaternion;
    k.translations = Translations::XYZ;
    k.rotations = Rotations::None;
    k.given_torque = true;
    k.variant_parameter = "lie_group";
    t.push_back(k);
    k.kind = "Spherical (lie_group)";
    k.coordinates = rotation_vector;
    k.can_be_cut = false;
    k.variant_parameter = nullptr;
    variants.push_back(k);
  }
  {
    JointKind k;
    k.kind = "FreeMotion";
    k.coordinates = {{"r[1]", "v[1]", nullptr, M::Translation, A::X},
                     {"r[2]", "v[2]", nullptr, M::Translation, A::Y},
                     {"r[3]", "v[3]", nullptr, M::Translation, A::Z}};
    k.coordinates.insert(k.coordinates.end(), quaternion.begin(), quaternion.end());
    k.translations = Translations::None;
    k.rotations = Rotations::None;
    k.can_be_cut = false;
    k.given_force = true;
    k.given_torque = true;
    k.variant_parameter = "lie_group";
    t.push_back(k);
    k.kind = "FreeMotion (lie_group)";
    k.coordinates.resize(3);
    k.coordinates.insert(k.coordinates.end(), rotation_vector.begin(), rotation_vector.end());
    k.variant_parameter = nullptr;
    variants.push_back(k);
  }
  return {std::move(t), std::move(variants)};
}

Table& table() {
  static Table t = [] {
    Table m = make_table();
    for (JointKind& k : m.kinds) {
      if (k.variant_parameter == nullptr) continue;
      const std::string name = std::string(k.kind) + " (" + k.variant_parameter + ")";
      for (const JointKind& v : m.variants)
        if (name == v.kind) k.variant = &v;
    }
    return m;
  }();
  return t;
}

}  // namespace

const JointKind* joint_kind(std::string_view kind) {
  for (const JointKind& k : table().kinds)
    if (kind == k.kind) return &k;
  return nullptr;
}

}  // namespace mbs::mech
