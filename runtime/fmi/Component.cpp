// One FMU instance as the FMI C functions see it (Component.h).
#include "runtime/fmi/Component.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <exception>

namespace mbs::rt::fmi {

using Phase = Component::Phase;

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::Instantiated:
      return "instantiated";
    case Phase::Initialization:
      return "initialization mode";
    case Phase::StepMode:
      return "step mode";
    case Phase::EventMode:
      return "event mode";
    case Phase::ContinuousTimeMode:
      return "continuous-time mode";
    case Phase::Terminated:
      return "terminated";
    case Phase::Error:
      return "error (after a failed call: reset or free the instance)";
    case Phase::Fatal:
      return "fatal";
  }
  return "?";
}

std::unique_ptr<Component> Component::instantiate(std::shared_ptr<const EmbeddedModel> fmu,
                                                  const std::string& load_error, Unit::Kind kind,
                                                  const char* instance_name, const char* token,
                                                  Logger logger, bool logging_on) {
  const auto refuse = [&](const std::string& why) -> std::unique_ptr<Component> {
    if (logger) {
      try {
        logger(Status::Error, "logStatusError", why);
      } catch (...) {
      }
    }
    return nullptr;
  };
  try {
    if (!fmu || !load_error.empty())
      return refuse("the FMU cannot be instantiated: " +
                    (load_error.empty() ? std::string("no model embedded") : load_error));
    if (!instance_name || !*instance_name) return refuse("instantiate: no instance name");
    const FmuConfig& c = fmu->config;
    if (token && c.instantiation_token != token)
      return refuse(fmt::format(
          "instantiate: the instantiation token (GUID) '{}' is not this FMU's '{}': the model "
          "description and the binary are not from the same export",
          token, c.instantiation_token));
    const bool cs = kind == Unit::Kind::CoSimulation;
    if ((cs && !c.co_simulation) || (!cs && !c.model_exchange))
      return refuse(fmt::format("instantiate: this FMU offers no {}",
                                cs ? "co-simulation" : "model exchange"));
    return std::make_unique<Component>(std::move(fmu), kind, instance_name, std::move(logger),
                                       logging_on);
  } catch (const std::exception& e) {
    return refuse(std::string("instantiate: ") + e.what());
  }
}

Component::Component(std::shared_ptr<const EmbeddedModel> fmu, Unit::Kind kind,
                     std::string instance_name, Logger logger, bool logging_on)
    : fmu_(std::move(fmu)),
      kind_(kind),
      name_(std::move(instance_name)),
      logger_(std::move(logger)),
      logging_on_(logging_on),
      categories_(std::begin(kLogCategories), std::end(kLogCategories)),
      unit_(fmu_->model, fmu_->variables, fmu_->options, kind) {}

bool Component::category_enabled(const char* category) const {
  return categories_.count(category) != 0;
}

void Component::log(Status status, const std::string& msg) {
  if (!logger_) return;
  const char* category = status >= Status::Error     ? "logStatusError"
                         : status >= Status::Warning ? "logStatusWarning"
                                                     : "logEvents";
  // errors always reach the importer; the rest when debug logging asks for them
  if (status < Status::Error && (!logging_on_ || !category_enabled(category))) return;
  try {
    logger_(status, category, msg);
  } catch (...) {  // an importer's exception never crosses the C boundary
  }
}

Status Component::allowed(const char* fn, std::initializer_list<Phase> phases) {
  if (std::find(phases.begin(), phases.end(), phase_) != phases.end()) return Status::Ok;
  log(Status::Error, fmt::format("{}: not allowed in {}", fn, phase_name(phase_)));
  return Status::Error;
}

Status Component::failed(const char* fn, Status s, bool to_error_mode) {
  if (s == Status::Ok) return s;
  log(s, fmt::format("{}: {}", fn, unit_.message()));
  if (to_error_mode && s >= Status::Error) phase_ = Phase::Error;
  return s;
}

Status Component::set_debug_logging(bool on, size_t n, const char* const* categories) {
  if (phase_ == Phase::Fatal) return allowed("setDebugLogging", {});
  if (n > 0 && !categories) {
    log(Status::Error, "setDebugLogging: categories is null");
    return Status::Error;
  }
  std::set<std::string> chosen;
  for (size_t k = 0; k < n; ++k) {
    const char* c = categories[k];
    if (!c || std::none_of(std::begin(kLogCategories), std::end(kLogCategories),
                           [&](const char* known) { return std::strcmp(known, c) == 0; })) {
      log(Status::Error, fmt::format("setDebugLogging: unknown log category '{}' (known: "
                                     "logStatusError, logStatusWarning, logEvents)",
                                     c ? c : "(null)"));
      return Status::Error;
    }
    chosen.insert(c);
  }
  logging_on_ = on;
  if (n == 0)
    categories_ = std::set<std::string>(std::begin(kLogCategories), std::end(kLogCategories));
  else
    categories_ = std::move(chosen);
  return Status::Ok;
}

