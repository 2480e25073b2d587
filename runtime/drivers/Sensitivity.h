// Sensitivities d objective / d variable by central finite differences (seed 002,
// ComputeSensitivities): the reference point and the 2n perturbed points x ± h_i e_i are
// evaluated as one parallel batch.
//
// Step: h_i = relative_step * max(|x_i|, typical_i), relative_step = eps^(1/3) ~ 6.1e-6 by
// default. The error of a central difference is h^2 |f'''| / 6 from truncation plus about
// eps |f| / h from rounding; eps^(1/3) times the scale on which the objective changes balances
// the two (the error is then of order eps^(2/3) ~ 4e-11 relative). The scale is |x_i|, or
// typical_i (default 1) where x_i is smaller, so that x_i = 0 gets a step too. The step is
// rounded so that x_i ± h_i are exact numbers and the difference divides by their true distance.
//
// Near a bound (respect_bounds) the step on that side is cut at the bound, and the derivative is
// that of the parabola through the reference value and the two perturbed values: second order
// for unequal steps too. At the bound itself both perturbed points lie on the inner side
// (x - h, x - 2h: the one-sided second-order formula). Where one perturbed run fails, the
// one-sided difference of the other with the reference value is used (first order) and a
// warning says so; where both fail the derivative is NaN. The reference point is evaluated
// whenever a stencil is not symmetric, even without evaluate_reference.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "runtime/drivers/Batch.h"

namespace mbs::rt {

// Each field is one command-line option of the same name (with '-' for '_').
struct SensitivityOptions {
  double relative_step = 6.0554544523933395e-06;  // cbrt(DBL_EPSILON)
  std::vector<double> typical;  // per variable, the scale where |x_i| is smaller; empty: all 1
  std::vector<double> steps;    // per variable, h_i given explicitly; empty: the formula above
  bool respect_bounds = true;   // keep x_i ± h_i inside the variables' bounds
  // Evaluate the reference point in the same batch (the objectives there; the fallback to
  // one-sided differences and second order at a bound need it).
  bool evaluate_reference = true;
};

struct SensitivityResult {
  std::vector<double> reference;  // x
  std::vector<double> steps;      // h_i before any cut at a bound
  // The evaluated points, in batch order: [reference,] x + h_0 e_0, x - h_0 e_0, x + h_1 e_1, ...
  // (at a bound the two perturbed points of a variable lie on the same side)
  std::vector<std::vector<double>> points;
  std::vector<RunOutcome> outcomes;          // one per point
  std::vector<double> reference_objectives;  // empty without evaluate_reference
  // derivative[k][i] = d objective k / d variable i; NaN where not computable
  std::vector<std::vector<double>> derivative;
  std::vector<std::string> warnings;  // one-sided differences, failed runs
  bool interrupted = false;
};

// Sensitivities of every objective with respect to every variable at x (one value per variable).
// `report` (optional) gets every run, the perturbed ones marked finite_difference. The number of
// objectives is that of the first successful run. Throws std::invalid_argument for sizes that do
// not match or non-positive steps.
SensitivityResult compute_sensitivities(const BatchEvaluator& evaluate,
                                        const std::vector<StudyVariable>& variables,
                                        const std::vector<double>& x,
                                        const SensitivityOptions& options = {},
                                        const EvaluationSink& report = nullptr);

}  // namespace mbs::rt
