// The table of joint kinds (JointKinds.h).
#include "compiler/mech/JointKinds.h"

namespace mbs::mech {

int JointKind::quaternion_offset() const {
  for (size_t i = 0; i < coordinates.size(); ++i)
    if (coordinates[i].motion == Motion::Quaternion) return static_cast<int>(i);
  return -1;
}

namespace {

std::vector<JointKind> make_table() {
  using M = Motion;
  using A = Axis;
  const std::vector<JointCoordinate> quaternion = {
      {"Q[1]", "dQ[1]", nullptr, M::Quaternion, A::None},
      {"Q[2]", "dQ[2]", nullptr, M::Quaternion, A::None},
      {"Q[3]", "dQ[3]", nullptr, M::Quaternion, A::None},
      {"Q[4]", "dQ[4]", nullptr, M::Quaternion, A::None}};
  std::vector<JointKind> t;
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
    t.push_back(k);
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
    t.push_back(k);
  }
  return t;
}

}  // namespace

const JointKind* joint_kind(std::string_view kind) {
  static const std::vector<JointKind> table = make_table();
  for (const JointKind& k : table)
    if (kind == k.kind) return &k;
  return nullptr;
}

}  // namespace mbs::mech
