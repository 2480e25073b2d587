// The FMI 2.0 C API of an exported FMU (co-simulation and model exchange), thin over
// rt::fmi::Component. The C types (Fmi2Types.h) are declared from the FMI 2.0.x specification
// (fmi2TypesPlatform.h, fmi2FunctionTypes.h): the standard's headers are not copied.
// docs/fmu.md, "The FMI functions".
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "tools/fmu/blob/Embedded.h"
#include "tools/fmu/blob/Export.h"
#include "tools/fmu/blob/Fmi2Types.h"

namespace {

using mbs::fmu_blob::Instance;
using mbs::rt::fmi::Component;
using mbs::rt::fmi::Status;
using mbs::rt::fmi::Type;

static_assert(sizeof(fmi2ValueReference) == sizeof(uint32_t));

fmi2Status to_fmi2(Status s) {
  return static_cast<fmi2Status>(static_cast<int>(s));
}

// The component of a live FMI 2 instance, or null.
Component* component(fmi2Component c) {
  Instance* i = mbs::fmu_blob::find_instance(c);
  return i && i->fmi_version == 2 ? i->component.get() : nullptr;
}

// Runs f(component) unless the handle is not a live instance; an exception never crosses the C
// boundary (it becomes Error, logged).
template <class F>
fmi2Status call(fmi2Component c, const char* fn, F&& f) {
  Component* comp = component(c);
  if (!comp) return fmi2Error;  // nothing to log with: no instance
  try {
    return to_fmi2(f(*comp));
  } catch (const std::exception& e) {
    comp->log(Status::Error, std::string(fn) + ": " + e.what());
  } catch (...) {
    comp->log(Status::Error, std::string(fn) + ": unknown exception");
  }
  return fmi2Error;
}

const uint32_t* refs(const fmi2ValueReference* vr) {
  return reinterpret_cast<const uint32_t*>(vr);
}

}  // namespace

// ---- common functions

MBS_FMU_EXPORT const char* fmi2GetTypesPlatform(void) {
  return "default";
}
MBS_FMU_EXPORT const char* fmi2GetVersion(void) {
  return "2.0";
}

MBS_FMU_EXPORT fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean loggingOn,
                                              size_t nCategories, const fmi2String categories[]) {
  return call(c, "fmi2SetDebugLogging", [&](Component& k) {
    return k.set_debug_logging(loggingOn != 0, nCategories, categories);
  });
}

MBS_FMU_EXPORT fmi2Component fmi2Instantiate(fmi2String instanceName, fmi2Type fmuType,
                                             fmi2String fmuGUID, fmi2String fmuResourceLocation,
                                             const fmi2CallbackFunctions* functions,
                                             fmi2Boolean visible, fmi2Boolean loggingOn) {
  (void)fmuResourceLocation;
  (void)visible;
  try {
    fmi2CallbackLogger logger = functions ? functions->logger : nullptr;
    fmi2ComponentEnvironment env = functions ? functions->componentEnvironment : nullptr;
    const std::string name = instanceName ? instanceName : "";
    Component::Logger log;
    if (logger) {
      log = [logger, env, name](Status s, const char* category, const std::string& msg) {
        // the message is a printf format for the importer: pass it as an argument
        logger(env, name.c_str(), to_fmi2(s), category, "%s", msg.c_str());
      };
    }
    const auto& loaded = mbs::fmu_blob::embedded();
    if (fmuType != fmi2ModelExchange && fmuType != fmi2CoSimulation) {
      if (log) log(Status::Error, "logStatusError", "fmi2Instantiate: unknown fmuType");
      return nullptr;
    }
    auto comp = Component::instantiate(loaded.fmu, loaded.error,
                                       fmuType == fmi2CoSimulation
                                           ? mbs::rt::fmi::Unit::Kind::CoSimulation
                                           : mbs::rt::fmi::Unit::Kind::ModelExchange,
                                       instanceName, fmuGUID ? fmuGUID : "", log, loggingOn != 0);
    if (!comp) return nullptr;
    auto inst = std::make_unique<Instance>();
    inst->fmi_version = 2;
    inst->component = std::move(comp);
    mbs::fmu_blob::register_instance(inst.get());
    return inst.release();
  } catch (...) {
    return nullptr;
  }
}

MBS_FMU_EXPORT void fmi2FreeInstance(fmi2Component c) {
  Instance* i = mbs::fmu_blob::find_instance(c);
  if (!i || i->fmi_version != 2) return;
  mbs::fmu_blob::unregister_instance(i);
  delete i;
}

