// The shapes a mechanism is drawn with (docs/animation.md): the static table the compiler builds
// from the multibody elements' visualisation parameters (compiler/mech/Shapes.cpp), as the
// Modelica Standard Library's Visualizers.Advanced.Shape describes one, and the frames whose
// poses the outputs record (CompiledModel::shape_frames).
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace mbs::rt {

// The MSL's shape types (its shapeType strings, in this order: the Integer shapeType of the
// elements of stdlib/Mechanics.mbs is 1 + this value).
enum class ShapeType : uint8_t { Box, Cylinder, Sphere, Cone, Pipe, Spring };
inline constexpr uint8_t kShapeTypeCount = 6;
const char* shape_type_name(ShapeType t);

// One shape, in the MSL's terms: its reference point r_shape from the origin of its frame, its
// length along lengthDirection, width along widthDirection (made orthogonal to it) and height
// along the third axis, resolved in the frame. A box's and a cylinder's reference point is the
// centre of one end face; a sphere's is a point of its surface (its centre is at length/2). A
// shape with frame_b >= 0 stretches: at every frame its length is the distance from r_shape to
// the origin of frame frame_b and its length direction points there (a spring, a prismatic
// joint's box). `extra`: a spring's number of windings, a pipe's inner diameter as a fraction of
// its width, a cone's top diameter as a fraction of its base's.
struct Shape {
  std::string element;  // the element that draws it (its instance path), e.g. "pendulum.body"
  std::string part;     // which of its shapes: "sphere", "cylinder", "rod", "axis x", ...
  ShapeType type = ShapeType::Box;
  int32_t frame = -1;    // index into CompiledModel::shape_frames; -1: the world frame
  bool stretch = false;  // it stretches to the origin of frame_b (-1: the world's)
  int32_t frame_b = -1;
  std::array<double, 3> r_shape{0, 0, 0};
  std::array<double, 3> length_direction{1, 0, 0};
  std::array<double, 3> width_direction{0, 1, 0};
  double length = 0, width = 0, height = 0, extra = 0;
  std::array<double, 3> color{0, 0, 0};  // red, green, blue in 0..255
  double specular = 0.7;                 // the MSL's specularCoefficient
};

// The pose of a frame as 12 output columns from CompiledModel::shape_frame_column[f]: the
// position r_0[1..3] of its origin in the world, then its orientation R[i, j] (column j: its
// j-th axis in the world) row by row.
inline constexpr int32_t kPoseColumns = 12;

}  // namespace mbs::rt
