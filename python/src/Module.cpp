// mbs._mbs: the native part of the Python module (docs/python.md). A view of the session
// (compiler/driver/Session.h) like mbsc and the REPL: the compile, the values set with the
// REPL's checks and messages, the option table, the analyses, and the runs that stop on Ctrl-C
// (rt::InterruptScope). The package mbs/ (python/mbs/__init__.py) wraps it: results as numpy
// views of one buffer, the exceptions of mbs/_errors.py, keyword arguments.
#include <pybind11/complex.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "compiler/driver/Session.h"
#include "python/src/Convert.h"
#include "python/src/Model.h"
#include "runtime/analysis/Linearize.h"
#include "runtime/analysis/Modes.h"
#include "runtime/io/ColumnSelect.h"
#include "runtime/io/Interrupt.h"
#include "runtime/io/Progress.h"
#include "runtime/solvers/Failure.h"
#include "runtime/solvers/Options.h"

namespace py = pybind11;

namespace mbs::python {

rt::SolverOptions solver_options(const rt::SolverOptions& base,
                                 const std::vector<std::pair<std::string, std::string>>& given,
                                 std::set<std::string>* keys) {
  rt::SolverOptions o = base;
  for (const auto& [name, value] : given) {
    std::string key = name;
    if (rt::find_option(key) == nullptr) std::replace(key.begin(), key.end(), '_', '-');
    const rt::OptionSpec* spec = rt::find_option(key);
    if (spec == nullptr) key = name;  // set_option's message names it as given
    if (auto e = rt::set_option(o, key, value)) raise_usage(*e);
    if (keys != nullptr && spec != nullptr) keys->insert(std::string(spec->key));
  }
  if (auto e = rt::validate(o)) raise_usage(*e);
  return o;
}

py::dict failure_dict(const rt::FailureRecord& f, const rt::CompiledModel& m) {
  py::dict d;
  d["kind"] = std::string(rt::failure_kind_name(f.kind));
  d["time"] = f.t;
  d["step"] = f.h;
  d["equation"] = f.equation >= 0 ? py::object(py::str(rt::equation_text(m, f.equation)))
                                  : py::object(py::none());
  d["variable"] =
      f.unknown >= 0 ? py::object(py::str(rt::unknown_name(m, f.unknown))) : py::object(py::none());
  d["message"] = f.message;
  return d;
}

namespace {

// The rows of a run as they come: [x, outputs...] per row, one buffer; with `columns`, only
// those outputs (their indices, increasing: `outputs=` of simulate).
struct Rows {
  std::vector<double> data;
  size_t width = 0;
  const std::vector<int32_t>* columns = nullptr;
  int operator()(double x, std::span<const double> values) {
    data.push_back(x);
    if (columns == nullptr) {
      data.insert(data.end(), values.begin(), values.end());
    } else {
      for (int32_t c : *columns) data.push_back(values[static_cast<size_t>(c)]);
    }
    return 0;
  }
};

py::dict run_result(const rt::CompiledModel& m, const char* first, Rows&& rows,
                    const std::string& status, const rt::Statistics& stats,
                    const std::vector<std::string>& warnings,
                    const std::optional<rt::FailureRecord>& failure, double t) {
  py::dict r;
  std::vector<std::string> names{first};
  std::vector<std::string> units{std::string(first) == "time" ? "s" : ""};
  auto add = [&](size_t i) {
    names.push_back(m.output_names[i]);
    units.push_back(i < m.output_unit.size() ? m.output_unit[i] : "");
  };
  if (rows.columns != nullptr) {
    for (int32_t c : *rows.columns) add(static_cast<size_t>(c));
  } else {
    for (size_t i = 0; i < m.output_names.size(); ++i) add(i);
  }
  r["names"] = names;
  r["units"] = units;
  r["data"] = rows_array(std::move(rows.data), names.size());
  r["status"] = status;
  r["statistics"] = statistics_dict(stats);
  r["warnings"] = warnings;
  r["failure"] = failure ? py::object(failure_dict(*failure, m)) : py::object(py::none());
  r["t"] = t;
  return r;
}

const char* run_status(rt::SolveStatus s) {
  switch (s) {
    case rt::SolveStatus::Failed:
      return "failed";
    case rt::SolveStatus::Interrupted:
      return "interrupted";
    default:
      return "ok";
  }
}

// Progress of a run to a Python callable, about every `interval` seconds, with the GIL taken
// for the call; an exception in it stops the run (as Ctrl-C does) and is raised after it.
class PyProgress final : public rt::ProgressSink {
 public:
  PyProgress(py::object callback, double interval)
      : callback_(std::move(callback)), interval_(interval) {}
  void progress(const rt::ProgressInfo& i) override {
    py::gil_scoped_acquire gil;
    if (error_) return;
    try {
      py::dict d;
      d["task"] = std::string(i.task);
      d["t"] = i.t;
      d["t0"] = i.t0;
      d["t_end"] = i.t_end;
      d["h"] = i.h;
      d["steps"] = i.steps;
      d["elapsed"] = i.elapsed;
      d["fraction"] = i.fraction();
      callback_(d);
    } catch (py::error_already_set& e) {
      error_ = std::make_unique<py::error_already_set>(std::move(e));
      rt::request_interrupt();
    }
  }
  void warning(std::string_view) override {}  // the run's warnings come with its result
  double interval() const override { return interval_; }
  // Raises what the callback raised (with the GIL held).
  void raise_if_failed() {
    if (!error_) return;
    error_->restore();
    error_.reset();
    throw py::error_already_set();
  }

