// The shapes of a mechanism's elements for its animation (docs/animation.md, "What is drawn"):
// each body, fixed translation, joint, spring and the world drawn as the Modelica Standard
// Library draws them, with the MSL's visualisation parameters (stdlib/Mechanics.mbs) and
// defaults, and the extra geometry of FixedShape elements. Part of the multibody lowering
// (Lower.cpp calls it with MechOptions::animation): the shapes' sizes are the parameters' values
// at compile time; their frames' poses become outputs.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/flatten/FlatModel.h"
#include "runtime/model/Shapes.h"

namespace mbs::mech {

// An element as the lowering sees it: its node (frame of the graph) per frame of the element,
// in the order of its kind's frames (frame_a, frame_b; the World's frame).
struct ShapeElement {
  const MechElement* el = nullptr;
  std::vector<int> nodes;
};

// The shapes of every element; Shape::frame and frame_b are node indices (-1 for the world node
// `root`, whose pose is the identity).
std::vector<rt::Shape> element_shapes(const FlatModel& flat,
                                      const std::unordered_map<std::string, size_t>& var_index,
                                      const std::vector<ShapeElement>& elements, int root);

}  // namespace mbs::mech
