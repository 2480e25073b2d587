#include "runtime/drivers/Study.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <thread>

#include "runtime/analysis/Static.h"
#include "runtime/drivers/Mpi.h"
#include "runtime/io/Interrupt.h"
#include "runtime/io/Suggest.h"
#include "runtime/session/Instance.h"
#include "runtime/solvers/Integrator.h"

namespace mbs::rt {

std::string_view run_status_name(RunOutcome::Status s) {
  switch (s) {
    case RunOutcome::Status::Ok:
      return "ok";
    case RunOutcome::Status::Failed:
      return "failed";
    case RunOutcome::Status::Interrupted:
      return "interrupted";
  }
  return "?";
}

int study_threads(int requested) {
  if (requested > 0) return requested;
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

Evaluator::Evaluator(std::shared_ptr<const CompiledModel> model,
                     std::vector<StudyVariable> variables, std::vector<Objective> objectives,
                     SolverOptions options, StudyAnalysis analysis, ModelProvider provider)
    : model_(std::move(model)),
      variables_(std::move(variables)),
      objectives_(std::move(objectives)),
      options_(options),
      analysis_(analysis),
      provider_(std::move(provider)) {
  if (!model_) throw std::invalid_argument("study: no model");
  const Instance probe(model_);
  for (const StudyVariable& v : variables_) {
    // a name the model does not have: the message of setting it (with the suggestion)
    Instance check(model_);
    try {
      if (check.input_index(v.name) >= 0)  // a top-level input: its value over the run
        check.set_input(v.name, 0.0);
      else if (v.start)
        check.set_start(v.name, 0.0);
      else
        check.set_parameter(v.name, 0.0);
    } catch (const SetError& e) {
      if (e.kind() != SetError::Kind::UnknownName) {
        // settable (by a compile if need be); the values are checked per run
      } else if (v.start && probe.parameter_index(v.name) < 0) {
        // neither a parameter nor a variable: suggest from both
        std::vector<std::string> names;
        for (const auto& p : model_->parameters) names.push_back(p.name);
        for (const auto& o : model_->output_names) names.push_back(o);
        const std::string near = meant_name(v.name, names);
        throw std::invalid_argument(
            fmt::format("model '{}' has no parameter or variable '{}'{}", model_->name, v.name,
                        near.empty() ? "" : "; did you mean '" + near + "'?"));
      } else {
        throw std::invalid_argument(e.what());
      }
    }
    const std::string why = probe.why_compile_time(v.name);
    compile_time_.push_back(!why.empty());
    if (!why.empty() && !provider_)
      throw std::invalid_argument(fmt::format(
          "study: '{}' cannot change without a new compile ({}) and no compiler is at hand", v.name,
          why));
  }
}

namespace {

// The rows of one run into the objectives' accumulators, the model's columns mapped onto those
// the objectives were compiled for (a model compiled for other compile-time values may have
// other columns).
struct Reducer {
  std::vector<ObjectiveAccumulator> acc;
  std::vector<int32_t> column;  // per column of the objectives' model: column of this model
  std::vector<double> mapped;
  bool identity = true;

  Reducer(const std::vector<Objective>& objectives, const CompiledModel& base,
          const CompiledModel& model, std::string& missing) {
    for (const Objective& o : objectives) acc.emplace_back(o);
    identity = base.output_names == model.output_names;
    if (identity || objectives.empty()) return;
    for (const auto& name : base.output_names) {
      int32_t c = -1;
      for (size_t j = 0; j < model.output_names.size(); ++j)
        if (model.output_names[j] == name) c = static_cast<int32_t>(j);
      column.push_back(c);
    }
    mapped.assign(base.output_names.size(), std::numeric_limits<double>::quiet_NaN());
    for (size_t i = 0; i < column.size(); ++i)
      if (column[i] < 0 && missing.empty()) missing = base.output_names[i];
  }
  void add(double t, std::span<const double> outputs) {
    if (!identity && !column.empty()) {
      for (size_t i = 0; i < column.size(); ++i)
        mapped[i] = column[i] >= 0 ? outputs[static_cast<size_t>(column[i])]
                                   : std::numeric_limits<double>::quiet_NaN();
      outputs = mapped;
    }
    for (auto& a : acc) a.add(t, outputs);  // a non-finite value makes value() NaN
  }
};

}  // namespace

RunOutcome Evaluator::evaluate(std::span<const double> values) const {
  return run(values, nullptr);
}

RunOutcome Evaluator::evaluate_with_gradient(std::span<const double> values,
                                             std::vector<std::vector<double>>& gradient) const {
  return run(values, &gradient);
}

RunOutcome Evaluator::run(std::span<const double> values,
                          std::vector<std::vector<double>>* gradient) const {
  const auto start = std::chrono::steady_clock::now();
  RunOutcome out;
  out.objectives.assign(objectives_.size(), std::numeric_limits<double>::quiet_NaN());
  const auto finish = [&](RunOutcome::Status status, std::string message) {
    out.status = status;
    out.message = std::move(message);
    out.ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return out;
  };
  try {
    if (values.size() != variables_.size())
      return finish(RunOutcome::Status::Failed,
                    fmt::format("{} values for {} variables", values.size(), variables_.size()));
    std::shared_ptr<const CompiledModel> model = model_;
    std::map<std::string, double> ct_parameters, ct_starts;
    for (size_t i = 0; i < variables_.size(); ++i)
      if (compile_time_[i])
        (variables_[i].start ? ct_starts : ct_parameters)[variables_[i].name] = values[i];
    if (!ct_parameters.empty() || !ct_starts.empty()) {
      std::string error;
      model = provider_(ct_parameters, ct_starts, error);
      if (!model)
        return finish(RunOutcome::Status::Failed,
                      error.empty() ? "the model did not compile with these values" : error);
    }
    Instance instance(model);
    for (size_t i = 0; i < variables_.size(); ++i) {
      if (compile_time_[i]) continue;
      if (instance.input_index(variables_[i].name) >= 0)
        instance.set_input(variables_[i].name, values[i]);
      else if (variables_[i].start)
        instance.set_start(variables_[i].name, values[i]);
      else
        instance.set_parameter(variables_[i].name, values[i]);
    }
    const std::vector<double>& v = instance.start_vector();
    // columns this model lacks read as NaN: an objective that uses one is not finite
    std::string missing;
    Reducer reducer(objectives_, *model_, *model, missing);
    const auto observer = [&](double t, std::span<const double> outputs) {
      reducer.add(t, outputs);
      return 0;
    };
    if (analysis_ == StudyAnalysis::Static) {
      StaticResult r = solve_static(model, options_, observer, nullptr, v);
      out.statistics = r.statistics;
      if (r.status == SolveStatus::Interrupted)
        return finish(RunOutcome::Status::Interrupted, "interrupted");
      if (r.status == SolveStatus::Failed)
        return finish(RunOutcome::Status::Failed,
                      r.failure ? r.failure->message : "the static solver failed");
    } else {
      auto solver = make_integrator(model, options_);
      solver->set_start(v);
      std::vector<ObjectiveDerivative> derivatives;
      std::vector<double> d_outputs;
      if (gradient) {
        if (model != model_)
          throw std::invalid_argument(
              "exact sensitivities need variables that change at run time (not recompiled)");
        std::vector<SensitivityDirection> dirs;
        for (const auto& var : variables_) dirs.push_back(instance.sensitivity_direction(var.name));
        solver->enable_sensitivities(std::move(dirs));
        for (const auto& o : objectives_)
          derivatives.emplace_back(o, static_cast<int32_t>(variables_.size()));
        d_outputs.assign(variables_.size() * model->output_names.size(), 0.0);
      }
      Integrator* integrator = solver.get();
      const auto observe = [&](double t, std::span<const double> outputs) {
        reducer.add(t, outputs);
        if (!derivatives.empty()) {
          integrator->output_sensitivities(d_outputs);
          for (auto& d : derivatives) d.add(t, outputs, d_outputs);
        }
        return 0;
      };
      const SolveStatus status = solver->run(observe);
      if (gradient) {
        gradient->assign(objectives_.size(), std::vector<double>(variables_.size(), 0.0));
        for (size_t k = 0; k < derivatives.size(); ++k)
          for (size_t i = 0; i < variables_.size(); ++i)
            (*gradient)[k][i] = derivatives[k].value(static_cast<int32_t>(i));
      }
      out.statistics = solver->statistics();
      if (status == SolveStatus::Interrupted)
        return finish(RunOutcome::Status::Interrupted, "interrupted");
      if (status == SolveStatus::Failed)
        return finish(RunOutcome::Status::Failed,
                      solver->failure() ? solver->failure()->message : "the solver failed");
    }
    for (size_t i = 0; i < reducer.acc.size(); ++i) out.objectives[i] = reducer.acc[i].value();
    for (size_t i = 0; i < out.objectives.size(); ++i)
      if (!std::isfinite(out.objectives[i]))
        return finish(
            RunOutcome::Status::Failed,
            fmt::format("objective {} is not finite ({}){}", objectives_[i].text, out.objectives[i],
                        missing.empty() ? std::string()
                                        : " (the model compiled for these values has no output '" +
                                              missing + "')"));
    return finish(RunOutcome::Status::Ok, "");
  } catch (const std::exception& e) {
    return finish(RunOutcome::Status::Failed, e.what());
  }
}

bool run_parallel(const Evaluator& evaluator, const std::vector<std::vector<double>>& points,
                  int threads, const std::function<void(size_t, const RunOutcome&)>& done,
                  const std::function<bool(size_t)>& skip) {
  // rank 0 of an MPI job: the other ranks evaluate (docs/studies.md, "Across machines: MPI")
  if (mpi_active()) return mpi_run_parallel(evaluator, points, done, skip);
  std::atomic<size_t> next{0};
  std::mutex done_mutex;
  std::exception_ptr error;
  const auto worker = [&]() {
    for (;;) {
      if (interrupt_requested()) return;
      const size_t i = next.fetch_add(1);
      if (i >= points.size()) return;
      if (skip && skip(i)) continue;
      RunOutcome r = evaluator.evaluate(points[i]);
      std::lock_guard lock(done_mutex);
      if (error) return;
      try {
        done(i, r);
      } catch (...) {
        error = std::current_exception();
        next.store(points.size());
        return;
      }
    }
  };
  const int n = std::max(1, std::min<int>(study_threads(threads), static_cast<int>(points.size())));
  if (n == 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    for (int k = 0; k < n; ++k) pool.emplace_back(worker);
    for (auto& t : pool) t.join();
  }
  if (error) std::rethrow_exception(error);
  return !interrupt_requested();
}

}  // namespace mbs::rt
