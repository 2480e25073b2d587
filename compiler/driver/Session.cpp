#include "compiler/driver/Session.h"

#include <fmt/format.h>

#include <chrono>
#include <ostream>
#include <sstream>

#include "runtime/io/Suggest.h"

namespace mbs {

Session::Session(CompileOptions options, std::ostream& diag_out)
    : options_(std::move(options)), diag_out_(diag_out) {}

bool Session::compile(std::ostream& emit_out) {
  result_ = mbs::compile(options_, emit_out, diag_out_);
  needs_compile_ = false;
  if (!result_.ok || !result_.model) {
    model_.reset();
    instance_.reset();
    return result_.ok;
  }
  model_ = result_.model;
  instance_ = std::make_unique<rt::Instance>(model_);
  {
    std::lock_guard lock(variants_mutex_);
    variants_.clear();
  }
  // values set at run time before this compile apply again
  for (const auto& [n, x] : runtime_parameters_)
    instance_->input_index(n) >= 0 ? instance_->set_input(n, x) : instance_->set_parameter(n, x);
  for (const auto& [n, x] : runtime_starts_) instance_->set_start(n, x);
  return true;
}

void Session::set_parameter(const std::string& name, double value) {
  if (!instance_) throw rt::SetError(rt::SetError::Kind::UnknownName, name, "no model compiled");
  try {
    if (instance_->input_index(name) >= 0)
      instance_->set_input(name, value);
    else
      instance_->set_parameter(name, value);
    runtime_parameters_[name] = value;
  } catch (const rt::SetError& e) {
    if (e.kind() != rt::SetError::Kind::NeedsCompile) throw;
    options_.overrides[name] = value;
    needs_compile_ = true;
  }
}

void Session::set_start(const std::string& name, double value) {
  if (!instance_) throw rt::SetError(rt::SetError::Kind::UnknownName, name, "no model compiled");
  try {
    instance_->set_start(name, value);
    runtime_starts_[name] = value;
  } catch (const rt::SetError& e) {
    if (e.kind() != rt::SetError::Kind::NeedsCompile) throw;
    options_.start_overrides[name] = value;
    needs_compile_ = true;
  }
}

std::string Session::no_such_value(const std::string& name) const {
  if (!instance_) return "no model compiled";
  const rt::Instance& inst = *instance_;
  if (inst.parameter_index(name) >= 0 || inst.input_index(name) >= 0 || inst.has_start(name))
    return "";
  const rt::CompiledModel& m = *model_;
  std::vector<std::string> names;
  for (const auto& p : m.parameters) names.push_back(p.name);
  for (const auto& p : m.inputs) names.push_back(p.name);
  for (const auto* group : {&m.q, &m.y, &m.z})
    for (const auto& u : *group) names.push_back(u.name);
  for (const auto& u : m.q) names.push_back("der(" + u.name + ")");
  const std::string meant = rt::meant_name(name, names);
  return fmt::format("model '{}' has no parameter or variable '{}'{}", m.name, name,
                     meant.empty() ? "" : "; did you mean '" + meant + "'?");
}

void Session::reset_values() {
  runtime_parameters_.clear();
  runtime_starts_.clear();
  if (instance_) instance_->reset();
}

SimulationRun Session::simulate(const rt::Observer& observer, rt::ProgressSink* progress) {
  SimulationRun run;
  if (needs_compile_ && !compile(diag_out_)) {
    run.setup_error = "the model did not compile with the values set";
    return run;
  }
  if (!model_) {
    run.setup_error = "no model compiled";
    return run;
  }
  std::unique_ptr<rt::Integrator> solver;
  try {
    solver = rt::make_integrator(model_, solver_options_);
    solver->set_start(instance_->start_vector());
  } catch (const std::exception& e) {
    run.setup_error = e.what();
    return run;
  }
  run.solver = std::string(solver->name());
  run.warnings = solver->warnings();
  const size_t creation_warnings = run.warnings.size();
  if (progress)
    for (const auto& w : run.warnings) progress->warning(w);
  solver->set_progress(progress);
  const auto t0 = std::chrono::steady_clock::now();
  run.status = observer ? solver->run(observer) : solver->initialize();
  run.run_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  run.statistics = solver->statistics();
  if (solver->failure()) run.failure = *solver->failure();
  for (size_t i = creation_warnings; i < solver->warnings().size(); ++i)
    run.warnings.push_back(solver->warnings()[i]);
  run.t = solver->time();
  run.state.assign(solver->symbols().begin(), solver->symbols().end());
  return run;
}

SimulationRun Session::initialize() {
  return simulate(nullptr, nullptr);
}

rt::StaticResult Session::solve_static(
    const std::function<int(double, std::span<const double>)>& observer,
    rt::ProgressSink* progress) {
  if (needs_compile_ && !compile(diag_out_))
    throw rt::SolverSetupError("the model did not compile with the values set");
  if (!model_) throw rt::SolverSetupError("no model compiled");
  return rt::solve_static(model_, solver_options_, observer, progress, instance_->start_vector());
}

std::shared_ptr<const rt::CompiledModel> Session::compiled_model_for(
    const std::map<std::string, double>& parameters, const std::map<std::string, double>& starts) {
  std::string key;
  for (const auto& [n, x] : parameters) key += fmt::format("p {}={:.17g}\n", n, x);
  for (const auto& [n, x] : starts) key += fmt::format("s {}={:.17g}\n", n, x);
  std::lock_guard lock(variants_mutex_);
  if (key.empty()) return model_;
  if (auto it = variants_.find(key); it != variants_.end()) return it->second;
  CompileOptions o = options_;
  for (const auto& [n, x] : parameters) o.overrides[n] = x;
  for (const auto& [n, x] : starts) o.start_overrides[n] = x;
  o.emit.clear();
  o.verbose = false;
  std::ostringstream emit;
  CompileResult r = mbs::compile(o, emit, diag_out_);
  return variants_[key] = r.ok ? r.model : nullptr;
}

}  // namespace mbs
