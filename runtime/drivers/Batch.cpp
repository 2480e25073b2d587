#include "runtime/drivers/Batch.h"

namespace mbs::rt {

BatchEvaluator parallel_batch(const Evaluator& evaluator, int threads) {
  return [&evaluator, threads](const std::vector<std::vector<double>>& points) {
    std::vector<std::optional<RunOutcome>> outcomes(points.size());
    // run_parallel calls `done` from one thread at a time, each index once
    run_parallel(evaluator, points, threads,
                 [&](size_t i, const RunOutcome& outcome) { outcomes[i] = outcome; });
    return outcomes;
  };
}

}  // namespace mbs::rt