 private:
  py::object callback_;
  double interval_;
  std::unique_ptr<py::error_already_set> error_;
};

py::dict simulate(Model& self, const std::vector<std::pair<std::string, std::string>>& options,
                  py::object progress_callback, double progress_interval,
                  const std::vector<std::string>& outputs) {
  std::optional<PyProgress> progress;
  if (!progress_callback.is_none()) progress.emplace(progress_callback, progress_interval);
  Session& s = self.session();
  // the options of this call stay for the next (as in the REPL); what the experiment annotation
  // adds holds for this run only
  std::set<std::string> given;
  const rt::SolverOptions kept = solver_options(s.options(), options, &given);
  const rt::CompiledModel& m = self.model();
  // the model's experiment annotation gives what this call does not (docs/python.md)
  rt::SolverOptions o = kept;
  rt::apply_experiment(m, o, given);
  if (auto e = rt::validate(o)) raise_usage(*e);
  s.options() = o;
  // the columns chosen by `outputs=` (names or globs, as mbsc --outputs), checked before the run
  std::optional<std::vector<int32_t>> columns;
  if (!outputs.empty()) {
    try {
      columns = rt::select_columns(m.output_names, outputs);
    } catch (const rt::ColumnSelectError& e) {
      raise_usage(e.what());
    }
  }
  Rows rows;
  rows.columns = columns ? &*columns : nullptr;
  rows.width = (columns ? columns->size() : m.output_names.size()) + 1;
  // the rows of the output grid, reserved up to 2^20 (adaptive methods may grow it beyond)
  const double steps =
      (o.t_end - m.v0[static_cast<size_t>(m.slot_time)]) / o.h / std::max(o.output_every, 1);
  rows.data.reserve(static_cast<size_t>(std::clamp(steps, 0.0, double(1 << 20)) + 2) * rows.width);
  SimulationRun run;
  {
    py::gil_scoped_release release;
    rt::InterruptScope interrupt;
    run = s.simulate(std::ref(rows), progress ? &*progress : nullptr);
    s.options() = kept;
  }
  if (progress) progress->raise_if_failed();
  if (!run.setup_error.empty()) raise_usage(run.setup_error);
  auto r = run_result(m, "time", std::move(rows), run_status(run.status), run.statistics,
                      run.warnings, run.failure, run.t);
  r["solver"] = run.solver;
  return r;
}

py::dict solve_static(Model& self,
                      const std::vector<std::pair<std::string, std::string>>& options) {
  Session& s = self.session();
  s.options() = solver_options(s.options(), options);
  Rows rows;
  rows.width = self.model().output_names.size() + 1;
  rt::StaticResult res;
  std::string setup_error;
  {
    py::gil_scoped_release release;
    rt::InterruptScope interrupt;
    try {
      res = s.solve_static(std::ref(rows));
    } catch (const rt::SolverSetupError& e) {
      setup_error = e.what();
    }
  }
  if (!setup_error.empty()) raise_usage(setup_error);
  auto r = run_result(self.model(), "load", std::move(rows), run_status(res.status), res.statistics,
                      res.warnings, res.failure, 1.0);
  r["state"] = res.v;
  return r;
}

// The consistent start state (initial accelerations and multipliers), for linearisation.
std::vector<double> start_state(Model& self) {
  SimulationRun run;
  {
    py::gil_scoped_release release;
    run = self.session().initialize();
  }
  if (!run.setup_error.empty()) raise_usage(run.setup_error);
  if (run.status == rt::SolveStatus::Failed)
    raise_solver_error(failure_dict(*run.failure, self.model()));
  return run.state;
}

py::dict linearize(Model& self, std::optional<std::vector<double>> state) {
  const std::vector<double> v = state ? *state : start_state(self);
  rt::LinearSystem sys;
  try {
    sys = rt::linearize(self.model(), v);
  } catch (const std::exception& e) {
    raise_usage(std::string("linearisation failed: ") + e.what());
  }
  py::dict d;
  d["M"] = matrix_array(sys.M);
  d["K"] = matrix_array(sys.K);
  d["D"] = matrix_array(sys.D);
  d["G"] = matrix_array(sys.G);
  d["B"] = matrix_array(sys.B);
  d["E"] = matrix_array(sys.E);
  d["A"] = matrix_array(sys.A);
  d["q_names"] = sys.q_names;
  d["y_names"] = sys.y_names;
  d["z_names"] = sys.z_names;
  d["row_names"] = sys.row_names;
  std::vector<std::complex<double>> lambda;
  std::vector<double> frequency, damping;
  std::string error;
  for (const rt::Mode& mode : rt::eigenmodes(sys, &error)) {
    lambda.push_back(mode.lambda);
    frequency.push_back(mode.frequency_hz);
    damping.push_back(mode.damping_ratio);
  }
  d["eigen_error"] = error;
  d["eigenvalues"] = py::array_t<std::complex<double>>(lambda.size(), lambda.data());
  d["frequency_hz"] = py::array_t<double>(frequency.size(), frequency.data());
  d["damping_ratio"] = py::array_t<double>(damping.size(), damping.data());
  return d;
}

py::list parameters(Model& self) {
  const rt::CompiledModel& m = self.model();
  rt::Instance& inst = self.session().instance();
  py::list out;
  for (size_t i = 0; i < m.parameters.size(); ++i) {
    const std::string& n = m.parameters[i].name;
    out.append(py::make_tuple(n, inst.parameter(n), at(m.parameter_unit, i),
                              at(m.parameter_description, i), declared_at(m.parameters[i].source),
                              at(m.parameter_compile_time, i)));
  }
  return out;
}

py::list inputs(Model& self) {
  const rt::CompiledModel& m = self.model();
  const std::vector<double>& v = self.session().instance().start_vector();
  py::list out;
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    std::string unit, desc;
    for (size_t c = 0; c < m.output_names.size(); ++c)
      if (m.output_names[c] == m.inputs[i].name) {
        unit = at(m.output_unit, c);
        desc = at(m.output_description, c);
      }
    out.append(py::make_tuple(m.inputs[i].name, v[static_cast<size_t>(m.input_slot[i])], unit, desc,
                              declared_at(m.inputs[i].source), ""));
  }
  return out;
}

py::list variables(Model& self) {
  const rt::CompiledModel& m = self.model();
  rt::Instance& inst = self.session().instance();
  py::list out;
  for (size_t i = 0; i < m.output_names.size(); ++i) {
    const std::string& n = m.output_names[i];
    const py::object start =
        inst.has_start(n) ? py::object(py::float_(start_value(m, inst, n))) : py::none();
    std::string declared;
    if (i < m.output_source.size()) declared = declared_at(m.output_source[i].declaration);
    out.append(
        py::make_tuple(n, start, at(m.output_unit, i), at(m.output_description, i), declared, ""));
  }
  return out;
}

}  // namespace

}  // namespace mbs::python