Status Component::setup_experiment(bool tolerance_defined, double tolerance, double start,
                                   bool stop_defined, double stop) {
  if (Status s = allowed("setupExperiment", {Phase::Instantiated}); s != Status::Ok) return s;
  std::optional<double> tol, stop_time;
  if (tolerance_defined) tol = tolerance;
  if (stop_defined) stop_time = stop;  // else none: the default experiment's is a default
  return failed("setupExperiment", unit_.setup_experiment(tol, start, stop_time), false);
}

Status Component::enter_initialization() {
  if (Status s = allowed("enterInitializationMode", {Phase::Instantiated}); s != Status::Ok)
    return s;
  phase_ = Phase::Initialization;
  return Status::Ok;
}

Status Component::exit_initialization() {
  if (Status s = allowed("exitInitializationMode", {Phase::Initialization}); s != Status::Ok)
    return s;
  const Status s = unit_.exit_initialization();
  if (s != Status::Ok) return failed("exitInitializationMode", s, true);
  phase_ = kind_ == Unit::Kind::CoSimulation ? Phase::StepMode : Phase::EventMode;
  log(Status::Ok, fmt::format("initialized at t = {}", unit_.time()));
  return Status::Ok;
}

Status Component::terminate() {
  if (Status s = allowed("terminate", {Phase::StepMode, Phase::EventMode, Phase::ContinuousTimeMode,
                                       Phase::Initialization});
      s != Status::Ok)
    return s;
  // model exchange: terminal() (Unit::terminate); a failure there ends in the error mode
  if (phase_ != Phase::Initialization && phase_ != Phase::StepMode) {
    const Status t = unit_.terminate();
    if (t != Status::Ok) return failed("terminate", t, true);
  }
  phase_ = Phase::Terminated;
  return Status::Ok;
}

Status Component::reset() {
  if (phase_ == Phase::Fatal) return allowed("reset", {});
  unit_.reset();
  phase_ = Phase::Instantiated;
  return Status::Ok;
}

Status Component::get_float64(const char* fn, const uint32_t* vr, size_t nvr, double* values,
                              size_t nvalues) {
  if (phase_ == Phase::Fatal) return allowed(fn, {});
  if (nvr == 0) return Status::Ok;
  if (!vr || !values || nvalues != nvr) {
    log(Status::Error, fmt::format("{}: {} value references, {} values{}", fn, nvr, nvalues,
                                   !vr || !values ? " and a null array" : ""));
    return Status::Error;
  }
  if (!of_type(fn, Type::Float64, vr, nvr)) return Status::Error;
  return failed(fn, unit_.get_float64({vr, nvr}, {values, nvalues}), false);
}

Status Component::set_float64(const char* fn, const uint32_t* vr, size_t nvr, const double* values,
                              size_t nvalues) {
  if (Status s = allowed(fn, {Phase::Instantiated, Phase::Initialization, Phase::StepMode,
                              Phase::EventMode, Phase::ContinuousTimeMode});
      s != Status::Ok)
    return s;
  if (nvr == 0) return Status::Ok;
  if (!vr || !values || nvalues != nvr) {
    log(Status::Error, fmt::format("{}: {} value references, {} values{}", fn, nvr, nvalues,
                                   !vr || !values ? " and a null array" : ""));
    return Status::Error;
  }
  if (!of_type(fn, Type::Float64, vr, nvr)) return Status::Error;
  return failed(fn, unit_.set_float64({vr, nvr}, {values, nvalues}), false);
}

bool Component::of_type(const char* fn, Type type, const uint32_t* vr, size_t nvr) {
  static constexpr const char* kName[] = {"Float64 (Real)", "Int32 (Integer)", "Boolean"};
  const auto& vars = fmu_->variables->vars;
  for (size_t k = 0; k < nvr; ++k) {
    if (vr[k] >= vars.size() || vars[vr[k]].type == type) continue;  // a bad one: the unit says
    log(Status::Error, fmt::format("{}: '{}' is of type {}, not {}", fn, vars[vr[k]].name,
                                   kName[static_cast<size_t>(vars[vr[k]].type)],
                                   kName[static_cast<size_t>(type)]));
    return false;
  }
  return true;
}

