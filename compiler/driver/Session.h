// The session: one model, compiled once and run many times. What every front end does (the
// mbsc command line, studies, the REPL) lives here once:
//
//   mbs::Session s(compile_options, std::cerr);
//   if (!s.compile(std::cout)) ...;                 // diagnostics went to the stream
//   s.set_parameter("k", 200);                      // at run time when the compiled code allows,
//   s.set_start("x", 0.1);                          //   else by a new compile (object cache)
//   s.options().solver = rt::SolverKind::Newmark;   // the one option table
//   auto run = s.simulate(observer, &progress);     // status, statistics, failure, final state
//
// The CompiledModel stays immutable and shared: values set at run time live in an rt::Instance
// (one per run), and compiled_model_for() gives a model for values that need a compile (a
// study varying an array size compiles once per distinct value).
#pragma once

#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "compiler/driver/Compile.h"
#include "runtime/analysis/Static.h"
#include "runtime/io/Progress.h"
#include "runtime/session/Instance.h"
#include "runtime/solvers/Integrator.h"
#include "runtime/solvers/Options.h"

namespace mbs {

// The outcome of one run of an integrator.
struct SimulationRun {
  rt::SolveStatus status = rt::SolveStatus::Failed;
  std::string setup_error;  // non-empty: the run could not start (solver/options/model mismatch)
  std::string solver;       // the method's name
  rt::Statistics statistics;
  std::optional<rt::FailureRecord> failure;  // status Failed
  std::vector<std::string> warnings;         // about the method, and found while running
  double t = 0.0;                            // where it stopped
  std::vector<double> state;                 // the symbol vector there
  double run_ms = 0.0;
};

class Session {
 public:
  Session(CompileOptions options, std::ostream& diag_out);

  // Compiles with the options and the compile-time values set so far; false when errors were
  // reported (usage_error(): they concern names given by the caller, not the model).
  bool compile(std::ostream& emit_out);
  bool compiled() const { return model_ != nullptr; }
  bool usage_error() const { return result_.usage_error; }
  const CompileResult& compile_result() const { return result_; }
  const CompileOptions& compile_options() const { return options_; }
  const std::shared_ptr<const rt::CompiledModel>& model() const { return model_; }

  // Sets a parameter or a start value. At run time (no compile) when the compiled code allows
  // it; a value the compiler uses as a number makes needs_compile() true and is applied by the
  // next compile(). Throws rt::SetError for names the model does not have and values that are
  // not finite. Needs a compiled model. set_parameter also takes a top-level input (the value
  // it holds over the run: rt::Instance::set_input), which never needs a compile.
  void set_parameter(const std::string& name, double value);
  void set_start(const std::string& name, double value);
  bool needs_compile() const { return needs_compile_; }
  // "" when the model has a parameter, input or start value of this name; else the message
  // that says it has not, with the nearest name ("model 'M' has no parameter or variable 'x';
  // did you mean 'x1'?"), as the REPL's `set` and the Python module's set() and start() report it.
  std::string no_such_value(const std::string& name) const;
  // Forget the values set at run time and by compile (the next compile uses the options').
  void reset_values();
  rt::Instance& instance() { return *instance_; }

  rt::SolverOptions& options() { return solver_options_; }
  const rt::SolverOptions& options() const { return solver_options_; }

  // The analyses, on the current values (compile first when needs_compile()).
  SimulationRun simulate(const rt::Observer& observer, rt::ProgressSink* progress = nullptr);
  // Only the consistent start state (initial accelerations and multipliers), for linearisation.
  SimulationRun initialize();
  rt::StaticResult solve_static(
      const std::function<int(double, std::span<const double>)>& observer,
      rt::ProgressSink* progress = nullptr);  // throws rt::SolverSetupError

  // A model compiled with these compile-time values in addition to the session's (a study's
  // runs); cached per distinct set of values, safe to call from several threads. Null when the
  // compile failed (its diagnostics went to the session's stream).
  std::shared_ptr<const rt::CompiledModel> compiled_model_for(
      const std::map<std::string, double>& parameters, const std::map<std::string, double>& starts);

 private:
  CompileOptions options_;
  std::ostream& diag_out_;
  CompileResult result_;
  std::shared_ptr<const rt::CompiledModel> model_;
  std::unique_ptr<rt::Instance> instance_;
  rt::SolverOptions solver_options_;
  std::map<std::string, double> runtime_parameters_, runtime_starts_;
  bool needs_compile_ = false;
  std::mutex variants_mutex_;
  std::map<std::string, std::shared_ptr<const rt::CompiledModel>> variants_;
};

}  // namespace mbs
