// What the optimisers (Genetic, Minimize) and finite-difference sensitivities (Sensitivity) share:
// a batch evaluator that runs many points of a study at once, and the record of one evaluation
// they report. The optimisers only see a BatchEvaluator, so they are tested on analytic functions
// without a model; parallel_batch() is the one adapter over Evaluator and run_parallel().
//
// Every optimiser generates a whole batch of points before it evaluates it and reads the outcomes
// in the order of the points, never in completion order: a study with a fixed seed evaluates the
// same points and finds the same result with any number of threads.
#pragma once

#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "runtime/drivers/Study.h"

namespace mbs::rt {

// Evaluates every point (one value per study variable) and returns one outcome per point, in the
// order of `points`. An entry is empty when its point was not evaluated because the study was
// interrupted (Ctrl-C); the optimisers then stop and return what they have.
using BatchEvaluator = std::function<std::vector<std::optional<RunOutcome>>(
    const std::vector<std::vector<double>>& points)>;

// Evaluator::evaluate() on `threads` threads (0: all cores) through run_parallel(). The
// evaluator must outlive the returned function.
BatchEvaluator parallel_batch(const Evaluator& evaluator, int threads);

// One evaluation an optimiser or a sensitivity study made, reported as soon as its batch is done,
// in the order of `index`. `point` and `outcome` are valid during the call only.
struct EvaluationRecord {
  size_t index = 0;  // running number of the run in the study, from 0
  // Genetic: the generation (0: the initial population). Minimize: the number of the method's
  // objective call the run belongs to (from 0). Sensitivity: 0.
  int round = 0;
  bool finite_difference = false;  // a perturbed point of a finite-difference derivative
  std::span<const double> point;   // one value per study variable
  const RunOutcome* outcome = nullptr;
};
using EvaluationSink = std::function<void(const EvaluationRecord&)>;

// Objective `objective` of an outcome: NaN when the run failed, the index is out of range or the
// value is not finite. The optimisers treat NaN as a failed evaluation.
inline double objective_value(const RunOutcome& outcome, int objective) {
  if (outcome.status != RunOutcome::Status::Ok || objective < 0 ||
      static_cast<size_t>(objective) >= outcome.objectives.size())
    return std::numeric_limits<double>::quiet_NaN();
  double v = outcome.objectives[static_cast<size_t>(objective)];
  return std::isfinite(v) ? v : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace mbs::rt