MBS_FMU_EXPORT fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean toleranceDefined,
                                              fmi2Real tolerance, fmi2Real startTime,
                                              fmi2Boolean stopTimeDefined, fmi2Real stopTime) {
  return call(c, "fmi2SetupExperiment", [&](Component& k) {
    return k.setup_experiment(toleranceDefined != 0, tolerance, startTime, stopTimeDefined != 0,
                              stopTime);
  });
}

MBS_FMU_EXPORT fmi2Status fmi2EnterInitializationMode(fmi2Component c) {
  return call(c, "fmi2EnterInitializationMode",
              [&](Component& k) { return k.enter_initialization(); });
}

MBS_FMU_EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
  return call(c, "fmi2ExitInitializationMode",
              [&](Component& k) { return k.exit_initialization(); });
}

MBS_FMU_EXPORT fmi2Status fmi2Terminate(fmi2Component c) {
  return call(c, "fmi2Terminate", [&](Component& k) { return k.terminate(); });
}

MBS_FMU_EXPORT fmi2Status fmi2Reset(fmi2Component c) {
  return call(c, "fmi2Reset", [&](Component& k) { return k.reset(); });
}

// ---- values

MBS_FMU_EXPORT fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                      fmi2Real value[]) {
  return call(c, "fmi2GetReal", [&](Component& k) {
    return k.get_float64("fmi2GetReal", refs(vr), nvr, value, nvr);
  });
}

MBS_FMU_EXPORT fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                      const fmi2Real value[]) {
  return call(c, "fmi2SetReal", [&](Component& k) {
    return k.set_float64("fmi2SetReal", refs(vr), nvr, value, nvr);
  });
}

#define MBS_FMI2_OTHER_TYPE(NAME, CONST, TYPE)                                               \
  MBS_FMU_EXPORT fmi2Status NAME(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, \
                                 CONST TYPE value[]) {                                       \
    (void)value;                                                                             \
    return call(c, #NAME, [&](Component& k) { return k.other_type(#NAME, refs(vr), nvr); }); \
  }
MBS_FMI2_OTHER_TYPE(fmi2GetString, , fmi2String)
MBS_FMI2_OTHER_TYPE(fmi2SetString, const, fmi2String)
#undef MBS_FMI2_OTHER_TYPE

// Integer and Boolean variables, held as doubles (whole numbers; Boolean 1 / 0)
MBS_FMU_EXPORT fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                         fmi2Integer value[]) {
  return call(c, "fmi2GetInteger", [&](Component& k) {
    std::vector<double> x(nvr);
    const Status s =
        k.get_typed("fmi2GetInteger", Type::Int32, refs(vr), nvr, value ? x.data() : nullptr);
    for (size_t i = 0; s == Status::Ok && i < nvr; ++i)
      value[i] = static_cast<fmi2Integer>(std::lround(x[i]));
    return s;
  });
}

MBS_FMU_EXPORT fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                         fmi2Boolean value[]) {
  return call(c, "fmi2GetBoolean", [&](Component& k) {
    std::vector<double> x(nvr);
    const Status s =
        k.get_typed("fmi2GetBoolean", Type::Boolean, refs(vr), nvr, value ? x.data() : nullptr);
    for (size_t i = 0; s == Status::Ok && i < nvr; ++i) value[i] = x[i] != 0.0 ? 1 : 0;
    return s;
  });
}

MBS_FMU_EXPORT fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                         const fmi2Integer value[]) {
  return call(c, "fmi2SetInteger", [&](Component& k) {
    std::vector<double> x(nvr);
    for (size_t i = 0; value && i < nvr; ++i) x[i] = static_cast<double>(value[i]);
    return k.set_typed("fmi2SetInteger", Type::Int32, refs(vr), nvr, value ? x.data() : nullptr);
  });
}

MBS_FMU_EXPORT fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                         const fmi2Boolean value[]) {
  return call(c, "fmi2SetBoolean", [&](Component& k) {
    std::vector<double> x(nvr);
    for (size_t i = 0; value && i < nvr; ++i) x[i] = value[i] != 0 ? 1.0 : 0.0;
    return k.set_typed("fmi2SetBoolean", Type::Boolean, refs(vr), nvr, value ? x.data() : nullptr);
  });
}

// ---- FMU state

MBS_FMU_EXPORT fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate* state) {
  return call(c, "fmi2GetFMUstate", [&](Component& k) { return k.get_state(state); });
}