Status Component::get_typed(const char* fn, Type type, const uint32_t* vr, size_t nvr,
                            double* values) {
  if (phase_ == Phase::Fatal) return allowed(fn, {});
  if (nvr == 0) return Status::Ok;
  if (!vr || !values) {
    log(Status::Error, fmt::format("{}: a null array", fn));
    return Status::Error;
  }
  if (!of_type(fn, type, vr, nvr)) return Status::Error;
  return failed(fn, unit_.get_float64({vr, nvr}, {values, nvr}), false);
}

Status Component::set_typed(const char* fn, Type type, const uint32_t* vr, size_t nvr,
                            const double* values) {
  if (Status s = allowed(fn, {Phase::Instantiated, Phase::Initialization, Phase::StepMode,
                              Phase::EventMode, Phase::ContinuousTimeMode});
      s != Status::Ok)
    return s;
  if (nvr == 0) return Status::Ok;
  if (!vr || !values) {
    log(Status::Error, fmt::format("{}: a null array", fn));
    return Status::Error;
  }
  if (!of_type(fn, type, vr, nvr)) return Status::Error;
  return failed(fn, unit_.set_float64({vr, nvr}, {values, nvr}), false);
}

Status Component::other_type(const char* fn, const uint32_t* vr, size_t nvr) {
  if (phase_ == Phase::Fatal) return allowed(fn, {});
  if (nvr == 0) return Status::Ok;
  const auto& vars = fmu_->variables->vars;
  const uint32_t first = vr ? vr[0] : 0;
  log(Status::Error,
      fmt::format("{}: {}: every variable of this FMU is a Float64 (Real), Int32 (Integer) or "
                  "Boolean",
                  fn,
                  !vr                   ? std::string("null value references")
                  : first < vars.size() ? fmt::format("'{}' is not of this type", vars[first].name)
                                        : fmt::format("{} is not a value reference", first)));
  return Status::Error;
}

Status Component::not_available(const char* fn, const char* why) {
  log(Status::Error, fmt::format("{}: not available: {}", fn, why));
  return Status::Error;
}

Status Component::do_step(double t_current, double h, double* last_successful_time) {
  if (Status s = allowed("doStep", {Phase::StepMode}); s != Status::Ok) return s;
  const Status s = unit_.do_step(t_current, h);
  if (last_successful_time) *last_successful_time = unit_.time();
  if (s == Status::Ok) return s;
  // a step from the wrong time or too far is the importer's mistake, a solver failure is not
  const bool argument = unit_.message().rfind("do_step", 0) == 0;
  return failed("doStep", s, !argument);
}

Status Component::enter_event_mode() {
  if (Status s = allowed("enterEventMode", {Phase::ContinuousTimeMode, Phase::EventMode});
      s != Status::Ok)
    return s;
  phase_ = Phase::EventMode;
  return Status::Ok;
}

Status Component::update_discrete_states(const char* fn, EventInfo* info) {
  if (Status s = allowed(fn, {Phase::EventMode}); s != Status::Ok) return s;
  bool states_changed = false;
  if (kind_ == Unit::Kind::ModelExchange) {
    const Status s = unit_.update_discrete_states(states_changed);
    if (s != Status::Ok) return failed(fn, s, true);
    if (states_changed) log(Status::Ok, fmt::format("{}: event at t = {}", fn, unit_.time()));
  }
  if (info) {
    *info = EventInfo{};
    info->values_changed = states_changed;
  }
  return Status::Ok;
}

Status Component::enter_continuous_time_mode() {
  if (Status s = allowed("enterContinuousTimeMode", {Phase::EventMode}); s != Status::Ok) return s;
  phase_ = Phase::ContinuousTimeMode;
  return Status::Ok;
}

Status Component::completed_integrator_step(bool* enter_event_mode, bool* terminate_simulation) {
  if (Status s = allowed("completedIntegratorStep", {Phase::ContinuousTimeMode}); s != Status::Ok)
    return s;
  if (enter_event_mode) *enter_event_mode = false;
  if (terminate_simulation) *terminate_simulation = false;
  bool enter = false;
  const Status s = unit_.completed_integrator_step(enter);
  if (s != Status::Ok) return failed("completedIntegratorStep", s, true);
  if (enter_event_mode) *enter_event_mode = enter;
  return Status::Ok;
}

