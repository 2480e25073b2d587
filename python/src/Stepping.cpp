// mbs._mbs.Run: a run advanced piecewise from Python (docs/python.md, "Stepping"): a controller
// or another simulator in the loop sets the model's inputs between the pieces and reads its
// outputs. The integrator's co-simulation calls (rt::Integrator::advance_to, set_input), as the
// FMU runtime's rt::fmi::Unit uses them.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <algorithm>

#include "python/src/Convert.h"
#include "python/src/Model.h"
#include "runtime/io/Interrupt.h"
#include "runtime/io/Suggest.h"
#include "runtime/solvers/Integrator.h"

namespace mbs::python {

namespace {

class Run {
 public:
  Run(Model& m, const std::vector<std::pair<std::string, std::string>>& options)
      : model_(m.session().model()) {
    const rt::SolverOptions o = solver_options(m.session().options(), options);
    try {
      solver_ = rt::make_integrator(model_, o);
      solver_->set_start(m.session().instance().start_vector());
    } catch (const std::exception& e) {
      raise_usage(e.what());
    }
    // the consistent start, so that values() reads it before the first piece
    rt::SolveStatus status = rt::SolveStatus::Ok;
    {
      py::gil_scoped_release release;
      status = solver_->initialize();
    }
    if (status == rt::SolveStatus::Failed)
      raise_solver_error(failure_dict(*solver_->failure(), *model_));
  }

  double time() const { return solver_->time(); }

  void advance_to(double t) {
    if (!(t >= solver_->time()))
      raise_usage(fmt::format("advance_to({}): the run is at t = {} already", t, solver_->time()));
    rt::SolveStatus status = rt::SolveStatus::Ok;
    std::string error;
    {
      py::gil_scoped_release release;
      rt::InterruptScope interrupt;
      try {
        status = solver_->advance_to(t);
      } catch (const std::exception& e) {
        error = e.what();
      }
    }
    if (!error.empty()) raise_usage(error);
    if (status == rt::SolveStatus::Failed)
      raise_solver_error(failure_dict(*solver_->failure(), *model_));
    if (status == rt::SolveStatus::Interrupted) {
      PyErr_SetString(PyExc_KeyboardInterrupt,
                      fmt::format("interrupted at t = {}", time()).c_str());
      throw py::error_already_set();
    }
  }

  void set_input(const std::string& name, double value) {
    for (size_t i = 0; i < model_->inputs.size(); ++i)
      if (model_->inputs[i].name == name) {
        solver_->set_input(i, value);
        return;
      }
    std::vector<std::string> names;
    for (const auto& u : model_->inputs) names.push_back(u.name);
    const std::string meant = rt::meant_name(name, names);
    raise_usage(fmt::format("model '{}' has no input '{}'{}", model_->name, name,
                            meant.empty() ? "" : "; did you mean '" + meant + "'?"));
  }

  std::vector<double> values(const std::vector<std::string>& names) {
    std::vector<size_t> columns;
    for (const std::string& n : names) {
      const auto it = std::find(model_->output_names.begin(), model_->output_names.end(), n);
      if (it == model_->output_names.end()) {
        const std::string meant = rt::meant_name(n, model_->output_names);
        raise_usage(fmt::format("model '{}' has no variable '{}'{}", model_->name, n,
                                meant.empty() ? "" : "; did you mean '" + meant + "'?"));
      }
      columns.push_back(static_cast<size_t>(it - model_->output_names.begin()));
    }
    const std::span<const double> out = solver_->evaluate_outputs();
    std::vector<double> v;
    for (size_t c : columns) v.push_back(out[c]);
    return v;
  }

  py::dict statistics() const { return statistics_dict(solver_->statistics()); }

 private:
  std::shared_ptr<const rt::CompiledModel> model_;
  std::unique_ptr<rt::Integrator> solver_;
};

}  // namespace

void register_stepping(py::module_& mod) {
  py::class_<Run>(mod, "Run")
      .def(py::init<Model&, const std::vector<std::pair<std::string, std::string>>&>(),
           py::keep_alive<1, 2>())
      .def_property_readonly("time", &Run::time)
      .def("advance_to", &Run::advance_to)
      .def("set_input", &Run::set_input)
      .def("values", &Run::values)
      .def("statistics", &Run::statistics);
}

}  // namespace mbs::python
