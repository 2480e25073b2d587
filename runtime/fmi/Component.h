// One FMU instance as the FMI C functions see it (tools/fmu/blob/Fmi2.cpp, Fmi3.cpp are thin
// over it): the state machine of the standard's modes, the logger with its categories, the FMU
// states an importer holds, over a Unit. Every call checks the mode it is allowed in; a call in
// the wrong mode, bad arguments (null pointers, wrong counts, unknown value references) return
// Error and log a message naming the function. Nothing throws out of it.
//
// Modes (FMI 2 and 3 alike): Instantiated -> enter_initialization -> Initialization ->
// exit_initialization -> StepMode (co-simulation) or EventMode (model exchange) <->
// ContinuousTimeMode; terminate -> Terminated; reset -> Instantiated from any mode but Fatal. A
// failed computation (initialization, a step, the derivatives) leaves the instance in mode
// Error: only get functions, get/free FMU state, reset and free are allowed there. An error in
// the arguments of a call leaves the mode as it was.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "runtime/fmi/Embedded.h"
#include "runtime/fmi/Unit.h"

namespace mbs::rt::fmi {

// The log categories of the model description (tools/fmu/ModelDescription.cpp).
inline constexpr const char* kLogCategories[] = {"logStatusError", "logStatusWarning", "logEvents"};

class Component {
 public:
  enum class Phase : uint8_t {
    Instantiated,
    Initialization,
    StepMode,
    EventMode,
    ContinuousTimeMode,
    Terminated,
    Error,
    Fatal,
  };
  // Receives every message that passes the logging filter: errors always, warnings and events
  // when logging is on and their category enabled. `category` is one of kLogCategories.
  using Logger = std::function<void(Status status, const char* category, const std::string& msg)>;

  // Instantiation: checks that `fmu` was loaded (load_error empty), the token (FMI 2's GUID,
  // FMI 3's instantiationToken) and that the FMU offers `kind`. On failure returns nullptr after
  // logging why (through `logger`, if any).
  static std::unique_ptr<Component> instantiate(std::shared_ptr<const EmbeddedModel> fmu,
                                                const std::string& load_error, Unit::Kind kind,
                                                const char* instance_name, const char* token,
                                                Logger logger, bool logging_on);

  Component(std::shared_ptr<const EmbeddedModel> fmu, Unit::Kind kind, std::string instance_name,
            Logger logger, bool logging_on);

  Phase phase() const { return phase_; }
  const std::string& instance_name() const { return name_; }
  Unit& unit() { return unit_; }
  const EmbeddedModel& fmu() const { return *fmu_; }

  Status set_debug_logging(bool on, size_t n, const char* const* categories);
  bool category_enabled(const char* category) const;

  // FMI 2's setup (FMI 3's enter_initialization passes the same to setup_experiment first).
  Status setup_experiment(bool tolerance_defined, double tolerance, double start, bool stop_defined,
                          double stop);
  Status enter_initialization();
  Status exit_initialization();
  Status terminate();
  Status reset();

  Status get_float64(const char* fn, const uint32_t* vr, size_t nvr, double* values,
                     size_t nvalues);
  Status set_float64(const char* fn, const uint32_t* vr, size_t nvr, const double* values,
                     size_t nvalues);
  // Integer (FMI 2 Integer, FMI 3 Int32) and Boolean variables, their values as doubles; the
  // get/set functions of a type accept only the variables of that type (as FMI's value
  // references are per type), so an Integer is not read with fmi2GetReal.
  Status get_typed(const char* fn, Type type, const uint32_t* vr, size_t nvr, double* values);
  Status set_typed(const char* fn, Type type, const uint32_t* vr, size_t nvr, const double* values);
  // get/set of any other type (String, the other FMI 3 number types): no variable has it, so any
  // value reference is an error.
  Status other_type(const char* fn, const uint32_t* vr, size_t nvr);
  // A function this FMU does not provide (Error, logged).
  Status not_available(const char* fn, const char* why);

  // Co-simulation. last_successful_time (may be null): the time reached.
  Status do_step(double t_current, double h, double* last_successful_time);

  // Model exchange. Events (docs/fmu.md, "Model exchange"): the event indicators are the
  // model's zero-crossing functions; update_discrete_states performs the event (Unit::
  // update_discrete_states) and reports in `info` (may be null) what the importer must know.
  struct EventInfo {
    bool discrete_states_need_update = false;  // never: the event iteration ends inside
    bool terminate_simulation = false;
    bool nominals_changed = false;
    bool values_changed = false;           // a reinit changed a continuous state
    bool next_event_time_defined = false;  // no time events
    double next_event_time = 0.0;
  };
  Status enter_event_mode();
  Status update_discrete_states(const char* fn, EventInfo* info);
  Status enter_continuous_time_mode();
  Status completed_integrator_step(bool* enter_event_mode, bool* terminate_simulation);
  Status set_time(double t);
  Status set_continuous_states(const double* x, size_t n);
  Status get_continuous_states(double* x, size_t n);
  Status get_derivatives(double* dx, size_t n);
  Status get_event_indicators(double* z, size_t n);
  Status get_nominals(double* x, size_t n);
  Status get_number_of_states(size_t* n);
  Status get_number_of_event_indicators(size_t* n);

  Status directional_derivative(const char* fn, const uint32_t* unknowns, size_t n_unknowns,
                                const uint32_t* knowns, size_t n_knowns, const double* seed,
                                double* sensitivity);

  // FMU states: handles the component owns (freed with it); a handle not made by this
  // component is an error, never dereferenced.
  Status get_state(void** state);
  Status set_state(void* state);
  Status free_state(void** state);
  Status serialized_size(void* state, size_t* size);
  Status serialize(void* state, uint8_t* bytes, size_t size);
  Status deserialize(const uint8_t* bytes, size_t size, void** state);

  double time() const { return unit_.time(); }
  // Logs `msg` with `status` (category by status: Error and Fatal logStatusError, Warning and
  // Discard logStatusWarning, Ok logEvents).
  void log(Status status, const std::string& msg);

 private:
  // Ok when phase_ is one of `allowed`, else Error (logged).
  Status allowed(const char* fn, std::initializer_list<Phase> phases);
  // Whether every value reference that names a variable names one of `type` (else logged).
  bool of_type(const char* fn, Type type, const uint32_t* vr, size_t nvr);
  // The Unit's failure: logged, and with `to_error_mode` the component enters mode Error.
  Status failed(const char* fn, Status s, bool to_error_mode);
  Unit::State* find_state(void* handle);

  std::shared_ptr<const EmbeddedModel> fmu_;
  Unit::Kind kind_;
  std::string name_;
  Logger logger_;
  bool logging_on_ = false;
  std::set<std::string> categories_;  // enabled
  Unit unit_;
  Phase phase_ = Phase::Instantiated;
  std::vector<std::unique_ptr<Unit::State>> states_;
};

const char* phase_name(Component::Phase p);

}  // namespace mbs::rt::fmi
