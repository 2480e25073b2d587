// Objectives of a study: a reduction over the output grid of a pointwise expression of the
// model's outputs, e.g. `max(abs(x))`, `integral(v^2)`, `fit(x, "data.csv")`.
//
// The pointwise expression is a native kernel (compiled by compiler/driver/Objectives from the
// objective's text with the model grammar) reading the vector [t, outputs...] of one output row:
// slot 0 is time, slot 1 + i the model's output i (in the order of CompiledModel::output_names).
// An ObjectiveAccumulator takes the rows of one run as they come and gives the value.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/model/CompiledModel.h"

namespace mbs::rt {

enum class Reduction : uint8_t {
  Final,     // the value at the last grid point
  Max,       // the largest value on the grid
  Min,       // the smallest value
  MaxAbs,    // the largest |value|
  Mean,      // the mean over the grid points
  Integral,  // trapezoidal rule on the grid
  Rms,       // sqrt(mean of the squares)
  L2,        // sqrt(sum of the squares over the grid points)
  Fit,       // sum over the data file's times of (value interpolated on the grid - data)^2
};
// The name of a reduction as written in an objective ("final", "maxabs", "fit", ...).
std::string_view reduction_name(Reduction r);

struct Objective {
  std::string text;  // as written, e.g. "max(abs(x))"; the column name in results
  Reduction reduction = Reduction::Final;
  Kernel pointwise;       // one output: the expression at [t, outputs...]
  int32_t n_outputs = 0;  // the model outputs the kernel expects after t (output_names.size())
  // Fit: the measured data (times increasing) the value is compared with
  std::vector<double> data_t, data_value;
  std::string data_file, data_column;
  std::shared_ptr<const void> code_owner;  // keeps the kernel's code alive
  // d expression / d output: the outputs the expression reads (indices into output_names) and
  // a kernel of the derivatives with respect to them, at [t, outputs...]
  std::vector<int32_t> gradient_columns;
  Kernel gradient;
};

// The derivatives of one objective over one run with respect to study directions (exact
// sensitivities): add() every output row with the outputs' derivatives, then value(k).
class ObjectiveDerivative {
 public:
  ObjectiveDerivative(const Objective& objective, int32_t directions);
  // d_outputs: directions x outputs (row-major), the derivatives of the outputs at t.
  void add(double t, std::span<const double> outputs, std::span<const double> d_outputs);
  // d value / d direction k (NaN where the value is not defined).
  double value(int32_t k) const;

 private:
  const Objective* objective_;
  int32_t n_dir_;
  std::vector<double> x_, grad_, de_, prev_de_, acc_, at_extreme_, fit_;
  int64_t count_ = 0;
  double prev_t_ = 0, prev_e_ = 0, extreme_ = 0, sum_sq_ = 0, sum_ = 0;
  size_t next_data_ = 0;
};

// The value of one objective over one run: add() every output row in time order, then value().
// A run that does not cover a Fit objective's data times gives NaN (the study records why).
// The objective must outlive the accumulator. add() does not allocate.
class ObjectiveAccumulator {
 public:
  explicit ObjectiveAccumulator(const Objective& objective);
  void reset();
  // One output row: t and the model's outputs (the order of output_names; throws
  // std::invalid_argument when there are not objective.n_outputs of them). Returns false when
  // the pointwise kernel reports a non-finite value; value() is then NaN.
  bool add(double t, std::span<const double> outputs);
  // NaN when no row was added, when a row's value was not finite, or when a Fit's data times
  // lie outside the run (data_outside() says which). Fit: a data time within 1e-9 (relative
  // to the times' magnitude) of the first or last grid point counts as that point.
  double value() const;
  // Fit: some data time lies before the first or after the last row added so far.
  bool data_outside() const;

 private:
  void add_fit(double t, double e);

  const Objective* objective_;
  std::vector<double> x_;  // [t, outputs...]
  int64_t count_ = 0;
  double last_t_ = 0, last_e_ = 0;
  double acc_ = 0;  // max, min, max |e|, sum, integral, sum of squares, fit sum
  size_t next_data_ = 0;
  bool data_outside_ = false;
  bool finite_ = true;
};

}  // namespace mbs::rt