PYBIND11_MODULE(_mbs, mod) {
  using namespace mbs::python;
  namespace rt = mbs::rt;
  mod.doc() = "The native part of the mbs module (docs/python.md); use the package mbs.";
  mod.attr("__version__") = MBS_VERSION;
  // a value or option the runtime refuses where no call site expects it: a UsageError too
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const rt::SetError& e) {
      PyErr_SetObject(py::module_::import("mbs._errors").attr("UsageError").ptr(),
                      py::str(e.what()).ptr());
    } catch (const rt::SolverSetupError& e) {
      PyErr_SetObject(py::module_::import("mbs._errors").attr("UsageError").ptr(),
                      py::str(e.what()).ptr());
    }
  });
  mod.def(
      "load",
      [](const std::string& path, const std::string& model, const std::vector<std::string>& include,
         const std::map<std::string, double>& set, const std::map<std::string, double>& start,
         bool cache, bool reactions) {
        mbs::CompileOptions o;
        o.file = path;
        o.model = model;
        o.include_dirs = include;
        o.overrides = set;
        o.start_overrides = start;
        o.cache_dir = cache ? "" : "off";
        o.reactions = reactions;
        auto m = std::make_unique<Model>(o);
        m->compile();
        return m;
      },
      py::arg("path"), py::arg("model"), py::arg("include"), py::arg("set"), py::arg("start"),
      py::arg("cache"), py::arg("reactions"));
  mod.def("option_table", []() {
    py::list out;
    for (const rt::OptionSpec& s : rt::option_table())
      out.append(py::make_tuple(std::string(s.key), std::string(s.flag), std::string(s.unit),
                                std::string(s.help), rt::default_text(s)));
    return out;
  });
  py::class_<Model> model(mod, "Model");
  model.def_property_readonly("name", [](Model& m) { return m.model().name; })
      .def_property_readonly("file", [](Model& m) { return m.session().compile_options().file; })
      .def("parameters", &parameters)
      .def("variables", &variables)
      .def("inputs", &inputs)
      .def("set_values", &Model::set_values)
      .def("options",
           [](Model& m) {
             py::dict d;
             for (const rt::OptionSpec& s : rt::option_table())
               d[py::str(std::string(s.key))] = rt::get_option(m.session().options(), s);
             return d;
           })
      .def("simulate", &simulate, py::arg("options"), py::arg("progress") = py::none(),
           py::arg("progress_interval") = 1.0, py::arg("outputs") = std::vector<std::string>{})
      .def("static", &solve_static)
      .def("start_state", &start_state)
      .def("linearize", &linearize, py::arg("state") = py::none());
  register_studies(model);
  register_stepping(mod);
}
