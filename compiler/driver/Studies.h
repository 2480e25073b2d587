// The studies of a session (issue 11): parameter variation today, the optimisers and
// sensitivities on the same pieces. A study compiles its objectives with the model, builds an
// rt::Evaluator over the session's CompiledModel (compile-time values through
// Session::compiled_model_for), runs its points on a thread pool and writes one row per finished
// run to its results file (rt::StudyFile), resumable. The command line, the study file and the
// REPL are views of these functions.
#pragma once

#include <cmath>
#include <iosfwd>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "compiler/driver/Session.h"
#include "runtime/drivers/Genetic.h"
#include "runtime/drivers/Minimize.h"
#include "runtime/drivers/Sensitivity.h"
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
  std::string message;  // what the optimiser says (seed, method status)
  // run `run` at `point` has the value `value` of the minimised objective (NaN: none)
  void consider(int64_t run, double value, std::span<const double> point) {
    if (!std::isfinite(value) || (best >= 0 && !(value < best_value))) return;
    best = run;
    best_value = value;
    best_values.assign(point.begin(), point.end());
  }
};

// Runs the variation; diagnostics (objectives) go to `diag_out`. Never throws.
StudyReport run_variation(Session& session, const VariationOptions& variation,
                          const StudyOptions& options, std::ostream& diag_out,
                          rt::ProgressSink* progress = nullptr);

// A variable of an optimisation or sensitivity study: NAME=LOWER:UPPER (bounds) or
// NAME=LOWER:UPPER:START (also the minimiser's start), or NAME alone (sensitivities: no bounds).
struct RangeSpec {
  std::string name;
  double lower = std::numeric_limits<double>::quiet_NaN();
  double upper = std::numeric_limits<double>::quiet_NaN();
  double start = std::numeric_limits<double>::quiet_NaN();
};
// Throws std::invalid_argument with the reason.
RangeSpec parse_range(const std::string& text);

enum class OptimizerKind : uint8_t { Genetic, Minimize };

struct OptimizeOptions {
  OptimizerKind kind = OptimizerKind::Genetic;
  std::vector<std::string> ranges;  // parse_range texts, every bound finite
  rt::GeneticOptions genetic;
  rt::MinimizeOptions minimize;  // start: from the ranges (else the middle of the bounds)
  // lbfgs/slsqp: the gradient from exact sensitivities when the model was compiled with them
  // (CompileOptions::sensitivities), else central differences
  bool exact_gradient = true;
};

// Minimises the first objective; one row per evaluation (columns generation, or iteration and
// fd). A study of this kind cannot be resumed (its next points depend on all before).
StudyReport run_optimization(Session& session, const OptimizeOptions& optimize,
                             const StudyOptions& options, std::ostream& diag_out,
                             rt::ProgressSink* progress = nullptr);

struct SensitivityReport {
  StudyReport study;
  rt::SensitivityResult result;
  std::vector<std::string> variables;
  bool exact = false;  // from the sensitivities of the discrete solution (one run)
};

// d objective / d variable at the session's current values: `exact`, the sensitivities of the
// discrete solution in one run (a model compiled with CompileOptions::sensitivities), else
// central differences; one row per run (column fd: 0 the reference point, 1 a perturbed one).
SensitivityReport run_sensitivity(Session& session, const std::vector<std::string>& names,
                                  const rt::SensitivityOptions& sensitivity, bool exact,
                                  const StudyOptions& options, std::ostream& diag_out,
                                  rt::ProgressSink* progress = nullptr);

// The study variables for names: a parameter of the model, else a start value (an unknown).
std::vector<rt::StudyVariable> study_variables(const rt::CompiledModel& model,
                                               const std::vector<std::string>& names);

}  // namespace mbs