MBS_FMU_EXPORT fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate state) {
  return call(c, "fmi2SetFMUstate", [&](Component& k) { return k.set_state(state); });
}

MBS_FMU_EXPORT fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate* state) {
  return call(c, "fmi2FreeFMUstate", [&](Component& k) { return k.free_state(state); });
}

MBS_FMU_EXPORT fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate state,
                                                     size_t* size) {
  return call(c, "fmi2SerializedFMUstateSize",
              [&](Component& k) { return k.serialized_size(state, size); });
}

MBS_FMU_EXPORT fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate state,
                                                fmi2Byte serializedState[], size_t size) {
  return call(c, "fmi2SerializeFMUstate", [&](Component& k) {
    return k.serialize(state, reinterpret_cast<uint8_t*>(serializedState), size);
  });
}

MBS_FMU_EXPORT fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte serializedState[],
                                                  size_t size, fmi2FMUstate* state) {
  return call(c, "fmi2DeSerializeFMUstate", [&](Component& k) {
    return k.deserialize(reinterpret_cast<const uint8_t*>(serializedState), size, state);
  });
}

MBS_FMU_EXPORT fmi2Status fmi2GetDirectionalDerivative(fmi2Component c,
                                                       const fmi2ValueReference vUnknown_ref[],
                                                       size_t nUnknown,
                                                       const fmi2ValueReference vKnown_ref[],
                                                       size_t nKnown, const fmi2Real dvKnown[],
                                                       fmi2Real dvUnknown[]) {
  return call(c, "fmi2GetDirectionalDerivative", [&](Component& k) {
    return k.directional_derivative("fmi2GetDirectionalDerivative", refs(vUnknown_ref), nUnknown,
                                    refs(vKnown_ref), nKnown, dvKnown, dvUnknown);
  });
}

// ---- model exchange

MBS_FMU_EXPORT fmi2Status fmi2EnterEventMode(fmi2Component c) {
  return call(c, "fmi2EnterEventMode", [&](Component& k) { return k.enter_event_mode(); });
}

MBS_FMU_EXPORT fmi2Status fmi2NewDiscreteStates(fmi2Component c, fmi2EventInfo* info) {
  return call(c, "fmi2NewDiscreteStates", [&](Component& k) {
    Component::EventInfo e;
    const Status s = k.update_discrete_states("fmi2NewDiscreteStates", &e);
    if (s == Status::Ok && info) {
      *info = fmi2EventInfo{e.discrete_states_need_update ? 1 : 0,
                            e.terminate_simulation ? 1 : 0,
                            e.nominals_changed ? 1 : 0,
                            e.values_changed ? 1 : 0,
                            e.next_event_time_defined ? 1 : 0,
                            e.next_event_time};
    }
    return s;
  });
}

MBS_FMU_EXPORT fmi2Status fmi2EnterContinuousTimeMode(fmi2Component c) {
  return call(c, "fmi2EnterContinuousTimeMode",
              [&](Component& k) { return k.enter_continuous_time_mode(); });
}

MBS_FMU_EXPORT fmi2Status fmi2CompletedIntegratorStep(fmi2Component c,
                                                      fmi2Boolean noSetFMUStatePriorToCurrentPoint,
                                                      fmi2Boolean* enterEventMode,
                                                      fmi2Boolean* terminateSimulation) {
  (void)noSetFMUStatePriorToCurrentPoint;
  return call(c, "fmi2CompletedIntegratorStep", [&](Component& k) {
    bool enter = false, stop = false;
    const Status s = k.completed_integrator_step(&enter, &stop);
    if (enterEventMode) *enterEventMode = enter ? 1 : 0;
    if (terminateSimulation) *terminateSimulation = stop ? 1 : 0;
    return s;
  });
}

MBS_FMU_EXPORT fmi2Status fmi2SetTime(fmi2Component c, fmi2Real time) {
  return call(c, "fmi2SetTime", [&](Component& k) { return k.set_time(time); });
}

MBS_FMU_EXPORT fmi2Status fmi2SetContinuousStates(fmi2Component c, const fmi2Real x[], size_t nx) {
  return call(c, "fmi2SetContinuousStates",
              [&](Component& k) { return k.set_continuous_states(x, nx); });
}

MBS_FMU_EXPORT fmi2Status fmi2GetDerivatives(fmi2Component c, fmi2Real derivatives[], size_t nx) {
  return call(c, "fmi2GetDerivatives",
              [&](Component& k) { return k.get_derivatives(derivatives, nx); });
}

