#include "runtime/solvers/Integrator.h"

#include <fmt/format.h>

#include "runtime/solvers/Explicit.h"
#include "runtime/solvers/GenAlpha.h"
#include "runtime/solvers/ModelCheck.h"

namespace mbs::rt {

namespace {

// Validates before anything is sized from the model.
std::shared_ptr<const CompiledModel> checked(std::shared_ptr<const CompiledModel> model,
                                             const SolverOptions& o) {
  if (!model) throw SolverSetupError("no model");
  const CompiledModel& m = *model;
  if (auto err = validate(o)) throw SolverSetupError(*err);
  check_model(m);
  const double t0 = m.v0[m.slot_time];
  if (!(o.t_end > t0)) {
    throw SolverSetupError(
        fmt::format("option --t-end (t_end) = {} must be larger than the start "
                    "time t0 = {} of model '{}'",
                    o.t_end, t0, m.name));
  }
  return model;
}

}  // namespace

std::string_view status_name(SolveStatus s) {
  switch (s) {
    case SolveStatus::Ok:
      return "ok";
    case SolveStatus::Finished:
      return "finished";
    case SolveStatus::Interrupted:
      return "interrupted";
    case SolveStatus::Stopped:
      return "stopped";
    case SolveStatus::Failed:
      return "failed";
  }
  return "?";
}

Integrator::Integrator(std::shared_ptr<const CompiledModel> model, const SolverOptions& options)
    : model_owner_(checked(std::move(model), options)),
      model_(*model_owner_),
      options_(options),
      ws_(model_) {
  t0_ = model_.v0[model_.slot_time];
  t_ = t0_;
  t_end_ = options.t_end;
  const double r = (t_end_ - t0_) / options.h;
  const double nearest = std::round(r);
  // A grid that fits up to rounding gets exactly that many steps; otherwise the last is shorter.
  n_steps_ = static_cast<int64_t>(std::fabs(r - nearest) <= 1e-9 * std::max(1.0, r) ? nearest
                                                                                    : std::ceil(r));
  n_steps_ = std::max<int64_t>(n_steps_, 1);
  h_try_ = options.h;
  h_min_ = options.effective_h_min();
}

std::span<const double> Integrator::evaluate_outputs() {
  if (!model_.outputs.fn) return {};
  model_.outputs(ws_.v.data(), ws_.outputs.data());  // non-finite outputs are written as such
  return ws_.outputs;
}

int Integrator::emit(const Observer& observer) {
  last_output_ = n_done_;
  return observer(t_, evaluate_outputs());
}

void Integrator::fail(const AttemptFailure& a, FailurePhase phase, double h, int32_t halvings) {
  FailureRecord f;
  f.kind = a.kind;
  f.phase = phase;
  f.solver = name();
  f.t = t_;
  f.h = phase == FailurePhase::Step ? h : 0.0;
  f.h_min = h_min_;
  f.halvings = halvings;
  f.kernel_status = a.kernel_status;
  f.equation = a.equation;
  f.residual = a.residual;
  f.unknown = a.unknown;
  f.update = a.update;
  f.message = render_failure(f, model_);
  failure_ = std::move(f);
}

std::unique_ptr<Integrator> make_integrator(const CompiledModel& model,
                                            const SolverOptions& options) {
  return make_integrator(std::make_shared<const CompiledModel>(model), options);
}

std::unique_ptr<Integrator> make_integrator(std::shared_ptr<const CompiledModel> model,
                                            const SolverOptions& options) {
  switch (options.solver) {
    case SolverKind::GenAlpha:
    case SolverKind::Newmark:
    case SolverKind::Trapezoidal:
      return std::make_unique<NewmarkFamily>(model, options);
    default:
      break;
  }
  if (is_explicit(options.solver)) return make_explicit_integrator(model, options);
  throw SolverSetupError(std::string("the solver '") + std::string(solver_name(options.solver)) +
                         "' is not available yet");
}

}  // namespace mbs::rt
