// The studies of a session (issue 11): parameter variation today, the optimisers and
// sensitivities on the same pieces. A study compiles its objectives with the model, builds an
// rt::Evaluator over the session's CompiledModel (compile-time values through
// Session::compiled_model_for), runs its points on a thread pool and writes one row per finished
// run to its results file (rt::StudyFile), resumable. The command line, the study file and the
// REPL are views of these functions.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "compiler/driver/Session.h"
#include "runtime/drivers/Study.h"
#include "runtime/drivers/StudyFile.h"
#include "runtime/io/Progress.h"

namespace mbs {

struct StudyOptions {
  std::vector<std::string> objectives;  // e.g. "max(abs(x))", "fit(x, \"data.csv\")"
  std::string output;                   // the results file (CSV)
  bool resume = false;                  // continue the study in `output`
  int threads = 0;                      // 0: all cores
  rt::StudyAnalysis analysis = rt::StudyAnalysis::Simulate;
};

struct VariationOptions {
  std::vector<std::string> axes;  // "NAME=1,2,5", "NAME=FROM:TO:COUNT[:log]"
  bool paired = false;            // paired lists instead of the full grid
};

struct StudyReport {
  bool ok = false;           // false: `error` says why the study could not run (usage)
  bool model_error = false;  // the objectives had errors (diagnostics were printed)
  std::string error;
  int64_t total = 0, run_now = 0, resumed = 0, failed = 0;
  bool interrupted = false;
  int64_t best = -1;  // run with the smallest first objective (-1: none)
  double best_value = 0;
  std::vector<double> best_values;  // its variables
  double wall_ms = 0;
};

// Runs the variation; diagnostics (objectives) go to `diag_out`. Never throws.
StudyReport run_variation(Session& session, const VariationOptions& variation,
                          const StudyOptions& options, std::ostream& diag_out,
                          rt::ProgressSink* progress = nullptr);

// The study variables for names: a parameter of the model, else a start value (an unknown).
std::vector<rt::StudyVariable> study_variables(const rt::CompiledModel& model,
                                               const std::vector<std::string>& names);

}  // namespace mbs