Status Component::set_time(double t) {
  if (Status s = allowed("setTime", {Phase::EventMode, Phase::ContinuousTimeMode}); s != Status::Ok)
    return s;
  return failed("setTime", unit_.set_time(t), false);
}

Status Component::set_continuous_states(const double* x, size_t n) {
  if (Status s = allowed("setContinuousStates", {Phase::EventMode, Phase::ContinuousTimeMode});
      s != Status::Ok)
    return s;
  if (!x && n > 0) return not_available("setContinuousStates", "null array");
  return failed("setContinuousStates", unit_.set_continuous_states({x, n}), false);
}

Status Component::get_continuous_states(double* x, size_t n) {
  if (Status s = allowed("getContinuousStates",
                         {Phase::Initialization, Phase::EventMode, Phase::ContinuousTimeMode,
                          Phase::Terminated, Phase::Error});
      s != Status::Ok)
    return s;
  if (!x && n > 0) return not_available("getContinuousStates", "null array");
  return failed("getContinuousStates", unit_.get_continuous_states({x, n}), false);
}

Status Component::get_derivatives(double* dx, size_t n) {
  if (Status s = allowed("getDerivatives", {Phase::EventMode, Phase::ContinuousTimeMode,
                                            Phase::Terminated, Phase::Error});
      s != Status::Ok)
    return s;
  if ((!dx && n > 0) || n != unit_.n_states()) {
    log(Status::Error, fmt::format("getDerivatives: {} values{} for {} states", n,
                                   dx ? "" : " (null)", unit_.n_states()));
    return Status::Error;
  }
  return failed("getDerivatives", unit_.get_derivatives({dx, n}), true);
}

Status Component::get_event_indicators(double* z, size_t n) {
  if (Status s = allowed("getEventIndicators",
                         {Phase::Initialization, Phase::EventMode, Phase::ContinuousTimeMode,
                          Phase::Terminated, Phase::Error});
      s != Status::Ok)
    return s;
  const size_t have = kind_ == Unit::Kind::ModelExchange ? unit_.n_event_indicators() : 0;
  if (n != have || (!z && n > 0)) {
    log(Status::Error, fmt::format("getEventIndicators: {} asked{}, the FMU has {}", n,
                                   z || n == 0 ? "" : " (null)", have));
    return Status::Error;
  }
  if (n == 0) return Status::Ok;
  return failed("getEventIndicators", unit_.get_event_indicators({z, n}), false);
}

Status Component::get_nominals(double* x, size_t n) {
  if (Status s = allowed("getNominalsOfContinuousStates",
                         {Phase::Instantiated, Phase::Initialization, Phase::EventMode,
                          Phase::ContinuousTimeMode, Phase::Terminated, Phase::Error});
      s != Status::Ok)
    return s;
  if (!x && n > 0) return not_available("getNominalsOfContinuousStates", "null array");
  return failed("getNominalsOfContinuousStates", unit_.get_nominals({x, n}), false);
}

Status Component::get_number_of_states(size_t* n) {
  if (!n) return not_available("getNumberOfContinuousStates", "null pointer");
  *n = kind_ == Unit::Kind::ModelExchange ? unit_.n_states() : 0;
  return Status::Ok;
}

Status Component::get_number_of_event_indicators(size_t* n) {
  if (!n) return not_available("getNumberOfEventIndicators", "null pointer");
  *n = kind_ == Unit::Kind::ModelExchange ? unit_.n_event_indicators() : 0;
  return Status::Ok;
}

Status Component::directional_derivative(const char* fn, const uint32_t* unknowns,
                                         size_t n_unknowns, const uint32_t* knowns, size_t n_knowns,
                                         const double* seed, double* sensitivity) {
  if (Status s = allowed(fn, {Phase::Initialization, Phase::StepMode, Phase::EventMode,
                              Phase::ContinuousTimeMode, Phase::Terminated});
      s != Status::Ok)
    return s;
  if ((n_unknowns > 0 && (!unknowns || !sensitivity)) || (n_knowns > 0 && (!knowns || !seed)))
    return not_available(fn, "a null array");
  return failed(fn,
                unit_.directional_derivative({unknowns, n_unknowns}, {knowns, n_knowns},
                                             {seed, n_knowns}, {sensitivity, n_unknowns}),
                false);
}

