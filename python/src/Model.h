// The Python module's model: one session and the values set on it (Module.cpp binds it).
#pragma once

#include <pybind11/pybind11.h>

#include <algorithm>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "compiler/driver/Session.h"
#include "python/src/Convert.h"
#include "runtime/solvers/Failure.h"
#include "runtime/solvers/Options.h"

namespace mbs::python {

// One loaded model: its session and the values set at run time (applied again after a
// compile that a compile-time value needs, like the REPL's `set`).
class Model {
 public:
  explicit Model(CompileOptions options) { make_session(std::move(options)); }
  Session& session() { return *session_; }
  const rt::CompiledModel& model() const { return *session_->model(); }
  // Compiles; raises ModelError or UsageError with the diagnostics.
  void compile() { compile_session(*session_, *diag_); }
  // NAME=VALUE pairs: parameters and inputs (start = false) or start values (start = true),
  // checked together and applied together (none when one fails).
  void set_values(const std::vector<std::pair<std::string, double>>& values, bool start) {
    rt::Instance& inst = session_->instance();
    CompileOptions copts = session_->compile_options();
    bool compile = false;
    for (const auto& [name, value] : values) {
      if (const std::string no = session_->no_such_value(name); !no.empty()) raise_usage(no);
      const bool is_parameter = inst.parameter_index(name) >= 0 || inst.input_index(name) >= 0;
      if (start == is_parameter)
        raise_usage(start ? "'" + name + "' is a parameter: set it with set(), not start()"
                          : "'" + name + "' is a variable: set its start value with start()");
      if (inst.why_compile_time(name).empty()) continue;
      (start ? copts.start_overrides : copts.overrides)[name] = value;
      compile = true;
    }
    const auto previous = values_;
    for (const auto& entry : values) {
      std::erase_if(values_, [&](const auto& p) { return p.first == entry.first; });
      values_.emplace_back(entry.first, entry.second);
    }
    if (compile) {
      // a value the compiler uses: a new session (the current one stays if the compile fails)
      auto diag = std::make_unique<std::ostringstream>();
      auto s = std::make_unique<Session>(copts, *diag);
      try {
        compile_session(*s, *diag);
        apply_values(*s, values_);
        (void)s->instance().start_vector();
      } catch (const rt::SetError& e) {
        values_ = previous;
        raise_usage(e.what());
      } catch (...) {
        values_ = previous;
        throw;
      }
      diag_ = std::move(diag);
      session_ = std::move(s);
      return;
    }
    try {
      apply_values(*session_, values);
      (void)inst.start_vector();  // bounds of the parameter and of those derived from it
    } catch (const rt::SetError& e) {
      values_ = previous;
      session_->reset_values();
      try {
        apply_values(*session_, values_);
      } catch (const rt::SetError&) {
      }
      raise_usage(e.what());
    }
  }

  const std::vector<std::pair<std::string, double>>& values() const { return values_; }

  // Compiles `s` (its diagnostics into `diag`, warnings then to sys.stderr); raises ModelError
  // or UsageError.
  static void compile_session(Session& s, std::ostringstream& diag) {
    diag.str("");
    bool ok = false;
    {
      py::gil_scoped_release release;
      std::ostringstream emit;
      ok = s.compile(emit) && s.compiled();
    }
    if (!ok) raise_compile_error(s.compile_result(), diag.str());
    write_stderr(diag.str());  // warnings
  }
  // Values set before, again on a new session (parameters and inputs, else start values).
  // Those the compile applied (compile-time values) are in its options already.
  static void apply_values(Session& s, const std::vector<std::pair<std::string, double>>& values) {
    const CompileOptions& copts = s.compile_options();
    for (const auto& [name, value] : values) {
      if (copts.overrides.count(name) || copts.start_overrides.count(name)) continue;
      const rt::Instance& inst = s.instance();
      if (inst.parameter_index(name) >= 0 || inst.input_index(name) >= 0)
        s.set_parameter(name, value);
      else
        s.set_start(name, value);
    }
  }

 private:
  void make_session(CompileOptions options) {
    diag_ = std::make_unique<std::ostringstream>();
    session_ = std::make_unique<Session>(std::move(options), *diag_);
  }

  std::unique_ptr<std::ostringstream> diag_;
  std::unique_ptr<Session> session_;
  std::vector<std::pair<std::string, double>> values_;
};

// Options by name (the option table's keys or flags: "t_end", "step", "rho-inf") and value as
// text over `base`; raises UsageError with set_option()'s and validate()'s messages. The keys
// of the options given go into `keys` when it is not null (rt::apply_experiment leaves them).
rt::SolverOptions solver_options(const rt::SolverOptions& base,
                                 const std::vector<std::pair<std::string, std::string>>& given,
                                 std::set<std::string>* keys = nullptr);

// The failure of a run as the keyword arguments of mbs.SolverError.
py::dict failure_dict(const rt::FailureRecord& f, const rt::CompiledModel& m);

// Model.study and Model.export_fmu (Studies.cpp).
void register_studies(py::class_<Model>& model);

}  // namespace mbs::python
