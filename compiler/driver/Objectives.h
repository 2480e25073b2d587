// The objectives of a study, compiled from their texts against one compiled model
// (docs/studies.md, "Objectives"):
//
//   max(abs(x))            integral(v^2)            final(b.frame_a.r[1])
//   fit(x, "measured.csv")                          fit(2*p[1], "measured.csv", "p1")
//
// A text is one expression of the model grammar (parse_expression): a call of a reduction
// (rt::Reduction: final, max, min, maxabs, mean, integral, rms, l2, fit) whose argument is a
// pointwise expression of `time`, numbers and the model's output columns (dotted and subscripted
// names as in the result file; `der(x)` when the model writes such a column) with + - * / ^,
// comparisons, if-expressions and the language's scalar functions (abs, sqrt, sin, ..., atan2,
// min and max of two arguments). The expression is lowered to the symbolic DAG over the symbols
// [time, outputs...] (slot 0 = time, slot 1 + i = output_names[i]) and JIT-compiled into one
// module for all objectives, which every rt::Objective keeps alive through code_owner.
//
// fit(e, "file.csv" [, "column"]) reads the data file now: the first column is time (strictly
// increasing), the column is chosen by name (by default the expression's text when it is a plain
// variable name).
//
// Problems are diagnostics in the usual rendering, located in the objective's text, which is
// a source file named `<objective N>` (N counts from 1), or in the data file:
//   <objective 1>:1:5: error: 'xx' is not an output of the model
//     max(xx)
//         ^~
//   help: did you mean 'x'?
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "runtime/drivers/Objective.h"
#include "runtime/model/CompiledModel.h"

namespace mbs {

struct ObjectivesResult {
  std::vector<rt::Objective> objectives;      // one per text, in order; empty when !ok
  bool ok = false;                            // false: errors were reported
  std::vector<std::string> diagnostic_kinds;  // names of the diagnostic kinds reported
};

// Compiles `texts` against the output columns of `model`. Data files named by a relative path
// are read from `data_dir` (the current directory when empty). Every text is checked, and all
// diagnostics are rendered to `diag_out`. The objectives do not refer to `model` afterwards.
ObjectivesResult compile_objectives(const rt::CompiledModel& model,
                                    const std::vector<std::string>& texts,
                                    const std::string& data_dir, std::ostream& diag_out);

}  // namespace mbs
