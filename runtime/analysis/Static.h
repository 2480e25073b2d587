// Static equilibrium (Exudyn's SolveStatic): qd = qdd = yd = 0 and F(q, y, z) = 0 for the
// unknowns x = [q | y | z], by Newton's method with load stepping.
//
// An equation-based model does not separate loads from the rest of the equations, so the load is
// ramped by the residual homotopy
//
//   H(x, s) = F(x) - (1 - s) F(x0),   s = 1/n, 2/n, ..., 1   (n = options.load_steps)
//
// with x0 the start state (the model's start values, qd = qdd = yd = 0): H(x0, 0) = 0, and
// H(x, 1) = F(x). For a model F(x) = f_int(x) - f_ext with f_int(x0) = 0 this is exactly scaling
// the external load by s. Each load step is solved by Newton from the previous solution, with the
// Jacobian dH/dx = [dF/dq | dF/dy | dF/dz] (kernels jac_q, jac_y, jac_z) and the linear solver
// of the integrators (dense LU up to LinearSolver::kDenseMaxSize unknowns, KLU beyond). Newton
// has converged when every update |dx_i| <= atol + rtol |x_i|; it fails after newton_max_iter
// iterations, on a non-finite residual, Jacobian or update, or on a singular Jacobian. A failed
// load step is retried with half the load increment, down to (1/n) / 2^kMaxLoadHalvings; after
// two successful reduced steps the increment doubles again, back up to 1/n. A failure at the
// start point of a step (singular Jacobian or non-finite residual before any update, a fatal
// kernel status) does not depend on the increment and ends the solve at once.
//
// statistics: steps = accepted load steps (including reduced ones), rejected_steps = failed
// attempts, h_smallest/h_largest = the smallest/largest accepted load increment, the Newton and
// kernel counters as for the integrators. The observer gets (s, outputs) after each converged
// load step of the grid s = k/n (not the reduced substeps in between); returning non-zero stops
// the solve (status Stopped).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/io/Progress.h"
#include "runtime/model/CompiledModel.h"
#include "runtime/solvers/Failure.h"
#include "runtime/solvers/Integrator.h"
#include "runtime/solvers/Options.h"
#include "runtime/solvers/Statistics.h"

namespace mbs::rt {

// Largest number of halvings of the load increment 1/n in a failed load step.
inline constexpr int32_t kMaxLoadHalvings = 10;

struct StaticResult {
  SolveStatus status = SolveStatus::Failed;  // Finished, Failed, Stopped or Interrupted
  Statistics statistics;
  std::optional<FailureRecord>
      failure;            // set when status is Failed (t = load factor, h = increment)
  std::vector<double> v;  // the symbol vector at the last converged load step (at s = 1: the
                          // equilibrium), with qd = qdd = yd = 0
  std::vector<std::string> warnings;  // found while solving (--nonfinite warn)
};

// Throws SolverSetupError if the model is null or inconsistent or the options are invalid.
// Guards as for the integrators: a Newton iterate beyond options.divergence_limit fails the
// attempt (Diverged); outputs that are not finite end the solve (NonFiniteOutput, the row is not
// written) or, with --nonfinite warn, give one warning (to `progress` if given, and in
// StaticResult::warnings). `progress` (optional) gets the load factor every few seconds.
StaticResult solve_static(
    std::shared_ptr<const CompiledModel> model, const SolverOptions& options,
    const std::function<int(double load, std::span<const double> outputs)>& observer,
    ProgressSink* progress = nullptr, std::span<const double> start = {});

}  // namespace mbs::rt
