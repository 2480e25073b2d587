// The whole "simulate a model to a CSV file" use in one call, as the CLI runs it: create the
// integrator, install the Ctrl-C handler, run to t_end writing every output point, close the
// file. Ctrl-C ends the run early with a complete file (status Interrupted).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "runtime/model/CompiledModel.h"
#include "runtime/solvers/Failure.h"
#include "runtime/solvers/Integrator.h"
#include "runtime/solvers/Options.h"
#include "runtime/solvers/Statistics.h"

namespace mbs::rt {

struct SimulationResult {
  SolveStatus status = SolveStatus::Failed;
  Statistics statistics;
  std::optional<FailureRecord> failure;  // when status == Failed; failure->message to print
  int64_t rows = 0;                      // rows written (without the header)
};

// Throws SolverSetupError (model or options) or std::runtime_error (the file); solver failures
// are reported in the result, with the file holding every point up to the last good one.
SimulationResult simulate_to_csv(std::shared_ptr<const CompiledModel> model,
                                 const SolverOptions& options, const std::string& csv_path);

}  // namespace mbs::rt