Unit::State* Component::find_state(void* handle) {
  for (const auto& s : states_)
    if (s.get() == handle) return s.get();
  return nullptr;
}

Status Component::get_state(void** state) {
  if (phase_ == Phase::Fatal) return allowed("getFMUState", {});
  if (!state) return not_available("getFMUState", "null pointer");
  Unit::State* target = nullptr;
  if (*state) {
    target = find_state(*state);
    if (!target) return not_available("getFMUState", "a state that is not this instance's");
  }
  Unit::State snapshot;
  if (Status s = unit_.get_state(snapshot); s != Status::Ok) return failed("getFMUState", s, false);
  if (!target) {
    states_.push_back(std::make_unique<Unit::State>());
    target = states_.back().get();
  }
  // the mode is part of what the importer restores
  snapshot.mode = static_cast<uint8_t>(phase_);
  *target = std::move(snapshot);
  *state = target;
  return Status::Ok;
}

Status Component::set_state(void* state) {
  if (Status s =
          allowed("setFMUState",
                  {Phase::Instantiated, Phase::Initialization, Phase::StepMode, Phase::EventMode,
                   Phase::ContinuousTimeMode, Phase::Terminated, Phase::Error});
      s != Status::Ok)
    return s;
  Unit::State* s = find_state(state);
  if (!s) return not_available("setFMUState", "a state that is not this instance's");
  const Status st = unit_.set_state(*s);
  if (st != Status::Ok) return failed("setFMUState", st, false);
  // the instance resumes in the mode the state was taken in (a model-exchange state of
  // continuous-time mode goes on there, one of event mode in event mode); a state taken in the
  // error mode resumes where its values allow: stepping, or event mode in model exchange
  const auto mode = static_cast<Phase>(s->mode);
  const bool resumable =
      s->initialized ? (kind_ == Unit::Kind::CoSimulation
                            ? mode == Phase::StepMode || mode == Phase::Terminated
                            : mode == Phase::EventMode || mode == Phase::ContinuousTimeMode ||
                                  mode == Phase::Terminated)
                     : mode == Phase::Instantiated || mode == Phase::Initialization;
  if (resumable)
    phase_ = mode;
  else
    phase_ = !s->initialized                     ? Phase::Instantiated
             : kind_ == Unit::Kind::CoSimulation ? Phase::StepMode
                                                 : Phase::EventMode;
  return Status::Ok;
}

Status Component::free_state(void** state) {
  if (!state || !*state) return Status::Ok;  // freeing nothing is allowed
  const auto it = std::find_if(states_.begin(), states_.end(),
                               [&](const auto& s) { return s.get() == *state; });
  if (it == states_.end())
    return not_available("freeFMUState", "a state that is not this instance's");
  states_.erase(it);
  *state = nullptr;
  return Status::Ok;
}

Status Component::serialized_size(void* state, size_t* size) {
  Unit::State* s = find_state(state);
  if (!s || !size) return not_available("serializedFMUStateSize", "an unknown state or null size");
  *size = unit_.serialize(*s).size();
  return Status::Ok;
}

Status Component::serialize(void* state, uint8_t* bytes, size_t size) {
  Unit::State* s = find_state(state);
  if (!s || (!bytes && size > 0))
    return not_available("serializeFMUState", "an unknown state or a null buffer");
  const std::vector<uint8_t> b = unit_.serialize(*s);
  if (size < b.size()) {
    log(Status::Error,
        fmt::format("serializeFMUState: the buffer has {} bytes, {} needed", size, b.size()));
    return Status::Error;
  }
  std::copy(b.begin(), b.end(), bytes);
  return Status::Ok;
}

Status Component::deserialize(const uint8_t* bytes, size_t size, void** state) {
  if (phase_ == Phase::Fatal) return allowed("deserializeFMUState", {});
  if ((!bytes && size > 0) || !state)
    return not_available("deserializeFMUState", "a null buffer or state pointer");
  Unit::State s;
  if (Status st = unit_.deserialize({bytes, size}, s); st != Status::Ok)
    return failed("deserializeFMUState", st, false);
  Unit::State* target = *state ? find_state(*state) : nullptr;
  if (*state && !target)
    return not_available("deserializeFMUState", "a state that is not this instance's");
  if (!target) {
    states_.push_back(std::make_unique<Unit::State>());
    target = states_.back().get();
  }
  *target = std::move(s);
  *state = target;
  return Status::Ok;
}

}  // namespace mbs::rt::fmi