MBS_FMU_EXPORT fmi2Status fmi2GetEventIndicators(fmi2Component c, fmi2Real eventIndicators[],
                                                 size_t ni) {
  return call(c, "fmi2GetEventIndicators",
              [&](Component& k) { return k.get_event_indicators(eventIndicators, ni); });
}

MBS_FMU_EXPORT fmi2Status fmi2GetContinuousStates(fmi2Component c, fmi2Real x[], size_t nx) {
  return call(c, "fmi2GetContinuousStates",
              [&](Component& k) { return k.get_continuous_states(x, nx); });
}

MBS_FMU_EXPORT fmi2Status fmi2GetNominalsOfContinuousStates(fmi2Component c, fmi2Real x_nominal[],
                                                            size_t nx) {
  return call(c, "fmi2GetNominalsOfContinuousStates",
              [&](Component& k) { return k.get_nominals(x_nominal, nx); });
}

// ---- co-simulation

MBS_FMU_EXPORT fmi2Status fmi2SetRealInputDerivatives(fmi2Component c,
                                                      const fmi2ValueReference vr[], size_t nvr,
                                                      const fmi2Integer order[],
                                                      const fmi2Real value[]) {
  (void)vr, (void)order, (void)value;
  return call(c, "fmi2SetRealInputDerivatives", [&](Component& k) {
    return nvr == 0 ? Status::Ok
                    : k.not_available("fmi2SetRealInputDerivatives",
                                      "inputs are held constant over a step "
                                      "(canInterpolateInputs is false)");
  });
}

MBS_FMU_EXPORT fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c,
                                                       const fmi2ValueReference vr[], size_t nvr,
                                                       const fmi2Integer order[],
                                                       fmi2Real value[]) {
  (void)vr, (void)order, (void)value;
  return call(c, "fmi2GetRealOutputDerivatives", [&](Component& k) {
    return nvr == 0
               ? Status::Ok
               : k.not_available("fmi2GetRealOutputDerivatives", "maxOutputDerivativeOrder is 0");
  });
}

MBS_FMU_EXPORT fmi2Status fmi2DoStep(fmi2Component c, fmi2Real currentCommunicationPoint,
                                     fmi2Real communicationStepSize,
                                     fmi2Boolean noSetFMUStatePriorToCurrentPoint) {
  (void)noSetFMUStatePriorToCurrentPoint;
  return call(c, "fmi2DoStep", [&](Component& k) {
    return k.do_step(currentCommunicationPoint, communicationStepSize, nullptr);
  });
}

MBS_FMU_EXPORT fmi2Status fmi2CancelStep(fmi2Component c) {
  return call(c, "fmi2CancelStep", [&](Component& k) {
    return k.not_available("fmi2CancelStep", "doStep never returns fmi2Pending");
  });
}

MBS_FMU_EXPORT fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s,
                                        fmi2Status* value) {
  (void)s, (void)value;
  return call(c, "fmi2GetStatus", [&](Component& k) {
    k.log(Status::Discard, "fmi2GetStatus: doStep is synchronous: there is no pending status");
    return Status::Discard;
  });
}

MBS_FMU_EXPORT fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s,
                                            fmi2Real* value) {
  return call(c, "fmi2GetRealStatus", [&](Component& k) {
    if (s != fmi2LastSuccessfulTime || !value) {
      k.log(Status::Discard, "fmi2GetRealStatus: only fmi2LastSuccessfulTime");
      return Status::Discard;
    }
    *value = k.time();
    return Status::Ok;
  });
}

MBS_FMU_EXPORT fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s,
                                               fmi2Integer* value) {
  (void)s, (void)value;
  return call(c, "fmi2GetIntegerStatus", [&](Component& k) {
    k.log(Status::Discard, "fmi2GetIntegerStatus: no integer status");
    return Status::Discard;
  });
}

MBS_FMU_EXPORT fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s,
                                               fmi2Boolean* value) {
  return call(c, "fmi2GetBooleanStatus", [&](Component& k) {
    if (s != fmi2Terminated || !value) {
      k.log(Status::Discard, "fmi2GetBooleanStatus: only fmi2Terminated");
      return Status::Discard;
    }
    *value = 0;  // the FMU never ends a simulation by itself
    return Status::Ok;
  });
}

MBS_FMU_EXPORT fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s,
                                              fmi2String* value) {
  (void)s, (void)value;
  return call(c, "fmi2GetStringStatus", [&](Component& k) {
    k.log(Status::Discard, "fmi2GetStringStatus: doStep is synchronous: no pending status");
    return Status::Discard;
  });
}
