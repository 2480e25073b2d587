#include "runtime/solvers/Integrator.h"

#include <fmt/format.h>

#include <algorithm>

#include "runtime/linalg/DenseLu.h"
#include "runtime/model/Constraints.h"
#include "runtime/model/Events.h"
#include "runtime/solvers/Explicit.h"
#include "runtime/solvers/GenAlpha.h"
#include "runtime/solvers/ModelCheck.h"

namespace mbs::rt {

namespace {

std::string location_of(const SourceRef& s) {
  return s.file.empty() ? std::string("model") : fmt::format("{}:{}:{}", s.file, s.line, s.col);
}

// Validates before anything is sized from the model.
std::shared_ptr<const CompiledModel> checked(std::shared_ptr<const CompiledModel> model,
                                             const SolverOptions& o) {
  if (!model) throw SolverSetupError("no model");
  const CompiledModel& m = *model;
  if (auto err = validate(o)) throw SolverSetupError(*err);
  check_model(m);
  if (m.has_events()) {
    // A reinit in a constrained model: new positions are projected on the constraints and new
    // velocities made consistent by an impulse (Integrator::project_velocities), both where the
    // equations have the impulse's form.
    bool constrained = false;
    for (EquationLevel l : m.eq_level)
      constrained |= l == EquationLevel::Position || l == EquationLevel::Velocity;
    const bool impulse = impulse_form(m);
    for (size_t r = 0; r < m.reinit_slot.size() && constrained; ++r) {
      const bool position =
          std::find(m.q_slot.begin(), m.q_slot.end(), m.reinit_slot[r]) != m.q_slot.end();
      const bool velocity =
          std::find(m.qd_slot.begin(), m.qd_slot.end(), m.reinit_slot[r]) != m.qd_slot.end();
      if ((position || velocity) && !impulse)
        throw SolverSetupError(fmt::format(
            "{}: model '{}' reinitialises {} of a system with constraints ({}); {}",
            location_of(m.reinit_source[r]), m.name, position ? "a coordinate" : "a velocity",
            m.reinit_source[r].text,
            position ? "new positions are projected on the constraints, and new velocities "
                       "made consistent by an impulse, only in models whose equations are "
                       "equations of motion with position-level constraints and their "
                       "multipliers (no first-order states, no velocity-level or algebraic rows)"
                     : "new velocities are made consistent by an impulse only in models whose "
                       "equations are equations of motion with position-level constraints and "
                       "their multipliers (no first-order states, no velocity-level or "
                       "algebraic rows)"));
    }
  }
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
      ws_(model_),
      charts_(model_) {
  set_grid(model_.v0[model_.slot_time], options.t_end);
  t_ = t0_;
  h_try_ = options.h;
  h_min_ = options.effective_h_min();
}

void Integrator::set_grid(double t0, double t_end) {
  if (!(t_end > t0) || !std::isfinite(t0) || !std::isfinite(t_end))
    throw SolverSetupError(
        fmt::format("the end time {} must be finite and larger than the start time {} (model '{}')",
                    t_end, t0, model_.name));
  t0_ = t0;
  t_end_ = t_end;
  const double r = (t_end_ - t0_) / options_.h;
  const double nearest = std::round(r);
  // A grid that fits up to rounding gets exactly that many steps; otherwise the last is shorter.
  n_steps_ = static_cast<int64_t>(std::fabs(r - nearest) <= 1e-9 * std::max(1.0, r) ? nearest
                                                                                    : std::ceil(r));
  n_steps_ = std::max<int64_t>(n_steps_, 1);
  n_done_ = 0;
  last_output_ = -1;
}

SolveStatus Integrator::advance_to(double t_stop) {
  if (failure_) return SolveStatus::Failed;
  if (!initialized_ && initialize() == SolveStatus::Failed) return SolveStatus::Failed;
  if (!(t_stop >= t_) || !std::isfinite(t_stop))
    throw SolverSetupError(
        fmt::format("advance_to: t_stop = {} is before the current time {}", t_stop, t_));
  // Within rounding of the current time: nothing to do (a step that short would be a sliver).
  if (t_stop - t_ <= 1e-12 * std::max(1.0, std::fabs(t_))) return SolveStatus::Ok;
  set_grid(t_, t_stop);
  for (;;) {
    const SolveStatus st = step();
    if (st == SolveStatus::Finished) return SolveStatus::Ok;
    if (st != SolveStatus::Ok) return st;
  }
}

void Integrator::set_input(size_t i, double value) {
  if (i >= model_.input_slot.size())
    throw SolverSetupError(fmt::format("set_input: input {} of {}", i, model_.input_slot.size()));
  double& slot = ws_.v[static_cast<size_t>(model_.input_slot[i])];
  // std::memcmp-like identity: a value set again unchanged (also NaN) does not restart
  if (slot == value || (std::isnan(slot) && std::isnan(value))) return;
  slot = value;
  restart_pending_ = initialized_;
}

void Integrator::set_parameters(std::span<const double> v) {
  if (v.size() != ws_.v.size())
    throw SolverSetupError(
        fmt::format("set_parameters: {} values for a symbol vector of {}", v.size(), ws_.v.size()));
  bool changed = false;
  for (const int32_t s : model_.parameter_slot) {
    const auto k = static_cast<size_t>(s);
    changed |= ws_.v[k] != v[k];
    ws_.v[k] = v[k];
  }
  if (changed) restart_pending_ = initialized_;
}

bool Integrator::restart() {
  return true;
}

bool Integrator::apply_restart() {
  if (!restart_pending_) return true;
  restart_pending_ = false;
  events_valid_ = false;
  return restart();
}

// ---- events

void Integrator::take_state_from_v() {}

void Integrator::charts_moved() {}

bool Integrator::evaluate_events(std::vector<double>& out, double h) {
  const Kernel& k = model_.events;
  out.resize(static_cast<size_t>(k.n_out));
  const int32_t st = k(ws_.v.data(), out.data());
  if (st >= 0) return true;  // a non-finite crossing value only changes no sign
  AttemptFailure a;
  a.kind = FailureKind::KernelFatal;
  a.kernel_status = st;
  fail(a, FailurePhase::Step, h, 0);
  return false;
}

bool Integrator::event_between(const std::vector<double>& now) const {
  const size_t nc = static_cast<size_t>(model_.n_crossings);
  for (size_t b = nc; b < now.size(); ++b)
    if (ev_old_[b] == 0.0 && now[b] != 0.0) return true;
  return switched(now);
}

bool Integrator::switched(const std::vector<double>& now) const {
  const auto nc = static_cast<size_t>(model_.n_crossings);
  for (size_t k = nc - static_cast<size_t>(model_.n_switches); k < nc; ++k)
    if ((ev_old_[k] < 0.0) != (now[k] < 0.0)) return true;
  return false;
}

// Coordinates that a reinit moved are kept and the others projected on the position
// constraints (rt::project_positions); then an impulse of the constraint forces makes the
// velocities consistent again (rt::project_velocities_by_impulse). Nothing to do for a model
// without constraints (impulse_form() was checked at creation for the others).
bool Integrator::project_velocities() {
  if (model_.n_z == 0 || !impulse_form(model_)) return true;
  std::vector<int32_t> moved;
  for (int32_t i = 0; i < model_.n_q && !q_before_event_.empty(); ++i)
    if (ws_.v[model_.q_slot[i]] != q_before_event_[static_cast<size_t>(i)]) moved.push_back(i);
  std::string why = moved.empty() ? "" : project_positions(model_, ws_.v, moved);
  if (why.empty()) why = project_velocities_by_impulse(model_, ws_.v);
  if (why.empty()) return true;
  FailureRecord f = step_record(FailureKind::ReinitInconsistent, h_last_, h_min_);
  std::string notes = fmt::format("note: {}\n", why);
  if (!moved.empty()) {
    std::string names;
    for (int32_t i : moved) names += (names.empty() ? "'" : ", '") + unknown_name(model_, i) + "'";
    notes += fmt::format(
        "note: the reinit set {} and keeps those values; the other coordinates were to be "
        "moved to satisfy the constraints\n",
        names);
  }
  f.message = render_event_failure(f, notes);
  failure_ = std::move(f);
  return false;
}

bool Integrator::prepare_events() {
  if (!model_.has_events() || events_valid_) return true;
  if (!evaluate_events(ev_old_, h_try_)) return false;
  events_valid_ = true;
  return true;
}

bool Integrator::fire_events() {
  const CompiledModel& m = model_;
  if (!evaluate_events(ev_try_, h_last_)) return false;
  // the first branch of each when whose condition rose
  std::vector<int32_t>& fired = fired_;
  rising_branches(m, ev_old_, ev_try_, fired);
  const bool switch_changed = switched(ev_try_);
  if (fired.empty() && !switch_changed) {  // cannot happen: the step was located on one
    ev_old_.swap(ev_try_);
    return true;
  }
  // chattering: events in a row, each within 100 event tolerances of the one before
  const double close = 100.0 * options_.event_tolerance * std::max(1.0, std::fabs(t_));
  event_burst_ = t_ - last_event_t_ <= close ? event_burst_ + 1 : 1;
  last_event_t_ = t_;
  if (event_burst_ > options_.chatter_limit) {
    FailureRecord f = step_record(FailureKind::Chattering, close, h_min_);
    f.count = event_burst_;
    f.branch = fired.empty() ? -1 : fired.back();
    f.message = render_failure(f, m);
    failure_ = std::move(f);
    return false;
  }
  ++stats_.events;
  if (event_observer_ && *event_observer_) {  // the row just before the event
    if (const int e = emit(*event_observer_); e != 0) {
      if (e == kEmitFailed) return false;
      stop_requested_ = true;
    }
  }
  if (!apply_fired()) return false;
  last_output_ = -1;  // the current point is not a grid point already written
  if (event_observer_ && *event_observer_ && !stop_requested_) {  // the row just after
    if (const int e = emit(*event_observer_); e != 0) {
      if (e == kEmitFailed) return false;
      stop_requested_ = true;
    }
    last_output_ = -1;
  }
  return true;
}

bool Integrator::apply_fired() {
  const CompiledModel& m = model_;
  q_before_event_.resize(static_cast<size_t>(m.n_q));  // project_velocities: what a reinit moved
  for (int32_t i = 0; i < m.n_q; ++i) q_before_event_[i] = ws_.v[m.q_slot[i]];
  const EventOutcome e = apply_event(m, ws_.v, fired_, ev_try_, ev_iter_, reinit_values_);
  if (e.kind == EventOutcome::Kind::NotSettled) {
    FailureRecord f = step_record(FailureKind::EventNotSettled, h_last_, h_min_);
    f.branch = e.branch;
    f.message = render_event_failure(f, "note: " + event_iteration_cause(m, e.branch) + "\n");
    failure_ = std::move(f);
    return false;
  }
  if (e.kind == EventOutcome::Kind::KernelFailed) {
    AttemptFailure a;
    a.kind = e.reinit_kernel && e.kernel_status > 0 ? FailureKind::NonFiniteResidual
                                                    : FailureKind::KernelFatal;
    a.kernel_status = e.kernel_status;
    fail(a, FailurePhase::Step, h_last_, 0);
    return false;
  }
  if (!project_velocities()) return false;
  take_state_from_v();
  if (!restart()) return false;
  if (!evaluate_events(ev_old_, h_last_)) return false;
  events_valid_ = true;
  return true;
}

bool Integrator::initial_event() {
  const CompiledModel& m = model_;
  if (!m.has_events() || m.slot_initial < 0) return true;
  ws_.v[static_cast<size_t>(m.slot_initial)] = 1.0;
  if (!evaluate_events(ev_iter_, 0.0)) return false;
  ws_.v[static_cast<size_t>(m.slot_initial)] = 0.0;
  initial_branches(m, ev_iter_, fired_);
  if (fired_.empty()) return true;
  if (!evaluate_events(ev_try_, 0.0)) return false;  // the basis of the iteration
  ++stats_.events;
  return apply_fired();
}

bool Integrator::terminal_event() {
  const CompiledModel& m = model_;
  if (!m.has_events() || m.slot_terminal < 0 || failure_) return !failure_;
  if (!prepare_events()) return false;
  const auto slot = static_cast<size_t>(m.slot_terminal);
  ws_.v[slot] = 1.0;
  if (!evaluate_events(ev_try_, h_last_)) return false;
  rising_branches(m, ev_old_, ev_try_, fired_);
  if (fired_.empty()) {
    ws_.v[slot] = 0.0;
    return true;
  }
  ++stats_.events;
  const bool ok = apply_fired();
  ws_.v[slot] = 0.0;
  events_valid_ = false;
  if (!ok) return false;
  if (event_observer_ && *event_observer_) {  // the row after (the one before was written)
    if (emit(*event_observer_) == kEmitFailed) return false;
  }
  return true;
}

namespace {

// The fields of the base class a snapshot holds, as doubles.
constexpr size_t kBaseFields = 13;

}  // namespace

bool Integrator::save(std::vector<double>& out) {
  if (failure_) return false;
  out.clear();
  out.push_back(static_cast<double>(ws_.v.size()));
  out.insert(out.end(),
             {t0_, t_end_, t_, h_try_, static_cast<double>(n_steps_), static_cast<double>(n_done_),
              static_cast<double>(last_output_), static_cast<double>(success_streak_),
              initialized_ ? 1.0 : 0.0, h_last_, state_scale_,
              static_cast<double>(interval_rejections_), restart_pending_ ? 1.0 : 0.0});
  out.insert(out.end(), ws_.v.begin(), ws_.v.end());
  save_method(out);
  return true;
}

bool Integrator::restore(std::span<const double> in) {
  const size_t nv = ws_.v.size();
  if (in.size() < 1 + kBaseFields + nv || in[0] != static_cast<double>(nv)) return false;
  // the method's part first: it checks its sizes before anything changes
  size_t pos = 1 + kBaseFields + nv;
  if (!restore_method(in, pos) || pos != in.size()) return false;
  const double* b = in.data() + 1;
  t0_ = b[0];
  t_end_ = b[1];
  t_ = b[2];
  h_try_ = b[3];
  n_steps_ = static_cast<int64_t>(b[4]);
  n_done_ = static_cast<int64_t>(b[5]);
  last_output_ = static_cast<int64_t>(b[6]);
  success_streak_ = static_cast<int32_t>(b[7]);
  initialized_ = b[8] != 0.0;
  h_last_ = b[9];
  state_scale_ = b[10];
  interval_rejections_ = static_cast<int64_t>(b[11]);
  restart_pending_ = b[12] != 0.0;
  std::copy_n(b + kBaseFields, nv, ws_.v.begin());
  events_valid_ = false;
  event_burst_ = 0;
  failure_.reset();
  skip_final_emit_ = false;
  return true;
}

void Integrator::save_method(std::vector<double>&) {}

bool Integrator::restore_method(std::span<const double>, size_t&) {
  return true;
}

// Appends a vector with its size; reads one back if the size matches.
void save_vector(std::vector<double>& out, const std::vector<double>& x) {
  out.push_back(static_cast<double>(x.size()));
  out.insert(out.end(), x.begin(), x.end());
}

bool check_vector(std::span<const double> in, size_t& pos, size_t n) {
  if (pos >= in.size() || in[pos] != static_cast<double>(n) || in.size() - pos - 1 < n)
    return false;
  pos += 1 + n;
  return true;
}

void load_vector(std::span<const double> in, size_t& pos, std::vector<double>& x) {
  ++pos;
  std::copy_n(in.begin() + static_cast<std::ptrdiff_t>(pos), x.size(), x.begin());
  pos += x.size();
}

void Integrator::set_start(std::span<const double> v) {
  if (initialized_ || n_done_ > 0)
    throw SolverSetupError("set_start: the integrator has already started");
  if (v.size() != ws_.v.size())
    throw SolverSetupError(
        fmt::format("set_start: {} values for a symbol vector of {}", v.size(), ws_.v.size()));
  const double t0 = v[static_cast<size_t>(model_.slot_time)];
  if (t0 != t0_) {
    set_grid(t0, t_end_);
    t_ = t0;
  }
  std::copy(v.begin(), v.end(), ws_.v.begin());
}

void Integrator::enable_sensitivities(std::vector<SensitivityDirection> directions) {
  const auto& m = model_;
  if (initialized_)
    throw SolverSetupError("exact sensitivities must be enabled before the run starts");
  if (!charts_.empty())
    throw SolverSetupError(
        "exact sensitivities of rotations integrated as a Lie group (lie_group = true) are not "
        "available: use the quaternion form");
  if (!m.has_sensitivities())
    throw SolverSetupError(
        fmt::format("model '{}' was compiled without the kernels of exact sensitivities", m.name));
  const size_t np = m.parameters.size(), ns = static_cast<size_t>(2 * m.n_q + m.n_y);
  for (const auto& d : directions)
    if (d.dp.size() != np || d.start.size() != ns)
      throw SolverSetupError("a sensitivity direction has the wrong size");
  if (m.n_whens() > 0)
    throw SolverSetupError(
        fmt::format("exact sensitivities are not available for model '{}': it has events "
                    "(when-equations), across which the discrete solution is not differentiable "
                    "as the sensitivity recurrences assume; use finite differences "
                    "(--sensitivity-method fd)",
                    m.name));
  directions_ = std::move(directions);
  n_directions_ = static_cast<int32_t>(directions_.size());
  sens_output_values_.assign(static_cast<size_t>(m.sens_outputs.nnz()), 0.0);
  sens_w_.assign(3 * static_cast<size_t>(m.n_q) + 2 * static_cast<size_t>(m.n_y) +
                     static_cast<size_t>(m.n_z) + np,
                 0.0);
  try {
    prepare_sensitivities();
  } catch (...) {
    directions_.clear();
    n_directions_ = 0;
    throw;
  }
}

void Integrator::prepare_sensitivities() {
  throw SolverSetupError(
      fmt::format("exact sensitivities are not available with --solver {}: use finite differences "
                  "(--sensitivity-method fd)",
                  name()));
}

void Integrator::sensitivity_state(size_t, double*) const {}

void Integrator::output_sensitivities(std::span<double> out) {
  const auto& m = model_;
  const auto n_out = static_cast<size_t>(std::max(m.outputs.n_out, 0));
  if (n_directions_ == 0 || out.size() != static_cast<size_t>(n_directions_) * n_out)
    throw SolverSetupError("output_sensitivities: no directions or a wrong size");
  const SparseKernel& K = m.sens_outputs;
  K.values(ws_.v.data(), sens_output_values_.data());
  std::fill(out.begin(), out.end(), 0.0);
  const size_t n_state = sens_w_.size() - m.parameters.size();  // [q|qd|qdd|y|yd|z]
  for (size_t k = 0; k < directions_.size(); ++k) {
    sensitivity_state(k, sens_w_.data());
    std::copy(directions_[k].dp.begin(), directions_[k].dp.end(),
              sens_w_.begin() + static_cast<std::ptrdiff_t>(n_state));
    double* o = out.data() + k * n_out;
    for (int32_t e = 0; e < K.nnz(); ++e) o[K.row[e]] += sens_output_values_[e] * sens_w_[K.col[e]];
  }
}

std::span<const double> Integrator::evaluate_outputs() {
  if (!model_.outputs.fn) return {};
  model_.outputs(ws_.v.data(), ws_.outputs.data());  // non-finite outputs are returned as such
  return ws_.outputs;
}

int Integrator::emit(const Observer& observer) {
  last_output_ = n_done_;
  if (skip_final_emit_) return kEmitFailed;
  if (!model_.outputs.fn) return observer(t_, {});
  const int32_t st = model_.outputs(ws_.v.data(), ws_.outputs.data());
  if (st < 0 && !failure_) {
    AttemptFailure a;
    a.kind = FailureKind::KernelFatal;
    a.kernel_status = st;
    fail(a, FailurePhase::Step, h_last_ > 0.0 ? h_last_ : h_try_, 0);
    return kEmitFailed;
  }
  if (st > 0) {
    const double h = h_last_ > 0.0 ? h_last_ : h_try_;
    if (failure_) return kEmitFailed;  // the run failed already; this point is not written
    if (options_.nonfinite == NonFiniteAction::Error) {
      failure_ = nonfinite_output_failure(model_, ws_.outputs, name(), t_, h);
      return kEmitFailed;
    }
    if (!nonfinite_warned_) {
      nonfinite_warned_ = true;
      FailureRecord f = nonfinite_output_failure(model_, ws_.outputs, name(), t_, h);
      warnings_.push_back(nonfinite_output_warning(f, model_));
      if (progress_sink_) progress_sink_->warning(warnings_.back());
    }
  }
  return observer(t_, ws_.outputs);
}

int32_t Integrator::largest_state(double& value) const {
  const double* v = ws_.v.data();
  const CompiledModel& m = model_;
  int32_t best = -1;
  value = 0.0;
  double magnitude = 0.0;  // value, with NaN as infinity: NaN counts as the largest
  const auto see = [&](double x, int32_t i) {
    const double a = std::fabs(x);
    const double key = std::isnan(a) ? std::numeric_limits<double>::infinity() : a;
    if (key > magnitude || (best < 0 && key >= magnitude)) magnitude = key, value = a, best = i;
  };
  for (int32_t i = 0; i < m.n_q; ++i) see(v[m.q_slot[i]], i);
  for (int32_t i = 0; i < m.n_q; ++i) see(v[m.qd_slot[i]], m.n_q + i);
  for (int32_t j = 0; j < m.n_y; ++j) see(v[m.y_slot[j]], 2 * m.n_q + j);
  return best;
}

bool Integrator::check_divergence(double h) {
  const double* v = ws_.v.data();
  const CompiledModel& m = model_;
  const double limit = options_.divergence_limit;
  bool out = false;
  // One pass without branches taken in the usual case; the details only on failure.
  for (int32_t i = 0; i < m.n_q; ++i) {
    out |= !(std::fabs(v[m.q_slot[i]]) <= limit) || !(std::fabs(v[m.qd_slot[i]]) <= limit);
  }
  for (int32_t j = 0; j < m.n_y; ++j) out |= !(std::fabs(v[m.y_slot[j]]) <= limit);
  if (!out) [[likely]]
    return true;
  FailureRecord f = step_record(FailureKind::Diverged, h, h_min_);
  f.state = largest_state(f.value);
  f.scale = state_scale_;
  f.message = render_failure(f, model_);
  failure_ = std::move(f);
  skip_final_emit_ = true;
  return false;
}

void Integrator::fail_step(double h, bool from_t, bool too_many) {
  const AttemptFailure& a = attempt_failure_;
  FailureRecord f = step_record(a.kind, h, from_t ? step_floor() : h_min_);
  f.halvings = std::max(static_cast<int32_t>(std::lround(std::log2(options_.h / h))), 0);
  f.kernel_status = a.kernel_status;
  f.equation = a.equation;
  f.residual = a.residual;
  f.unknown = a.unknown;
  f.update = a.update;
  f.count = static_cast<int32_t>(std::min<int64_t>(interval_rejections_, INT32_MAX));
  double largest = 0.0;
  const int32_t component = largest_state(largest);
  if (!(largest <= kDivergedGrowth * state_scale_)) {
    f.kind = FailureKind::Diverged;
  } else if (too_many) {
    f.kind = FailureKind::TooManyRejections;
  } else if (from_t) {
    f.kind = FailureKind::StepCollapsed;
  }
  if (f.kind != a.kind) {
    f.cause = a.kind;
    f.has_cause = true;
    f.state = component;
    f.value = largest;
    f.scale = state_scale_;
  }
  f.message = render_failure(f, model_);
  failure_ = std::move(f);
}

void Integrator::start_progress() {
  progress_.start(progress_sink_, name(), "t", t0_, t_end_);
}

void Integrator::mark_initialized() {
  initialized_ = true;
  double largest = 0.0;
  largest_state(largest);
  state_scale_ = std::isfinite(largest) ? std::max(1.0, largest) : 1.0;
}

FailureRecord Integrator::step_record(FailureKind kind, double h, double h_min) const {
  FailureRecord f;
  f.kind = kind;
  f.phase = FailurePhase::Step;
  f.solver = name();
  f.t = t_;
  f.h = h;
  f.h_min = h_min;
  return f;
}

void Integrator::fail(const AttemptFailure& a, FailurePhase phase, double h, int32_t halvings) {
  FailureRecord f = step_record(a.kind, phase == FailurePhase::Step ? h : 0.0, h_min_);
  f.phase = phase;
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
