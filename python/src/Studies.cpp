// Studies and FMU export from Python (docs/python.md, "Studies"): mbsc's own flags and
// functions (tools/mbsc/StudyCli, FmuCli over compiler/driver/Studies and tools/fmu/Export), so
// that a study or an export from Python checks, runs, writes and reports exactly as the command
// line does. The package builds the flags from keyword arguments.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <sstream>

#include "python/src/Convert.h"
#include "python/src/Model.h"
#include "runtime/io/Interrupt.h"
#include "runtime/io/Progress.h"
#include "tools/mbsc/Analyses.h"
#include "tools/mbsc/FmuCli.h"
#include "tools/mbsc/StudyCli.h"

namespace mbs::python {

namespace {

// std::cerr and std::cout into strings while it lives (what mbsc prints, for the messages).
class Capture {
 public:
  Capture() : err_(std::cerr.rdbuf(err_text_.rdbuf())), out_(std::cout.rdbuf(out_text_.rdbuf())) {}
  ~Capture() {
    std::cerr.rdbuf(err_);
    std::cout.rdbuf(out_);
  }
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;
  std::string err() const { return err_text_.str(); }
  std::string out() const { return out_text_.str(); }

 private:
  std::ostringstream err_text_, out_text_;
  std::streambuf* err_;
  std::streambuf* out_;
};

// Parses mbsc's flags of one kind (add(app) adds them); raises UsageError with CLI11's message.
template <class Add>
void parse_flags(const std::string& program, std::vector<std::string> args, Add add) {
  CLI::App app{"", program};
  add(app);
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    raise_usage(e.what());
  }
}

// A session for these compile options with the model's values (a study with exact
// sensitivities, an FMU export), compiled; raises ModelError / UsageError.
std::unique_ptr<Session> session_for(Model& m, const CompileOptions& copts,
                                     std::ostringstream& diag) {
  auto s = std::make_unique<Session>(copts, diag);
  Model::compile_session(*s, diag);
  Model::apply_values(*s, m.values());
  if (s->needs_compile()) Model::compile_session(*s, diag);
  return s;
}

// Runs a study given by mbsc's study flags, writing its rows to `output`; returns the text mbsc
// prints (the summary), raises as mbsc exits: 1 ModelError, 2 UsageError, 130 KeyboardInterrupt.
std::string study(Model& m, const std::vector<std::string>& args, const std::string& output,
                  const std::vector<std::pair<std::string, std::string>>& options) {
  m.session().options() = solver_options(m.session().options(), options);
  cli::StudyFlags flags;
  parse_flags("study", args, [&](CLI::App& app) { cli::add_study_flags(app, flags); });
  if (!flags.active()) raise_usage("no study: give --vary, --optimize or --sensitivity");
  std::ostringstream diag;
  std::unique_ptr<Session> own;
  Session* s = &m.session();
  if (flags.needs_sensitivity_kernels() && !s->compile_options().sensitivities) {
    CompileOptions copts = s->compile_options();
    copts.sensitivities = true;
    own = session_for(m, copts, diag);
    own->options() = s->options();
    s = own.get();
  }
  int code = 0;
  std::string err, out;
  {
    py::gil_scoped_release release;
    rt::InterruptScope interrupt;
    Capture capture;
    rt::StderrProgress progress(rt::StderrProgress::Mode::Off, 1.0);
    code = cli::run_study(*s, flags, false, output, progress);
    err = capture.err();
    out = capture.out();
  }
  if (code == cli::kExitModelError) {
    CompileResult none;
    raise_compile_error(none, err);
  }
  if (code == cli::kExitUsage)
    raise_usage(err.rfind("mbsc: error: ", 0) == 0 ? err.substr(13) : err);
  if (code == cli::kExitInterrupted) {
    PyErr_SetString(PyExc_KeyboardInterrupt, err.c_str());
    throw py::error_already_set();
  }
  return err + out;
}

// Exports the model as an FMU by mbsc's --fmu flags; returns the summary mbsc prints.
std::string export_fmu(Model& m, const std::vector<std::string>& args) {
  cli::FmuFlags flags;
  parse_flags("export_fmu", args, [&](CLI::App& app) { cli::add_fmu_flags(app, flags); });
  if (!flags.active()) raise_usage("export_fmu: no path");
  CompileOptions copts = m.session().compile_options();
  copts.cpu = flags.compile_cpu();
  copts.keep_object_files = true;
  copts.sensitivities = true;
  std::ostringstream diag;
  std::unique_ptr<Session> s = session_for(m, copts, diag);
  s->options() = m.session().options();
  int code = 0;
  std::string err;
  {
    py::gil_scoped_release release;
    Capture capture;
    code = cli::run_fmu_export(*s, flags, false);
    err = capture.err();
  }
  if (code != cli::kExitOk) raise_usage(err.rfind("mbsc: error: ", 0) == 0 ? err.substr(13) : err);
  return err;
}

// Inverse dynamics of the prescribed motion (`mbsc --inverse-dynamics`), written to `output`;
// returns what mbsc prints (the summary). Raises as mbsc exits: 2 UsageError, 3 SolverError
// (the message), 130 KeyboardInterrupt.
std::string inverse_dynamics(Model& m, double t_end, double step, const std::string& trajectory,
                             const std::string& logged, const std::string& balance,
                             const std::string& output) {
  if (balance != "tree" && balance != "bodies")
    raise_usage("balance='" + balance + "': expected 'tree' or 'bodies'");
  CompileOptions copts = m.session().compile_options();
  copts.inverse_dynamics = true;
  std::ostringstream diag;
  std::unique_ptr<Session> s = session_for(m, copts, diag);
  cli::InverseRequest r;
  r.options.t_end = t_end;
  r.options.h = step;
  r.options.trajectory = trajectory;
  r.options.logged = logged;
  r.options.balance = balance == "bodies" ? rt::BalanceForm::Bodies : rt::BalanceForm::Tree;
  r.output = output;
  int code = 0;
  std::string err;
  {
    py::gil_scoped_release release;
    rt::InterruptScope interrupt;
    Capture capture;
    rt::StderrProgress progress(rt::StderrProgress::Mode::Off, 1.0);
    code = cli::run_inverse_dynamics(*s, r, progress);
    err = capture.err();
  }
  if (code == cli::kExitUsage)
    raise_usage(err.rfind("mbsc: error: ", 0) == 0 ? err.substr(13) : err);
  if (code == cli::kExitSolverFailure) {
    py::dict f;
    f["message"] = err;
    f["kind"] = "InverseDynamics";
    raise_solver_error(f);
  }
  if (code == cli::kExitInterrupted) {
    PyErr_SetString(PyExc_KeyboardInterrupt, err.c_str());
    throw py::error_already_set();
  }
  return err;
}

}  // namespace

void register_studies(py::class_<Model>& model) {
  model.def("study", &study)
      .def("export_fmu", &export_fmu)
      .def("inverse_dynamics", &inverse_dynamics);
}

}  // namespace mbs::python
