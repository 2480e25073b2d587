// Parameter variation (seed 002, ParameterVariation): the points of a study from one list of
// values per variable, as a full factorial grid (the first variable outermost) or as paired
// lists (run i takes the i-th value of every list).
//
// A variable's values are written as
//   NAME=1,2,5          a list
//   NAME=0.1:1:10       10 values from 0.1 to 1, equally spaced (a linear range)
//   NAME=1e-3:1:4:log   4 values from 1e-3 to 1, equally spaced in log (a logarithmic range)
#pragma once

#include <string>
#include <vector>

#include "runtime/drivers/Study.h"

namespace mbs::rt {

struct VariationAxis {
  std::string name;
  std::vector<double> values;
};

// Parses "NAME=SPEC" as above. Throws std::invalid_argument with a message naming the problem.
VariationAxis parse_variation_axis(const std::string& text);

// Every point: the full grid (size: the product of the lengths; the first axis outermost, the
// last changing fastest), or with `paired` the i-th values together (all axes of one length).
// Throws std::invalid_argument for paired lists of different lengths or an empty axis.
std::vector<std::vector<double>> variation_points(const std::vector<VariationAxis>& axes,
                                                  bool paired);

}  // namespace mbs::rt
