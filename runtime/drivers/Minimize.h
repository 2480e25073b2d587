// Minimisation of one objective with NLopt (seed 002, Minimize): the derivative-free methods
// Nelder–Mead, BOBYQA and COBYLA, and the gradient-based L-BFGS and SLSQP, all with the
// variables' bounds.
//
// The gradient of a gradient-based method comes from a GradientFunction; by default central
// finite differences (Sensitivity.h) evaluate x and x ± h_i e_i as one parallel batch, and the
// perturbed runs are reported marked finite_difference.
//
// Failed runs (a NaN objective) never reach NLopt: the method sees `failed_value` there, by
// default a value worse than every value seen so far (the largest finite one f_max plus
// max(1, |f_max|)), so the method steps back as from any worse point and goes on. Only when
// the start point fails is there no scale for that value: the minimisation stops at once with a
// message. A gradient component that cannot be computed at a successful point (both perturbed
// runs of a variable failed) also stops the minimisation with a message naming the variable;
// at a failed point such components are 0.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/drivers/Batch.h"
#include "runtime/drivers/Sensitivity.h"

namespace mbs::rt {

enum class MinimizeMethod : uint8_t { NelderMead, Bobyqa, Cobyla, Lbfgs, Slsqp };
// "nelder-mead", "bobyqa", "cobyla", "lbfgs", "slsqp"
std::string_view minimize_method_name(MinimizeMethod m);
std::optional<MinimizeMethod> minimize_method_from_name(std::string_view name);
bool minimize_method_uses_gradient(MinimizeMethod m);

// Each field is one command-line option of the same name (with '-' for '_'). The defaults follow
// the seed's Minimize (method Nelder–Mead, tol 1e-4 taken as the relative tolerance on x, the
// start in the middle of the bounds) and SciPy's Nelder–Mead budget of 200 evaluations per
// variable.
struct MinimizeOptions {
  MinimizeMethod method = MinimizeMethod::NelderMead;
  std::vector<double> start;  // one value per variable; empty: the middle of each one's bounds
  double x_rel_tol = 1e-4;    // stop when a step changes every x_i by less than x_rel_tol |x_i|
  double x_abs_tol = 0;       // ... or by less than x_abs_tol (0: off)
  double f_rel_tol = 0;       // stop when a step changes f by less than f_rel_tol |f| (0: off)
  double f_abs_tol = 0;       // ... or by less than f_abs_tol (0: off)
  // The method's objective evaluations (a finite-difference gradient's runs not counted);
  // 0: 200 per variable.
  int max_evaluations = 0;
  int objective = 0;  // index of the objective to minimise
  // The value the method sees for a failed run; NaN: automatic (see above).
  double failed_value = std::numeric_limits<double>::quiet_NaN();
  SensitivityOptions gradient;  // steps of the finite-difference gradient
};

// The objective's value and gradient at x for a gradient-based method, e.g. from exact
// sensitivities. `outcome` is the run at x (its objectives); gradient[i] NaN where not available.
struct PointGradient {
  RunOutcome outcome;
  std::vector<double> gradient;
  bool interrupted = false;
};
using GradientFunction = std::function<PointGradient(const std::vector<double>& x)>;

struct MinimizeResult {
  std::vector<double> best_point;  // the best successful point the method evaluated (x itself,
                                   // not a finite-difference point); empty when none succeeded
  double best_value = std::numeric_limits<double>::quiet_NaN();
  size_t best_index = 0;   // its EvaluationRecord::index
  size_t runs = 0;         // every run, finite-difference ones included
  size_t failed = 0;       // runs whose objective was NaN
  int evaluations = 0;     // the method's objective evaluations
  bool converged = false;  // stopped by a tolerance
  bool interrupted = false;
  std::string status;  // why it stopped, in words
};

// Minimises objective `options.objective` over `variables` (bounds NaN: unbounded on that side)
// from options.start. `report` (optional) gets every run in index order. `gradient` (optional)
// replaces the finite differences of gradient-based methods; the runs it makes are its own, only
// the outcome at x is reported. Throws std::invalid_argument for invalid options (a start outside
// the bounds, no start and a bound missing, ...).
MinimizeResult minimize(const BatchEvaluator& evaluate, const std::vector<StudyVariable>& variables,
                        const MinimizeOptions& options, const EvaluationSink& report = nullptr,
                        const GradientFunction& gradient = nullptr);

}  // namespace mbs::rt
