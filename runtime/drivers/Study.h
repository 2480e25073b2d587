// What every study (parameter variation, genetic optimisation, minimisation, sensitivities) is
// made of: an Evaluator that runs the model for one point of the study's parameter space and
// reduces the run to objective values, and run_parallel() that evaluates many points on a thread
// pool (one CompiledModel shared by every thread, a workspace per run, nothing recompiled per run
// unless a varied value is one the compiler uses as a number).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "runtime/drivers/Objective.h"
#include "runtime/model/CompiledModel.h"
#include "runtime/solvers/Options.h"
#include "runtime/solvers/Statistics.h"

namespace mbs::rt {

// One dimension of a study: a parameter, or (start = true) a start value of an unknown.
struct StudyVariable {
  std::string name;
  bool start = false;
  // bounds (optimisers, and the range of a variation); NaN when not given
  double lower = std::numeric_limits<double>::quiet_NaN();
  double upper = std::numeric_limits<double>::quiet_NaN();
};

// Which analysis one run is.
enum class StudyAnalysis : uint8_t { Simulate, Static };

// The outcome of one evaluation.
struct RunOutcome {
  // Interrupted: Ctrl-C stopped the run before its end (not a result: a resumed study runs it
  // again)
  enum class Status : uint8_t { Ok, Failed, Interrupted };
  Status status = Status::Failed;
  std::string message;             // why it failed: the solver's message, a bound, a compile
  std::vector<double> objectives;  // one per objective (NaN where not computed)
  Statistics statistics;
  double ms = 0;  // wall time of the run
};
std::string_view run_status_name(RunOutcome::Status s);

// A model for values the compiler uses as numbers (compile-time parameters and start values,
// see Instance): given those values, the compiled model (null with `error` set when the compile
// failed). Provided by the compiling front end (mbs::Session::compiled_model_for).
using ModelProvider = std::function<std::shared_ptr<const CompiledModel>(
    const std::map<std::string, double>& parameters, const std::map<std::string, double>& starts,
    std::string& error)>;

class Evaluator {
 public:
  // `model`: the compiled model; `objectives` compiled against its outputs; `provider`
  // (optional) compiles variants for compile-time values. Throws std::invalid_argument for a
  // variable the model does not have (with a suggestion) or a compile-time variable without a
  // provider.
  Evaluator(std::shared_ptr<const CompiledModel> model, std::vector<StudyVariable> variables,
            std::vector<Objective> objectives, SolverOptions options,
            StudyAnalysis analysis = StudyAnalysis::Simulate, ModelProvider provider = nullptr);

  const std::vector<StudyVariable>& variables() const { return variables_; }
  const std::vector<Objective>& objectives() const { return objectives_; }
  const SolverOptions& options() const { return options_; }
  const CompiledModel& model() const { return *model_; }
  // Runs the model with variables()[i] = values[i]. Thread-safe; never throws (a failure of any
  // kind is a RunOutcome with Status::Failed and a message).
  RunOutcome evaluate(std::span<const double> values) const;
  // The same run with exact sensitivities: gradient[k][i] = d objective k / d variable i of the
  // discrete solution (forward sensitivities, docs/studies.md "Exact sensitivities"). Needs a
  // model compiled with sensitivities, variables that change at run time and an
  // integrator (not the static solver); otherwise a failed outcome that says why.
  RunOutcome evaluate_with_gradient(std::span<const double> values,
                                    std::vector<std::vector<double>>& gradient) const;

 private:
  RunOutcome run(std::span<const double> values, std::vector<std::vector<double>>* gradient) const;
  std::shared_ptr<const CompiledModel> model_;
  std::vector<StudyVariable> variables_;
  std::vector<Objective> objectives_;
  SolverOptions options_;
  StudyAnalysis analysis_;
  ModelProvider provider_;
  std::vector<bool> compile_time_;  // per variable
};

// Evaluates `points` (each with one value per variable) on `threads` threads (0: all cores).
// `done(index, outcome)` is called once per point as it finishes, from one thread at a time (in
// completion order, not index order). `skip(index)` (optional) true: the point is not evaluated
// (a resumed study's finished runs). Returns when all are done, or early after an interrupt
// (interrupt_requested(): running evaluations finish, no new one starts; returns false).
// In rank 0 of an MPI job of several ranks (mpi_active(), Mpi.h) the other ranks evaluate the
// points instead of threads, with the same contract (`threads` is not used).
bool run_parallel(const Evaluator& evaluator, const std::vector<std::vector<double>>& points,
                  int threads, const std::function<void(size_t, const RunOutcome&)>& done,
                  const std::function<bool(size_t)>& skip = nullptr);

// The number of threads for `requested` (0: std::thread::hardware_concurrency(), at least 1).
int study_threads(int requested);

}  // namespace mbs::rt
