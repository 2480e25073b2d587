// The joint kinds of the multibody library, each described once (as Pinocchio gives each joint
// model one type): its coordinates and how each moves the child frame (the step transforms of a
// tree path), the axes they move along, what the joint constrains -- the same directions give a
// cut joint's closure rows and a tree joint's reaction basis in the body-wise balance -- how a cut
// joint's coordinates follow from the relative transform, and which loads it carries. The
// lowering (Lower.cpp) reads this table instead of comparing kind names; a new joint kind or a new
// parametrisation of rotations is a new row.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace mbs::mech {

// How one coordinate moves the joint's child frame relative to its parent frame.
enum class Motion : uint8_t {
  Rotation,     // about its axis by the coordinate (an angle)
  Translation,  // along its axis by the coordinate
  Quaternion,   // one of four parts of a unit quaternion (the four make one step)
  // One of three parts of a rotation vector theta in a local chart about a reference rotation
  // (the three make one step, R = R(Q_ref) exp([theta]x)); the coordinate's velocity is the
  // angular velocity w of the child frame resolved in the child frame, not der(theta), and
  // der(theta) = dexp^-1(theta) w. The solvers move the chart to the current rotation after every
  // step (Lie-group integration: docs/mechanics.md, "Rotations as a Lie group").
  RotationVector,
};

// A direction of the joint, resolved in frame_a: a unit-vector parameter of the joint (n, n_a,
// n_b, n_x), n x n_x, or an axis of frame_a.
enum class Axis : uint8_t { None, N, NA, NB, NX, NxNX, X, Y, Z };

// How a cut joint's rotation coordinate follows from the relative rotation R of frame_b in
// frame_a: the angle by which R turns a first axis toward a second one (both perpendicular to the
// coordinate's axis).
enum class AngleFrom : uint8_t {
  None,
  PerpendicularBasis,  // the basis (e1, e2) perpendicular to n (Vec.h perpendicular_basis)
  PlaneAxes,           // (n_x, n x n_x)
  UniversalA,          // phi_a: R turns n_b toward n_a x n_b
  UniversalB,          // phi_b: R^T turns n_a toward n_a x n_b
};

struct JointCoordinate {
  const char* coord;     // member name: "phi", "s", "Q[1]"
  const char* velocity;  // its velocity variable: "w", "v", "dQ[1]"
  const char* effort;    // the generalized force along it ("tau", "f"); nullptr: none
  Motion motion;
  Axis axis;                          // Rotation, Translation: the axis (Axis::None for Quaternion)
  AngleFrom angle = AngleFrom::None;  // Rotation of a cut joint
};

// What a joint constrains, in frame_a: the translations and the rotations its reaction wrench
// acts along. A cut joint has one closure row per direction (its multiplier is the reaction
// component); a tree joint in the body-wise balance has one reaction unknown per direction.
enum class Translations : uint8_t {
  XYZ,            // all three (force along x, y, z)
  Perpendicular,  // the two perpendicular to n (e1, e2)
  Normal,         // along n only (the plane normal)
  None,
};
enum class Rotations : uint8_t {
  All,        // all three (torque about x, y, z)
  AxisTilt,   // the two tilts of n (torque about e1, e2; planar: n_x, n x n_x)
  AxesAngle,  // the angle between n_a and n_b (torque about n_a x n_b)
  None,
};

// A rigid connection (no coordinates): its fixed transform from frame_a to frame_b.
enum class FixedTransform : uint8_t {
  None,         // a joint with coordinates
  Translation,  // r
  Rotation,     // R(n, angle), then r
  Identity,     // frame_b = frame_a (Weld, CutForceTorque)
};

struct JointKind {
  const char* kind = nullptr;
  FixedTransform fixed = FixedTransform::None;
  std::vector<JointCoordinate> coordinates;  // in the order of the steps from frame_a to frame_b
  Translations translations = Translations::XYZ;
  Rotations rotations = Rotations::All;
  // The two axis members that must be perpendicular, and the message when they are not.
  const char* perpendicular_a = nullptr;
  const char* perpendicular_b = nullptr;
  const char* perpendicular_message = nullptr;
  Axis tilt_first = Axis::None;   // Rotations::AxisTilt in the body-wise balance: the torque
  Axis tilt_second = Axis::None;  // axes (None: e1, e2 perpendicular to n)
  bool can_be_cut = true;
  // A cut joint takes its efforts, springs and dampers as a wrench pair; false: refused.
  bool cut_efforts = true;
  // Given loads of the joint itself (members f[1..3], t[1..3], zero unless an equation gives
  // them), applied between frame_a and frame_b.
  bool given_force = false, given_torque = false;
  // A sensor of the wrench it transmits (CutForceTorque: outputs f[1..3], t[1..3], resolved as
  // its parameter `resolve` says).
  bool measures_wrench = false;
  // Always cut (LoopClosure: a closure of a loop without coordinates of its own).
  bool always_cut = false;

  // A Boolean parameter of the joint that selects another row of the table for it (its
  // `variant`): Spherical and FreeMotion's `lie_group` selects the rotation vector with
  // Lie-group updates instead of the unit quaternion. nullptr: no variant.
  const char* variant_parameter = nullptr;
  const JointKind* variant = nullptr;

  bool rigid() const { return fixed != FixedTransform::None; }
  // Index of the first quaternion coordinate, or -1.
  int quaternion_offset() const;
  // Index of the first rotation-vector coordinate, or -1.
  int rotation_vector_offset() const;
};

// The kind of that name, or nullptr when it is not a joint (or rigid connection) of the library.
// The row of a kind's variant is reached through JointKind::variant.
const JointKind* joint_kind(std::string_view kind);

}  // namespace mbs::mech
