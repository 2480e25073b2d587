// One FMU instance without FMI's C types (Unit.h).
#include "runtime/fmi/Unit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <utility>

#include "runtime/model/Events.h"

namespace mbs::rt::fmi {

const char* status_name(Status s) {
  switch (s) {
    case Status::Ok:
      return "ok";
    case Status::Warning:
      return "warning";
    case Status::Discard:
      return "discard";
    case Status::Error:
      return "error";
    case Status::Fatal:
      return "fatal";
  }
  return "?";
}

Unit::Unit(std::shared_ptr<const CompiledModel> model,
           std::shared_ptr<const VariableTable> variables, const SolverOptions& options, Kind kind)
    : model_(std::move(model)),
      vars_(std::move(variables)),
      defaults_(options),
      options_(options),
      kind_(kind),
      instance_(model_),
      charts_(*model_) {
  if (kind_ == Kind::ModelExchange) obstacle_ = model_exchange_obstacle(*model_);
  reset();
}

void Unit::reset() {
  instance_.reset();
  options_ = defaults_;
  const CompiledModel& m = *model_;
  inputs_.clear();
  for (const int32_t s : m.input_slot) inputs_.push_back(m.v0[static_cast<size_t>(s)]);
  start_ = m.v0[static_cast<size_t>(m.slot_time)];
  stop_.reset();
  initialized_ = false;
  integrator_.reset();
  rhs_.reset();
  cs_rhs_.reset();
  start_dirty_ = true;
  parameters_changed_ = true;
  conditions_.clear();
  initial_states_changed_ = false;
  changed();
  message_.clear();
}

Status Unit::error(std::string message) {
  message_ = std::move(message);
  return Status::Error;
}

const Variable* Unit::variable(uint32_t vr) {
  if (vr >= vars_->vars.size()) {
    message_ = fmt::format("{} is not a value reference of model '{}' (there are {})", vr,
                           model_->name, vars_->vars.size());
    return nullptr;
  }
  return &vars_->vars[vr];
}

int32_t Unit::input_index(const Variable& v) const {
  for (size_t i = 0; i < model_->input_slot.size(); ++i)
    if (model_->input_slot[i] == v.slot) return static_cast<int32_t>(i);
  return -1;
}

bool Unit::rebuild_start() {
  if (!start_dirty_) return true;
  try {
    v_ = instance_.start_vector();
  } catch (const std::exception& e) {
    message_ = e.what();
    return false;
  }
  const CompiledModel& m = *model_;
  v_[static_cast<size_t>(m.slot_time)] = start_;
  for (size_t i = 0; i < inputs_.size(); ++i) v_[static_cast<size_t>(m.input_slot[i])] = inputs_[i];
  start_dirty_ = false;
  changed();
  return true;
}

double Unit::time() const {
  if (integrator_) return integrator_->time();
  if (initialized_) return v_[static_cast<size_t>(model_->slot_time)];
  return start_;
}

Status Unit::setup_experiment(std::optional<double> tolerance, double start,
                              std::optional<double> stop) {
  if (initialized_) return error("the experiment cannot be set up after initialization");
  if (!std::isfinite(start)) return error(fmt::format("the start time {} is not finite", start));
  if (stop && !(*stop > start))
    return error(fmt::format("the stop time {} is not after the start time {}", *stop, start));
  if (tolerance) {
    if (!(*tolerance > 0.0) || !std::isfinite(*tolerance))
      return error(fmt::format("the tolerance {} is not a positive number", *tolerance));
    options_.rtol = *tolerance;
  }
  start_ = start;
  stop_ = stop;
  start_dirty_ = true;
  return Status::Ok;
}

Status Unit::exit_initialization() {
  if (initialized_) return error("the unit is initialized already");
  if (!obstacle_.empty()) return error("model exchange is not available: " + obstacle_);
  if (!rebuild_start()) return Status::Error;
  const CompiledModel& m = *model_;
  // the grid's end only matters for the checks of make_integrator: steps go where do_step says
  double t_end = stop_ ? *stop_ : defaults_.t_end;
  t_end =
      std::max({t_end, start_ + options_.h, m.v0[static_cast<size_t>(m.slot_time)] + options_.h});
  try {
    SolverOptions o = options_;
    o.t_end = t_end;
    if (kind_ == Kind::CoSimulation) {
      integrator_ = make_integrator(model_, o);
      integrator_->set_start(v_);
      if (integrator_->initialize() == SolveStatus::Failed) {
        std::string msg = integrator_->failure() ? integrator_->failure()->message : "failed";
        integrator_.reset();
        return error(std::move(msg));
      }
    } else {
      o.solver = SolverKind::Euler;
      rhs_ = std::make_unique<ExplicitRk>(model_, o);
    }
  } catch (const std::exception& e) {
    integrator_.reset();
    rhs_.reset();
    return error(e.what());
  }
  initialized_ = true;
  parameters_changed_ = true;
  changed();
  if (kind_ == Kind::ModelExchange && m.has_events()) {
    // the event at the start, as Integrator::initialize ends: the branches whose condition reads
    // initial() and is true with initial() = 1 fire, with the event iteration
    bool states_changed = false;
    if (m.slot_initial >= 0) {
      v_[static_cast<size_t>(m.slot_initial)] = 1.0;
      changed();
      const bool ok = evaluate_events(ev_now_);
      v_[static_cast<size_t>(m.slot_initial)] = 0.0;
      changed();
      if (!ok) return Status::Error;
      initial_branches(m, ev_now_, fired_);
    }
    if (m.slot_initial >= 0 && !fired_.empty()) {
      if (!evaluate_events(ev_now_) || !fire(ev_now_, states_changed)) return Status::Error;
    } else if (!evaluate_events(conditions_)) {
      return Status::Error;
    }
    initial_states_changed_ = states_changed;  // reported by the event mode that follows
  }
  return Status::Ok;
}

bool Unit::ensure_derivatives() {
  if (derivatives_valid_) return true;
  if (!rhs_) {
    message_ = "the derivatives are available after initialization (model exchange)";
    return false;
  }
  derivatives_.resize(n_states());
  std::string why = rhs_->evaluate_derivative(v_, derivatives_, parameters_changed_);
  if (!why.empty()) {
    message_ = std::move(why);
    return false;
  }
  parameters_changed_ = false;
  derivatives_valid_ = true;
  return true;
}

std::span<const double> Unit::symbols() {
  if (integrator_) return integrator_->symbols();
  if (rhs_ && derivatives_valid_) return rhs_->symbols();
  return v_;
}

bool Unit::ensure_outputs() {
  if (outputs_valid_) return true;
  const CompiledModel& m = *model_;
  if (!m.outputs.fn) {
    message_ = "the model has no outputs kernel";
    return false;
  }
  outputs_.resize(static_cast<size_t>(m.outputs.n_out));
  const int32_t st = m.outputs(symbols().data(), outputs_.data());
  if (st < 0) {
    message_ = fmt::format("the outputs kernel failed at t = {} (status {})", time(), st);
    return false;
  }
  outputs_valid_ = true;  // non-finite values are returned as such
  return true;
}

Status Unit::get_float64(std::span<const uint32_t> vrs, std::span<double> values) {
  if (vrs.size() != values.size()) return error("get: as many values as value references needed");
  if (!initialized_ && !rebuild_start()) return Status::Error;
  if (rhs_ && !ensure_derivatives()) return Status::Error;
  for (size_t k = 0; k < vrs.size(); ++k) {
    const Variable* v = variable(vrs[k]);
    if (!v) return Status::Error;
    if (v->option >= 0) {
      const OptionSpec& spec = option_table()[static_cast<size_t>(v->option)];
      values[k] = option_number(options_, spec);
    } else if (v->column >= 0) {
      if (!ensure_outputs()) return Status::Error;
      values[k] = outputs_[static_cast<size_t>(v->column)];
    } else if (v->indicator >= 0) {
      if (!evaluate_events(ev_now_)) return Status::Error;
      values[k] = ev_now_[static_cast<size_t>(v->indicator)];
    } else if (v->slot >= 0) {
      values[k] = symbols()[static_cast<size_t>(v->slot)];
    } else {
      return error(fmt::format("variable '{}' has no value", v->name));
    }
  }
  return Status::Ok;
}

Status Unit::set_float64(std::span<const uint32_t> vrs, std::span<const double> values) {
  if (vrs.size() != values.size()) return error("set: as many values as value references needed");
  for (size_t k = 0; k < vrs.size(); ++k) {
    const Variable* v = variable(vrs[k]);
    if (!v) return Status::Error;
    const double x = values[k];
    try {
      if (v->option >= 0) {
        // a solver option: before initialization; checked with the others when the solver is
        // made (exit_initialization)
        if (initialized_)
          return error(
              fmt::format("the solver parameter '{}' cannot be set after initialization", v->name));
        const OptionSpec& spec = option_table()[static_cast<size_t>(v->option)];
        if (spec.type == OptionType::Integer && x != std::floor(x))
          return error(fmt::format("cannot set '{}' = {}: it takes whole numbers", v->name, x));
        const std::string text =
            spec.type == OptionType::Integer ? fmt::format("{:.0f}", x) : fmt::format("{:.17g}", x);
        if (std::optional<std::string> why = set_option(options_, spec.key, text))
          return error(fmt::format("cannot set '{}' = {}: {}", v->name, x, *why));
      } else if (v->variability == Variability::Constant) {
        std::string why;
        const CompiledModel& m = *model_;
        for (size_t p = 0; p < m.parameters.size() && p < m.parameter_compile_time.size(); ++p)
          if (m.parameter_slot[p] == v->slot) why = m.parameter_compile_time[p];
        return error(fmt::format(
            "'{}' is a constant of the FMU: the compiler used its value{}; a new value needs a "
            "new export",
            v->name, why.empty() ? std::string() : " (" + why + ")"));
      } else if (v->causality == Causality::CalculatedParameter) {
        return error(fmt::format(
            "'{}' is a calculated parameter: its binding computes it from other parameters; set "
            "those",
            v->name));
      } else if (v->causality == Causality::Parameter) {
        if (initialized_ && v->variability == Variability::Fixed)
          return error(
              fmt::format("the fixed parameter '{}' cannot be set after initialization", v->name));
        // checked at once (bounds, derived parameters), and undone if refused
        Instance before = instance_;
        try {
          instance_.set_parameter(v->name, x);
          instance_.start_vector();
        } catch (...) {
          instance_ = std::move(before);
          throw;
        }
        if (!initialized_) {
          start_dirty_ = true;
        } else {
          const std::vector<double>& sv = instance_.start_vector();  // derived ones follow
          if (integrator_) integrator_->set_parameters(sv);
          for (const int32_t s : model_->parameter_slot)
            v_[static_cast<size_t>(s)] = sv[static_cast<size_t>(s)];
          parameters_changed_ = true;
        }
      } else if (v->causality == Causality::Input) {
        const int32_t i = input_index(*v);
        if (i < 0) return error(fmt::format("input '{}' has no slot", v->name));
        inputs_[static_cast<size_t>(i)] = x;
        if (integrator_) integrator_->set_input(static_cast<size_t>(i), x);
        if (!v_.empty()) v_[static_cast<size_t>(v->slot)] = x;
      } else if (v->initial == Initial::Exact && v->causality != Causality::Independent) {
        if (initialized_)
          return error(fmt::format(
              "the start value of '{}' cannot be set after initialization{}", v->name,
              kind_ == Kind::ModelExchange ? " (set the continuous states instead)" : ""));
        Instance before = instance_;
        try {
          instance_.set_start(v->name, x);
          instance_.start_vector();
        } catch (...) {
          instance_ = std::move(before);
          throw;
        }
        start_dirty_ = true;
      } else {
        return error(fmt::format(
            "variable '{}' is {} and cannot be set", v->name,
            v->causality == Causality::Independent ? "the independent time" : "calculated"));
      }
    } catch (const std::exception& e) {
      return error(fmt::format("cannot set '{}' = {}: {}", v->name, x, e.what()));
    }
    changed();
  }
  return Status::Ok;
}

Status Unit::do_step(double t_current, double h) {
  if (kind_ != Kind::CoSimulation) return error("do_step: not a co-simulation unit");
  if (!initialized_ || !integrator_) return error("do_step before initialization");
  const double t = integrator_->time();
  if (!(std::fabs(t_current - t) <= 1e-9 * std::max(1.0, std::fabs(t))))
    return error(fmt::format("do_step from t = {} but the unit is at t = {}", t_current, t));
  if (!(h >= 0.0) || !std::isfinite(h))
    return error(fmt::format("do_step with the step size {}", h));
  const double target = std::max(t, t_current + h);
  if (stop_ && target > *stop_ + 1e-9 * std::max(1.0, std::fabs(*stop_)))
    return error(fmt::format("do_step to t = {} goes beyond the stop time {}", target, *stop_));
  // the solver's step must stay above the floor of --step at the target (doStep(0, 1e300) never
  // returned: at t = 1e300 a step of 1e-3 does not move time)
  const double floor =
      kMinStepUlps * std::numeric_limits<double>::epsilon() * std::max(1.0, std::fabs(target));
  if (!(options_.h >= floor))
    return error(fmt::format(
        "do_step to t = {} cannot be completed: the solver's step {} is below the smallest step "
        "time can resolve there, {:.3g} = {} * eps * max(1, |t|)",
        target, options_.h, floor, kMinStepUlps));
  SolveStatus st = SolveStatus::Failed;
  try {
    st = integrator_->advance_to(target);
  } catch (const std::exception& e) {
    return error(e.what());
  }
  changed();
  if (st == SolveStatus::Ok) return Status::Ok;
  if (const FailureRecord* f = integrator_->failure()) return error(f->message);
  return error(fmt::format("do_step: {}", status_name(st)));
}

Status Unit::set_time(double t) {
  if (kind_ != Kind::ModelExchange) return error("set_time: not a model-exchange unit");
  if (!std::isfinite(t)) return error(fmt::format("set_time: {} is not finite", t));
  if (!initialized_) {
    start_ = t;
    start_dirty_ = true;
  } else {
    v_[static_cast<size_t>(model_->slot_time)] = t;
  }
  changed();
  return Status::Ok;
}

Status Unit::set_continuous_states(std::span<const double> x) {
  if (kind_ != Kind::ModelExchange || !initialized_)
    return error("set_continuous_states: a model-exchange unit after initialization only");
  if (x.size() != n_states())
    return error(
        fmt::format("set_continuous_states: {} values for {} states", x.size(), n_states()));
  for (size_t k = 0; k < x.size(); ++k)
    v_[static_cast<size_t>(vars_->vars[static_cast<size_t>(vars_->states[k])].slot)] = x[k];
  changed();
  return Status::Ok;
}

Status Unit::get_continuous_states(std::span<double> x) {
  if (x.size() != n_states())
    return error(
        fmt::format("get_continuous_states: {} values for {} states", x.size(), n_states()));
  if (!initialized_ && !rebuild_start()) return Status::Error;
  const std::span<const double> v =
      integrator_ ? integrator_->symbols() : std::span<const double>(v_);
  for (size_t k = 0; k < x.size(); ++k)
    x[k] = v[static_cast<size_t>(vars_->vars[static_cast<size_t>(vars_->states[k])].slot)];
  return Status::Ok;
}

Status Unit::get_derivatives(std::span<double> dx) {
  if (kind_ != Kind::ModelExchange || !initialized_)
    return error("get_derivatives: a model-exchange unit after initialization only");
  if (dx.size() != n_states())
    return error(fmt::format("get_derivatives: {} values for {} states", dx.size(), n_states()));
  if (!ensure_derivatives()) return Status::Error;
  std::copy(derivatives_.begin(), derivatives_.end(), dx.begin());
  return Status::Ok;
}

Status Unit::get_nominals(std::span<double> x) {
  if (x.size() != n_states())
    return error(fmt::format("get_nominals: {} values for {} states", x.size(), n_states()));
  std::fill(x.begin(), x.end(), 1.0);
  return Status::Ok;
}

// ---- model exchange's events

bool Unit::evaluate_events(std::vector<double>& out) {
  const CompiledModel& m = *model_;
  if (!m.has_events()) {
    out.clear();
    return true;
  }
  if (rhs_ && !ensure_derivatives()) return false;
  if (!initialized_ && !rebuild_start()) return false;
  const auto n_out = static_cast<size_t>(m.events.n_out);
  const size_t n_sides = m.crossing_side_slot.size();
  // the crossings and sides at the last event or completed step (out may be conditions_)
  const bool have_before = conditions_.size() == n_out + n_sides;
  ev_before_.assign(conditions_.begin(), have_before ? conditions_.end() : conditions_.begin());
  std::span<const double> v = symbols();
  out.resize(n_out);
  int32_t st = m.events(v.data(), out.data());
  // A crossing function exactly 0 is on the side it came from crossed (FMI: an indicator changes
  // its domain between z > 0 and z <= 0): its relations read the value just beyond 0 (-1 below,
  // +1 above), so `when h < 0` fires where the importer's step ends at h == 0. One that stays at
  // 0 keeps its side, so nothing fires twice; elsewhere the side is 0 (the relation as written).
  bool any_side = false;
  ev_sides_.assign(n_sides, 0.0);
  for (size_t c = 0; c < n_sides && st >= 0; ++c) {
    if (out[c] != 0.0 || !have_before) continue;
    const double z_before = ev_before_[c];
    ev_sides_[c] = z_before > 0.0 ? -1.0 : z_before < 0.0 ? 1.0 : ev_before_[n_out + c];
    any_side |= ev_sides_[c] != 0.0;
  }
  if (any_side && st >= 0) {
    ev_v_.assign(v.begin(), v.end());
    for (size_t c = 0; c < n_sides; ++c)
      ev_v_[static_cast<size_t>(m.crossing_side_slot[c])] = ev_sides_[c];
    st = m.events(ev_v_.data(), out.data());
  }
  if (st < 0) {  // a non-finite value only changes no sign
    message_ = fmt::format("the events kernel failed at t = {} (status {})", time(), st);
    return false;
  }
  out.insert(out.end(), ev_sides_.begin(), ev_sides_.end());
  return true;
}

bool Unit::fire(std::vector<double>& basis, bool& states_changed) {
  const CompiledModel& m = *model_;
  // the current point with its derivatives: the reinits' values may read them
  const std::span<const double> now = symbols();
  v_.assign(now.begin(), now.end());
  const std::vector<int32_t>& states = vars_->states;
  ev_states_.resize(states.size());
  for (size_t k = 0; k < states.size(); ++k)
    ev_states_[k] = v_[static_cast<size_t>(vars_->vars[static_cast<size_t>(states[k])].slot)];
  // the sides at zero of the point before the event (the tail of `basis`) hold in its iteration
  const auto n_out = static_cast<size_t>(m.events.n_out);
  const size_t n_sides = m.crossing_side_slot.size();
  for (size_t c = 0; c < n_sides && basis.size() == n_out + n_sides; ++c)
    v_[static_cast<size_t>(m.crossing_side_slot[c])] = basis[n_out + c];
  const EventOutcome e = apply_event(m, v_, fired_, basis, ev_after_, ev_reinit_);
  for (size_t c = 0; c < n_sides; ++c) v_[static_cast<size_t>(m.crossing_side_slot[c])] = 0.0;
  changed();
  parameters_changed_ = true;  // a discrete value may enter the leading matrix
  if (e.kind == EventOutcome::Kind::NotSettled) {
    message_ = fmt::format("the event at t = {} does not end\n{}", time(),
                           event_iteration_note(m, e.branch));
    return false;
  }
  if (e.kind == EventOutcome::Kind::KernelFailed) {
    message_ = fmt::format("the event at t = {}: the {} kernel failed (status {})", time(),
                           e.reinit_kernel ? "reinit" : "events", e.kernel_status);
    return false;
  }
  for (size_t k = 0; k < states.size(); ++k)
    states_changed |=
        ev_states_[k] != v_[static_cast<size_t>(vars_->vars[static_cast<size_t>(states[k])].slot)];
  return evaluate_events(conditions_);
}

Status Unit::get_event_indicators(std::span<double> z) {
  if (z.size() != n_event_indicators())
    return error(fmt::format("get_event_indicators: {} values for {} event indicators", z.size(),
                             n_event_indicators()));
  if (z.empty()) return Status::Ok;
  if (!evaluate_events(ev_now_)) return Status::Error;
  std::copy_n(ev_now_.begin(), z.size(), z.begin());
  return Status::Ok;
}

Status Unit::update_discrete_states(bool& states_changed) {
  states_changed = false;
  if (kind_ != Kind::ModelExchange || !initialized_)
    return error("update_discrete_states: a model-exchange unit after initialization only");
  states_changed = std::exchange(initial_states_changed_, false);
  if (charts_.due(v_.data(), kChartMoveAbove)) {
    // the importer's steps do not move the charts: here, before the events fire (as the
    // integrators do after a step), theta := 0 with the rotation and w unchanged
    charts_.move(v_.data());
    changed();
    states_changed = true;
  }
  const CompiledModel& m = *model_;
  if (!m.has_events()) return Status::Ok;
  if (!evaluate_events(ev_now_)) return Status::Error;
  rising_branches(m, conditions_, ev_now_, fired_);
  if (fired_.empty()) {  // a switch, or a condition that fell: nothing fires
    conditions_.swap(ev_now_);
    return Status::Ok;
  }
  return fire(ev_now_, states_changed) ? Status::Ok : Status::Error;
}

Status Unit::completed_integrator_step(bool& enter_event_mode) {
  enter_event_mode = false;
  if (kind_ != Kind::ModelExchange || !initialized_)
    return error("completed_integrator_step: a model-exchange unit after initialization only");
  const CompiledModel& m = *model_;
  const bool due = charts_.due(v_.data(), kChartMoveAbove);
  if (!m.has_events()) {
    enter_event_mode = due;
    return Status::Ok;
  }
  if (!evaluate_events(ev_now_)) return Status::Error;
  rising_branches(m, conditions_, ev_now_, fired_);
  enter_event_mode = !fired_.empty();
  if (!enter_event_mode) conditions_.swap(ev_now_);
  enter_event_mode = enter_event_mode || due;
  return Status::Ok;
}

Status Unit::terminate() {
  const CompiledModel& m = *model_;
  if (kind_ != Kind::ModelExchange || !initialized_ || !m.has_events() || m.slot_terminal < 0)
    return Status::Ok;
  // as Integrator::terminal_event: the conditions here with terminal() = 0 and = 1
  if (!evaluate_events(ev_now_)) return Status::Error;
  const auto slot = static_cast<size_t>(m.slot_terminal);
  v_[slot] = 1.0;
  changed();
  std::vector<double> at_end;
  bool ok = evaluate_events(at_end);
  if (ok) {
    rising_branches(m, ev_now_, at_end, fired_);
    bool states_changed = false;
    if (!fired_.empty()) ok = fire(at_end, states_changed);
  }
  v_[slot] = 0.0;
  changed();
  return ok ? Status::Ok : Status::Error;
}

Status Unit::directional_derivative(std::span<const uint32_t> unknowns,
                                    std::span<const uint32_t> knowns, std::span<const double> seed,
                                    std::span<double> sensitivity) {
  if (knowns.size() != seed.size() || unknowns.size() != sensitivity.size())
    return error("directional derivative: one seed per known and one value per unknown needed");
  if (!initialized_)
    return error("directional derivatives are available after initialization only");
  if (kind_ == Kind::CoSimulation && !constraints_obstacle(*model_).empty())
    return error(
        "directional derivatives are not available: the model keeps constraints (they are "
        "those of the ODE's derivatives with respect to its states)");
  const VariableTable& t = *vars_;
  seed_.assign(n_states(), 0.0);
  for (size_t k = 0; k < knowns.size(); ++k) {
    const Variable* v = variable(knowns[k]);
    if (!v) return Status::Error;
    const auto it = std::find(t.states.begin(), t.states.end(), static_cast<int32_t>(knowns[k]));
    if (it == t.states.end())
      return error(fmt::format(
          "directional derivative with respect to '{}': not available (only the states)", v->name));
    seed_[static_cast<size_t>(it - t.states.begin())] += seed[k];
  }
  std::vector<size_t> rows(unknowns.size());
  for (size_t k = 0; k < unknowns.size(); ++k) {
    const Variable* v = variable(unknowns[k]);
    if (!v) return Status::Error;
    const auto it =
        std::find(t.derivatives.begin(), t.derivatives.end(), static_cast<int32_t>(unknowns[k]));
    if (it == t.derivatives.end())
      return error(fmt::format(
          "directional derivative of '{}': not available (only the state derivatives)", v->name));
    rows[k] = static_cast<size_t>(it - t.derivatives.begin());
  }
  ExplicitRk* rhs = rhs_.get();
  if (kind_ == Kind::ModelExchange) {
    if (!ensure_derivatives()) return Status::Error;
  } else {
    // co-simulation: the right-hand side at the integrator's point
    try {
      if (!cs_rhs_) {
        SolverOptions o = options_;
        o.solver = SolverKind::Euler;
        o.t_end = std::max(o.t_end, model_->v0[static_cast<size_t>(model_->slot_time)] + o.h);
        cs_rhs_ = std::make_unique<ExplicitRk>(model_, o);
      }
    } catch (const std::exception& e) {
      return error(e.what());
    }
    rhs = cs_rhs_.get();
    derivatives_.resize(n_states());
    std::string why = rhs->evaluate_derivative(integrator_->symbols(), derivatives_, true);
    derivatives_valid_ = false;  // derivatives_ is model exchange's cache
    if (!why.empty()) return error(std::move(why));
  }
  direction_.assign(n_states(), 0.0);
  std::string why = rhs->derivative_direction(seed_, direction_);
  if (!why.empty()) return error(std::move(why));
  for (size_t k = 0; k < rows.size(); ++k) sensitivity[k] = direction_[rows[k]];
  return Status::Ok;
}

// ---- FMU state

Status Unit::get_state(State& s) {
  s = State{};
  if (!initialized_ && !rebuild_start()) return Status::Error;
  if (integrator_ && !integrator_->save(s.integrator))
    return error("the state of a failed co-simulation step cannot be saved");
  s.v = v_;
  s.conditions = conditions_;
  for (const auto& [name, value] : instance_.parameters_set())
    s.parameters.emplace_back(name, value);
  for (const auto& [name, value] : instance_.starts_set()) s.starts.emplace_back(name, value);
  s.inputs = inputs_;
  s.start = start_;
  s.has_stop = stop_.has_value();
  s.stop = stop_.value_or(0.0);
  s.initialized = initialized_;
  s.parameters_changed = parameters_changed_;
  return Status::Ok;
}

Status Unit::set_state(const State& s) {
  const CompiledModel& m = *model_;
  if (s.v.size() != static_cast<size_t>(m.n_v) || s.inputs.size() != m.inputs.size())
    return error("the FMU state is not one of this model");
  if (s.initialized && kind_ == Kind::CoSimulation && s.integrator.empty())
    return error("the FMU state has no integrator state");
  if (s.initialized && kind_ == Kind::ModelExchange && m.has_events() &&
      s.conditions.size() != static_cast<size_t>(m.events.n_out) + m.crossing_side_slot.size())
    return error("the FMU state has no conditions of the model's events");
  Instance inst(model_);
  try {
    for (const auto& [name, value] : s.parameters) inst.set_parameter(name, value);
    for (const auto& [name, value] : s.starts) inst.set_start(name, value);
  } catch (const std::exception& e) {
    return error(fmt::format("the FMU state does not fit the model: {}", e.what()));
  }
  std::unique_ptr<Integrator> integrator;
  std::unique_ptr<ExplicitRk> rhs;
  try {
    SolverOptions o = options_;
    o.t_end = std::max({s.has_stop ? s.stop : defaults_.t_end, s.start + o.h,
                        m.v0[static_cast<size_t>(m.slot_time)] + o.h});
    if (s.initialized && kind_ == Kind::CoSimulation) {
      const bool own = integrator_ != nullptr;
      integrator = own ? std::move(integrator_) : make_integrator(model_, o);
      if (!integrator->restore(s.integrator)) {
        if (own) integrator_ = std::move(integrator);  // unchanged by the failed restore
        return error("the FMU state's integrator state does not fit");
      }
    } else if (s.initialized) {
      o.solver = SolverKind::Euler;
      rhs = rhs_ ? std::move(rhs_) : std::make_unique<ExplicitRk>(model_, o);
    }
  } catch (const std::exception& e) {
    return error(e.what());
  }
  integrator_ = std::move(integrator);
  rhs_ = std::move(rhs);
  instance_ = std::move(inst);
  v_ = s.v;
  conditions_ = s.conditions;
  inputs_ = s.inputs;
  start_ = s.start;
  stop_ = s.has_stop ? std::optional<double>(s.stop) : std::nullopt;
  initialized_ = s.initialized;
  start_dirty_ = !initialized_;
  parameters_changed_ = true;
  changed();
  return Status::Ok;
}

namespace {

constexpr char kMagic[8] = {'m', 'b', 's', 'f', 'm', 'u', 's', 't'};
constexpr uint32_t kVersion = 4;  // 2: the conditions of model exchange's events; 3: the
                                  // implicit methods' Newton constant K (NewmarkFamily); 4: the
                                  // conditions end with the crossings' sides at zero,
                                  // and the mode the state was taken in follows the flags

struct Writer {
  std::vector<uint8_t> out;
  void u64(uint64_t x) {
    for (int b = 0; b < 8; ++b) out.push_back(static_cast<uint8_t>(x >> (8 * b)));
  }
  void f64(double x) {
    uint64_t u = 0;
    std::memcpy(&u, &x, sizeof u);
    u64(u);
  }
  void str(const std::string& s) {
    u64(s.size());
    out.insert(out.end(), s.begin(), s.end());
  }
  void vec(const std::vector<double>& v) {
    u64(v.size());
    for (const double x : v) f64(x);
  }
  void pairs(const std::vector<std::pair<std::string, double>>& p) {
    u64(p.size());
    for (const auto& [name, value] : p) str(name), f64(value);
  }
};

struct Reader {
  std::span<const uint8_t> in;
  size_t pos = 0;
  bool ok = true;
  uint64_t u64() {
    if (!ok || in.size() - pos < 8) return ok = false, 0;
    uint64_t x = 0;
    for (int b = 0; b < 8; ++b)
      x |= static_cast<uint64_t>(in[pos + static_cast<size_t>(b)]) << (8 * b);
    pos += 8;
    return x;
  }
  double f64() {
    const uint64_t u = u64();
    double x = 0.0;
    std::memcpy(&x, &u, sizeof x);
    return x;
  }
  // a count of items of at least `size` bytes each that fit in what is left
  size_t count(size_t size) {
    const uint64_t n = u64();
    if (!ok || n > (in.size() - pos) / size) return ok = false, 0;
    return static_cast<size_t>(n);
  }
  std::string str() {
    const size_t n = count(1);
    if (!ok) return {};
    std::string s(reinterpret_cast<const char*>(in.data() + pos), n);
    pos += n;
    return s;
  }
  std::vector<double> vec() {
    const size_t n = count(8);
    std::vector<double> v(n);
    for (double& x : v) x = f64();
    return v;
  }
  std::vector<std::pair<std::string, double>> pairs() {
    const size_t n = count(16);
    std::vector<std::pair<std::string, double>> p;
    for (size_t k = 0; k < n && ok; ++k) {
      std::string name = str();
      const double value = f64();
      p.emplace_back(std::move(name), value);
    }
    return p;
  }
};

}  // namespace

std::vector<uint8_t> Unit::serialize(const State& s) const {
  Writer w;
  w.out.insert(w.out.end(), kMagic, kMagic + sizeof kMagic);
  w.u64(kVersion);
  w.str(model_->name);
  w.vec(s.integrator);
  w.vec(s.v);
  w.vec(s.conditions);
  w.pairs(s.parameters);
  w.pairs(s.starts);
  w.vec(s.inputs);
  w.f64(s.start);
  w.f64(s.stop);
  w.u64((s.has_stop ? 1u : 0u) | (s.initialized ? 2u : 0u) | (s.parameters_changed ? 4u : 0u));
  w.u64(static_cast<uint64_t>(s.mode));
  return std::move(w.out);
}

Status Unit::deserialize(std::span<const uint8_t> bytes, State& s) {
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    return error("not a serialized FMU state of mbs (wrong magic)");
  Reader r{bytes, sizeof kMagic};
  const uint64_t version = r.u64();
  if (r.ok && version != kVersion)
    return error(fmt::format("serialized FMU state of version {}, expected {}", version, kVersion));
  const std::string name = r.str();
  if (r.ok && name != model_->name)
    return error(fmt::format("serialized FMU state of model '{}', not '{}'", name, model_->name));
  State t;
  t.integrator = r.vec();
  t.v = r.vec();
  t.conditions = r.vec();
  t.parameters = r.pairs();
  t.starts = r.pairs();
  t.inputs = r.vec();
  t.start = r.f64();
  t.stop = r.f64();
  const uint64_t flags = r.u64();
  const uint64_t mode = r.u64();
  if (!r.ok || r.pos != bytes.size() || flags > 7 || mode > 255)
    return error("the serialized FMU state is damaged (truncated or malformed)");
  t.has_stop = (flags & 1u) != 0;
  t.initialized = (flags & 2u) != 0;
  t.parameters_changed = (flags & 4u) != 0;
  t.mode = static_cast<uint8_t>(mode);
  s = std::move(t);
  return Status::Ok;
}

}  // namespace mbs::rt::fmi
