// The FMI 3.0 C API of an exported FMU (co-simulation and model exchange), thin over
// rt::fmi::Component. The C types (Fmi3Types.h) are declared from the FMI 3.0 specification
// (fmi3PlatformTypes.h, fmi3FunctionTypes.h): the standard's headers are not copied.
// Scheduled execution, clocks, configuration mode and adjoint derivatives are not provided
// (Error, logged). docs/fmu.md, "The FMI functions".
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "tools/fmu/blob/Embedded.h"
#include "tools/fmu/blob/Export.h"
#include "tools/fmu/blob/Fmi3Types.h"

namespace {

using mbs::fmu_blob::Instance;
using mbs::rt::fmi::Component;
using mbs::rt::fmi::Status;
using mbs::rt::fmi::Type;
using mbs::rt::fmi::Unit;

fmi3Status to_fmi3(Status s) {
  return static_cast<fmi3Status>(static_cast<int>(s));
}

Component* component(fmi3Instance c) {
  Instance* i = mbs::fmu_blob::find_instance(c);
  return i && i->fmi_version == 3 ? i->component.get() : nullptr;
}

template <class F>
fmi3Status call(fmi3Instance c, const char* fn, F&& f) {
  Component* comp = component(c);
  if (!comp) return fmi3Error;
  try {
    return to_fmi3(f(*comp));
  } catch (const std::exception& e) {
    comp->log(Status::Error, std::string(fn) + ": " + e.what());
  } catch (...) {
    comp->log(Status::Error, std::string(fn) + ": unknown exception");
  }
  return fmi3Error;
}

fmi3Instance instantiate(Unit::Kind kind, fmi3String instanceName, fmi3String instantiationToken,
                         fmi3Boolean loggingOn, fmi3InstanceEnvironment env,
                         fmi3LogMessageCallback logMessage) {
  try {
    const std::string name = instanceName ? instanceName : "";
    Component::Logger log;
    if (logMessage) {
      // FMI 3's callback has no instance name: the message starts with it
      log = [logMessage, env, name](Status s, const char* category, const std::string& msg) {
        logMessage(env, to_fmi3(s), category, (name + ": " + msg).c_str());
      };
    }
    const auto& loaded = mbs::fmu_blob::embedded();
    auto comp =
        Component::instantiate(loaded.fmu, loaded.error, kind, instanceName,
                               instantiationToken ? instantiationToken : "", log, loggingOn);
    if (!comp) return nullptr;
    auto inst = std::make_unique<Instance>();
    inst->fmi_version = 3;
    inst->component = std::move(comp);
    mbs::fmu_blob::register_instance(inst.get());
    return inst.release();
  } catch (...) {
    return nullptr;
  }
}

// A function of a feature this FMU does not have.
fmi3Status unavailable(fmi3Instance c, const char* fn, const char* why) {
  return call(c, fn, [&](Component& k) { return k.not_available(fn, why); });
}

}  // namespace

// ---- common functions

MBS_FMU_EXPORT const char* fmi3GetVersion(void) {
  return "3.0";
}

MBS_FMU_EXPORT fmi3Status fmi3SetDebugLogging(fmi3Instance instance, fmi3Boolean loggingOn,
                                              size_t nCategories, const fmi3String categories[]) {
  return call(instance, "fmi3SetDebugLogging", [&](Component& k) {
    return k.set_debug_logging(loggingOn, nCategories, categories);
  });
}

MBS_FMU_EXPORT fmi3Instance fmi3InstantiateModelExchange(
    fmi3String instanceName, fmi3String instantiationToken, fmi3String resourcePath,
    fmi3Boolean visible, fmi3Boolean loggingOn, fmi3InstanceEnvironment instanceEnvironment,
    fmi3LogMessageCallback logMessage) {
  (void)resourcePath, (void)visible;
  return instantiate(Unit::Kind::ModelExchange, instanceName, instantiationToken, loggingOn,
                     instanceEnvironment, logMessage);
}

MBS_FMU_EXPORT fmi3Instance fmi3InstantiateCoSimulation(
    fmi3String instanceName, fmi3String instantiationToken, fmi3String resourcePath,
    fmi3Boolean visible, fmi3Boolean loggingOn, fmi3Boolean eventModeUsed,
    fmi3Boolean earlyReturnAllowed, const fmi3ValueReference requiredIntermediateVariables[],
    size_t nRequiredIntermediateVariables, fmi3InstanceEnvironment instanceEnvironment,
    fmi3LogMessageCallback logMessage, fmi3IntermediateUpdateCallback intermediateUpdate) {
  // no event mode in co-simulation (hasEventMode false), no early return, no intermediate update
  (void)resourcePath, (void)visible, (void)eventModeUsed, (void)earlyReturnAllowed;
  (void)requiredIntermediateVariables, (void)nRequiredIntermediateVariables;
  (void)intermediateUpdate;
  return instantiate(Unit::Kind::CoSimulation, instanceName, instantiationToken, loggingOn,
                     instanceEnvironment, logMessage);
}

MBS_FMU_EXPORT fmi3Instance fmi3InstantiateScheduledExecution(
    fmi3String instanceName, fmi3String instantiationToken, fmi3String resourcePath,
    fmi3Boolean visible, fmi3Boolean loggingOn, fmi3InstanceEnvironment instanceEnvironment,
    fmi3LogMessageCallback logMessage, fmi3ClockUpdateCallback clockUpdate,
    fmi3LockPreemptionCallback lockPreemption, fmi3UnlockPreemptionCallback unlockPreemption) {
  (void)instanceName, (void)instantiationToken, (void)resourcePath, (void)visible;
  (void)loggingOn, (void)clockUpdate, (void)lockPreemption, (void)unlockPreemption;
  if (logMessage)
    logMessage(instanceEnvironment, fmi3Error, "logStatusError",
               "fmi3InstantiateScheduledExecution: this FMU offers no scheduled execution");
  return nullptr;
}

MBS_FMU_EXPORT void fmi3FreeInstance(fmi3Instance instance) {
  Instance* i = mbs::fmu_blob::find_instance(instance);
  if (!i || i->fmi_version != 3) return;
  mbs::fmu_blob::unregister_instance(i);
  delete i;
}

MBS_FMU_EXPORT fmi3Status fmi3EnterInitializationMode(fmi3Instance instance,
                                                      fmi3Boolean toleranceDefined,
                                                      fmi3Float64 tolerance, fmi3Float64 startTime,
                                                      fmi3Boolean stopTimeDefined,
                                                      fmi3Float64 stopTime) {
  return call(instance, "fmi3EnterInitializationMode", [&](Component& k) {
    const Status s =
        k.setup_experiment(toleranceDefined, tolerance, startTime, stopTimeDefined, stopTime);
    return s != Status::Ok ? s : k.enter_initialization();
  });
}

MBS_FMU_EXPORT fmi3Status fmi3ExitInitializationMode(fmi3Instance instance) {
  return call(instance, "fmi3ExitInitializationMode",
              [&](Component& k) { return k.exit_initialization(); });
}

MBS_FMU_EXPORT fmi3Status fmi3EnterEventMode(fmi3Instance instance) {
  return call(instance, "fmi3EnterEventMode", [&](Component& k) { return k.enter_event_mode(); });
}

MBS_FMU_EXPORT fmi3Status fmi3Terminate(fmi3Instance instance) {
  return call(instance, "fmi3Terminate", [&](Component& k) { return k.terminate(); });
}

MBS_FMU_EXPORT fmi3Status fmi3Reset(fmi3Instance instance) {
  return call(instance, "fmi3Reset", [&](Component& k) { return k.reset(); });
}

// ---- values

MBS_FMU_EXPORT fmi3Status fmi3GetFloat64(fmi3Instance instance,
                                         const fmi3ValueReference valueReferences[],
                                         size_t nValueReferences, fmi3Float64 values[],
                                         size_t nValues) {
  return call(instance, "fmi3GetFloat64", [&](Component& k) {
    return k.get_float64("fmi3GetFloat64", valueReferences, nValueReferences, values, nValues);
  });
}

MBS_FMU_EXPORT fmi3Status fmi3SetFloat64(fmi3Instance instance,
                                         const fmi3ValueReference valueReferences[],
                                         size_t nValueReferences, const fmi3Float64 values[],
                                         size_t nValues) {
  return call(instance, "fmi3SetFloat64", [&](Component& k) {
    return k.set_float64("fmi3SetFloat64", valueReferences, nValueReferences, values, nValues);
  });
}

// Int32 and Boolean variables, held as doubles (whole numbers; Boolean 1 / 0); scalars only, so
// one value per value reference
namespace {

bool one_each(Component& k, const char* fn, size_t nvr, size_t nvalues) {
  if (nvr == nvalues) return true;
  k.log(Status::Error, std::string(fn) + ": " + std::to_string(nvr) + " value references, " +
                           std::to_string(nvalues) + " values (every variable is a scalar)");
  return false;
}

}  // namespace

MBS_FMU_EXPORT fmi3Status fmi3GetInt32(fmi3Instance instance,
                                       const fmi3ValueReference valueReferences[],
                                       size_t nValueReferences, fmi3Int32 values[],
                                       size_t nValues) {
  return call(instance, "fmi3GetInt32", [&](Component& k) {
    if (!one_each(k, "fmi3GetInt32", nValueReferences, nValues)) return Status::Error;
    std::vector<double> x(nValueReferences);
    const Status s = k.get_typed("fmi3GetInt32", Type::Int32, valueReferences, nValueReferences,
                                 values ? x.data() : nullptr);
    for (size_t i = 0; s == Status::Ok && i < nValueReferences; ++i)
      values[i] = static_cast<fmi3Int32>(std::lround(x[i]));
    return s;
  });
}

MBS_FMU_EXPORT fmi3Status fmi3GetBoolean(fmi3Instance instance,
                                         const fmi3ValueReference valueReferences[],
                                         size_t nValueReferences, fmi3Boolean values[],
                                         size_t nValues) {
  return call(instance, "fmi3GetBoolean", [&](Component& k) {
    if (!one_each(k, "fmi3GetBoolean", nValueReferences, nValues)) return Status::Error;
    std::vector<double> x(nValueReferences);
    const Status s = k.get_typed("fmi3GetBoolean", Type::Boolean, valueReferences, nValueReferences,
                                 values ? x.data() : nullptr);
    for (size_t i = 0; s == Status::Ok && i < nValueReferences; ++i) values[i] = x[i] != 0.0;
    return s;
  });
}

MBS_FMU_EXPORT fmi3Status fmi3SetInt32(fmi3Instance instance,
                                       const fmi3ValueReference valueReferences[],
                                       size_t nValueReferences, const fmi3Int32 values[],
                                       size_t nValues) {
  return call(instance, "fmi3SetInt32", [&](Component& k) {
    if (!one_each(k, "fmi3SetInt32", nValueReferences, nValues)) return Status::Error;
    std::vector<double> x(nValueReferences);
    for (size_t i = 0; values && i < nValueReferences; ++i) x[i] = static_cast<double>(values[i]);
    return k.set_typed("fmi3SetInt32", Type::Int32, valueReferences, nValueReferences,
                       values ? x.data() : nullptr);
  });
}

MBS_FMU_EXPORT fmi3Status fmi3SetBoolean(fmi3Instance instance,
                                         const fmi3ValueReference valueReferences[],
                                         size_t nValueReferences, const fmi3Boolean values[],
                                         size_t nValues) {
  return call(instance, "fmi3SetBoolean", [&](Component& k) {
    if (!one_each(k, "fmi3SetBoolean", nValueReferences, nValues)) return Status::Error;
    std::vector<double> x(nValueReferences);
    for (size_t i = 0; values && i < nValueReferences; ++i) x[i] = values[i] ? 1.0 : 0.0;
    return k.set_typed("fmi3SetBoolean", Type::Boolean, valueReferences, nValueReferences,
                       values ? x.data() : nullptr);
  });
}

#define MBS_FMI3_OTHER_TYPE(NAME, CONST, TYPE)                                                   \
  MBS_FMU_EXPORT fmi3Status NAME(fmi3Instance instance,                                          \
                                 const fmi3ValueReference valueReferences[],                     \
                                 size_t nValueReferences, CONST TYPE values[], size_t nValues) { \
    (void)values, (void)nValues;                                                                 \
    return call(instance, #NAME, [&](Component& k) {                                             \
      return k.other_type(#NAME, valueReferences, nValueReferences);                             \
    });                                                                                          \
  }
MBS_FMI3_OTHER_TYPE(fmi3GetFloat32, , fmi3Float32)
MBS_FMI3_OTHER_TYPE(fmi3GetInt8, , fmi3Int8)
MBS_FMI3_OTHER_TYPE(fmi3GetUInt8, , fmi3UInt8)
MBS_FMI3_OTHER_TYPE(fmi3GetInt16, , fmi3Int16)
MBS_FMI3_OTHER_TYPE(fmi3GetUInt16, , fmi3UInt16)
MBS_FMI3_OTHER_TYPE(fmi3GetUInt32, , fmi3UInt32)
MBS_FMI3_OTHER_TYPE(fmi3GetInt64, , fmi3Int64)
MBS_FMI3_OTHER_TYPE(fmi3GetUInt64, , fmi3UInt64)
MBS_FMI3_OTHER_TYPE(fmi3GetString, , fmi3String)
MBS_FMI3_OTHER_TYPE(fmi3SetFloat32, const, fmi3Float32)
MBS_FMI3_OTHER_TYPE(fmi3SetInt8, const, fmi3Int8)
MBS_FMI3_OTHER_TYPE(fmi3SetUInt8, const, fmi3UInt8)
MBS_FMI3_OTHER_TYPE(fmi3SetInt16, const, fmi3Int16)
MBS_FMI3_OTHER_TYPE(fmi3SetUInt16, const, fmi3UInt16)
MBS_FMI3_OTHER_TYPE(fmi3SetUInt32, const, fmi3UInt32)
MBS_FMI3_OTHER_TYPE(fmi3SetInt64, const, fmi3Int64)
MBS_FMI3_OTHER_TYPE(fmi3SetUInt64, const, fmi3UInt64)
MBS_FMI3_OTHER_TYPE(fmi3SetString, const, fmi3String)
#undef MBS_FMI3_OTHER_TYPE

MBS_FMU_EXPORT fmi3Status fmi3GetBinary(fmi3Instance instance,
                                        const fmi3ValueReference valueReferences[],
                                        size_t nValueReferences, size_t valueSizes[],
                                        fmi3Binary values[], size_t nValues) {
  (void)valueSizes, (void)values, (void)nValues;
  return call(instance, "fmi3GetBinary", [&](Component& k) {
    return k.other_type("fmi3GetBinary", valueReferences, nValueReferences);
  });
}

MBS_FMU_EXPORT fmi3Status fmi3SetBinary(fmi3Instance instance,
                                        const fmi3ValueReference valueReferences[],
                                        size_t nValueReferences, const size_t valueSizes[],
                                        const fmi3Binary values[], size_t nValues) {
  (void)valueSizes, (void)values, (void)nValues;
  return call(instance, "fmi3SetBinary", [&](Component& k) {
    return k.other_type("fmi3SetBinary", valueReferences, nValueReferences);
  });
}

MBS_FMU_EXPORT fmi3Status fmi3GetClock(fmi3Instance instance,
                                       const fmi3ValueReference valueReferences[],
                                       size_t nValueReferences, fmi3Clock values[]) {
  (void)values;
  return call(instance, "fmi3GetClock", [&](Component& k) {
    return k.other_type("fmi3GetClock", valueReferences, nValueReferences);
  });
}

MBS_FMU_EXPORT fmi3Status fmi3SetClock(fmi3Instance instance,
                                       const fmi3ValueReference valueReferences[],
                                       size_t nValueReferences, const fmi3Clock values[]) {
  (void)values;
  return call(instance, "fmi3SetClock", [&](Component& k) {
    return k.other_type("fmi3SetClock", valueReferences, nValueReferences);
  });
}

// ---- dependencies (in the model description's ModelStructure)

MBS_FMU_EXPORT fmi3Status fmi3GetNumberOfVariableDependencies(fmi3Instance instance,
                                                              fmi3ValueReference valueReference,
                                                              size_t* nDependencies) {
  (void)valueReference, (void)nDependencies;
  return unavailable(instance, "fmi3GetNumberOfVariableDependencies",
                     "the dependencies are in the model description (ModelStructure)");
}

MBS_FMU_EXPORT fmi3Status fmi3GetVariableDependencies(
    fmi3Instance instance, fmi3ValueReference dependent, size_t elementIndicesOfDependent[],
    fmi3ValueReference independents[], size_t elementIndicesOfIndependents[],
    fmi3DependencyKind dependencyKinds[], size_t nDependencies) {
  (void)dependent, (void)elementIndicesOfDependent, (void)independents;
  (void)elementIndicesOfIndependents, (void)dependencyKinds, (void)nDependencies;
  return unavailable(instance, "fmi3GetVariableDependencies",
                     "the dependencies are in the model description (ModelStructure)");
}

// ---- FMU state

MBS_FMU_EXPORT fmi3Status fmi3GetFMUState(fmi3Instance instance, fmi3FMUState* FMUState) {
  return call(instance, "fmi3GetFMUState", [&](Component& k) { return k.get_state(FMUState); });
}

MBS_FMU_EXPORT fmi3Status fmi3SetFMUState(fmi3Instance instance, fmi3FMUState FMUState) {
  return call(instance, "fmi3SetFMUState", [&](Component& k) { return k.set_state(FMUState); });
}

MBS_FMU_EXPORT fmi3Status fmi3FreeFMUState(fmi3Instance instance, fmi3FMUState* FMUState) {
  return call(instance, "fmi3FreeFMUState", [&](Component& k) { return k.free_state(FMUState); });
}

MBS_FMU_EXPORT fmi3Status fmi3SerializedFMUStateSize(fmi3Instance instance, fmi3FMUState FMUState,
                                                     size_t* size) {
  return call(instance, "fmi3SerializedFMUStateSize",
              [&](Component& k) { return k.serialized_size(FMUState, size); });
}

MBS_FMU_EXPORT fmi3Status fmi3SerializeFMUState(fmi3Instance instance, fmi3FMUState FMUState,
                                                fmi3Byte serializedState[], size_t size) {
  return call(instance, "fmi3SerializeFMUState",
              [&](Component& k) { return k.serialize(FMUState, serializedState, size); });
}

MBS_FMU_EXPORT fmi3Status fmi3DeserializeFMUState(fmi3Instance instance,
                                                  const fmi3Byte serializedState[], size_t size,
                                                  fmi3FMUState* FMUState) {
  return call(instance, "fmi3DeserializeFMUState",
              [&](Component& k) { return k.deserialize(serializedState, size, FMUState); });
}

// ---- partial derivatives

MBS_FMU_EXPORT fmi3Status fmi3GetDirectionalDerivative(
    fmi3Instance instance, const fmi3ValueReference unknowns[], size_t nUnknowns,
    const fmi3ValueReference knowns[], size_t nKnowns, const fmi3Float64 seed[], size_t nSeed,
    fmi3Float64 sensitivity[], size_t nSensitivity) {
  return call(instance, "fmi3GetDirectionalDerivative", [&](Component& k) {
    if (nSeed != nKnowns || nSensitivity != nUnknowns)
      return k.not_available("fmi3GetDirectionalDerivative",
                             "nSeed must be nKnowns and nSensitivity nUnknowns (scalars only)");
    return k.directional_derivative("fmi3GetDirectionalDerivative", unknowns, nUnknowns, knowns,
                                    nKnowns, seed, sensitivity);
  });
}

MBS_FMU_EXPORT fmi3Status fmi3GetAdjointDerivative(
    fmi3Instance instance, const fmi3ValueReference unknowns[], size_t nUnknowns,
    const fmi3ValueReference knowns[], size_t nKnowns, const fmi3Float64 seed[], size_t nSeed,
    fmi3Float64 sensitivity[], size_t nSensitivity) {
  (void)unknowns, (void)nUnknowns, (void)knowns, (void)nKnowns, (void)seed, (void)nSeed;
  (void)sensitivity, (void)nSensitivity;
  return unavailable(instance, "fmi3GetAdjointDerivative", "providesAdjointDerivatives is false");
}

// ---- configuration mode and clocks: none

MBS_FMU_EXPORT fmi3Status fmi3EnterConfigurationMode(fmi3Instance instance) {
  return unavailable(instance, "fmi3EnterConfigurationMode",
                     "the FMU has no structural parameters");
}

MBS_FMU_EXPORT fmi3Status fmi3ExitConfigurationMode(fmi3Instance instance) {
  return unavailable(instance, "fmi3ExitConfigurationMode", "the FMU has no structural parameters");
}

MBS_FMU_EXPORT fmi3Status fmi3GetIntervalDecimal(fmi3Instance instance,
                                                 const fmi3ValueReference valueReferences[],
                                                 size_t nValueReferences, fmi3Float64 intervals[],
                                                 fmi3IntervalQualifier qualifiers[]) {
  (void)valueReferences, (void)nValueReferences, (void)intervals, (void)qualifiers;
  return unavailable(instance, "fmi3GetIntervalDecimal", "the FMU has no clocks");
}

MBS_FMU_EXPORT fmi3Status fmi3GetIntervalFraction(fmi3Instance instance,
                                                  const fmi3ValueReference valueReferences[],
                                                  size_t nValueReferences, fmi3UInt64 counters[],
                                                  fmi3UInt64 resolutions[],
                                                  fmi3IntervalQualifier qualifiers[]) {
  (void)valueReferences, (void)nValueReferences, (void)counters, (void)resolutions,
      (void)qualifiers;
  return unavailable(instance, "fmi3GetIntervalFraction", "the FMU has no clocks");
}

MBS_FMU_EXPORT fmi3Status fmi3GetShiftDecimal(fmi3Instance instance,
                                              const fmi3ValueReference valueReferences[],
                                              size_t nValueReferences, fmi3Float64 shifts[]) {
  (void)valueReferences, (void)nValueReferences, (void)shifts;
  return unavailable(instance, "fmi3GetShiftDecimal", "the FMU has no clocks");
}

MBS_FMU_EXPORT fmi3Status fmi3GetShiftFraction(fmi3Instance instance,
                                               const fmi3ValueReference valueReferences[],
                                               size_t nValueReferences, fmi3UInt64 counters[],
                                               fmi3UInt64 resolutions[]) {
  (void)valueReferences, (void)nValueReferences, (void)counters, (void)resolutions;
  return unavailable(instance, "fmi3GetShiftFraction", "the FMU has no clocks");
}

MBS_FMU_EXPORT fmi3Status fmi3SetIntervalDecimal(fmi3Instance instance,
                                                 const fmi3ValueReference valueReferences[],
                                                 size_t nValueReferences,
                                                 const fmi3Float64 intervals[]) {
  (void)valueReferences, (void)nValueReferences, (void)intervals;
  return unavailable(instance, "fmi3SetIntervalDecimal", "the FMU has no clocks");
}

MBS_FMU_EXPORT fmi3Status fmi3SetIntervalFraction(fmi3Instance instance,
                                                  const fmi3ValueReference valueReferences[],
                                                  size_t nValueReferences,
                                                  const fmi3UInt64 counters[],
                                                  const fmi3UInt64 resolutions[]) {
  (void)valueReferences, (void)nValueReferences, (void)counters, (void)resolutions;
  return unavailable(instance, "fmi3SetIntervalFraction", "the FMU has no clocks");
}

MBS_FMU_EXPORT fmi3Status fmi3SetShiftDecimal(fmi3Instance instance,
                                              const fmi3ValueReference valueReferences[],
                                              size_t nValueReferences, const fmi3Float64 shifts[]) {
  (void)valueReferences, (void)nValueReferences, (void)shifts;
  return unavailable(instance, "fmi3SetShiftDecimal", "the FMU has no clocks");
}

MBS_FMU_EXPORT fmi3Status fmi3SetShiftFraction(fmi3Instance instance,
                                               const fmi3ValueReference valueReferences[],
                                               size_t nValueReferences, const fmi3UInt64 counters[],
                                               const fmi3UInt64 resolutions[]) {
  (void)valueReferences, (void)nValueReferences, (void)counters, (void)resolutions;
  return unavailable(instance, "fmi3SetShiftFraction", "the FMU has no clocks");
}

MBS_FMU_EXPORT fmi3Status fmi3EvaluateDiscreteStates(fmi3Instance instance) {
  // no discrete states: nothing to evaluate
  return call(instance, "fmi3EvaluateDiscreteStates", [&](Component&) { return Status::Ok; });
}

MBS_FMU_EXPORT fmi3Status fmi3UpdateDiscreteStates(
    fmi3Instance instance, fmi3Boolean* discreteStatesNeedUpdate, fmi3Boolean* terminateSimulation,
    fmi3Boolean* nominalsOfContinuousStatesChanged, fmi3Boolean* valuesOfContinuousStatesChanged,
    fmi3Boolean* nextEventTimeDefined, fmi3Float64* nextEventTime) {
  return call(instance, "fmi3UpdateDiscreteStates", [&](Component& k) {
    Component::EventInfo e;
    const Status s = k.update_discrete_states("fmi3UpdateDiscreteStates", &e);
    if (s == Status::Ok) {
      const std::pair<fmi3Boolean*, bool> flags[] = {
          {discreteStatesNeedUpdate, e.discrete_states_need_update},
          {terminateSimulation, e.terminate_simulation},
          {nominalsOfContinuousStatesChanged, e.nominals_changed},
          {valuesOfContinuousStatesChanged, e.values_changed},
          {nextEventTimeDefined, e.next_event_time_defined}};
      for (const auto& f : flags)
        if (f.first) *f.first = f.second;
      if (nextEventTime) *nextEventTime = e.next_event_time;
    }
    return s;
  });
}

// ---- model exchange

MBS_FMU_EXPORT fmi3Status fmi3EnterContinuousTimeMode(fmi3Instance instance) {
  return call(instance, "fmi3EnterContinuousTimeMode",
              [&](Component& k) { return k.enter_continuous_time_mode(); });
}

MBS_FMU_EXPORT fmi3Status fmi3CompletedIntegratorStep(fmi3Instance instance,
                                                      fmi3Boolean noSetFMUStatePriorToCurrentPoint,
                                                      fmi3Boolean* enterEventMode,
                                                      fmi3Boolean* terminateSimulation) {
  (void)noSetFMUStatePriorToCurrentPoint;
  return call(instance, "fmi3CompletedIntegratorStep", [&](Component& k) {
    return k.completed_integrator_step(enterEventMode, terminateSimulation);
  });
}

MBS_FMU_EXPORT fmi3Status fmi3SetTime(fmi3Instance instance, fmi3Float64 time) {
  return call(instance, "fmi3SetTime", [&](Component& k) { return k.set_time(time); });
}

MBS_FMU_EXPORT fmi3Status fmi3SetContinuousStates(fmi3Instance instance,
                                                  const fmi3Float64 continuousStates[],
                                                  size_t nContinuousStates) {
  return call(instance, "fmi3SetContinuousStates", [&](Component& k) {
    return k.set_continuous_states(continuousStates, nContinuousStates);
  });
}

MBS_FMU_EXPORT fmi3Status fmi3GetContinuousStateDerivatives(fmi3Instance instance,
                                                            fmi3Float64 derivatives[],
                                                            size_t nContinuousStates) {
  return call(instance, "fmi3GetContinuousStateDerivatives",
              [&](Component& k) { return k.get_derivatives(derivatives, nContinuousStates); });
}

MBS_FMU_EXPORT fmi3Status fmi3GetEventIndicators(fmi3Instance instance,
                                                 fmi3Float64 eventIndicators[],
                                                 size_t nEventIndicators) {
  return call(instance, "fmi3GetEventIndicators", [&](Component& k) {
    return k.get_event_indicators(eventIndicators, nEventIndicators);
  });
}

MBS_FMU_EXPORT fmi3Status fmi3GetContinuousStates(fmi3Instance instance,
                                                  fmi3Float64 continuousStates[],
                                                  size_t nContinuousStates) {
  return call(instance, "fmi3GetContinuousStates", [&](Component& k) {
    return k.get_continuous_states(continuousStates, nContinuousStates);
  });
}

MBS_FMU_EXPORT fmi3Status fmi3GetNominalsOfContinuousStates(fmi3Instance instance,
                                                            fmi3Float64 nominals[],
                                                            size_t nContinuousStates) {
  return call(instance, "fmi3GetNominalsOfContinuousStates",
              [&](Component& k) { return k.get_nominals(nominals, nContinuousStates); });
}

MBS_FMU_EXPORT fmi3Status fmi3GetNumberOfEventIndicators(fmi3Instance instance,
                                                         size_t* nEventIndicators) {
  return call(instance, "fmi3GetNumberOfEventIndicators",
              [&](Component& k) { return k.get_number_of_event_indicators(nEventIndicators); });
}

MBS_FMU_EXPORT fmi3Status fmi3GetNumberOfContinuousStates(fmi3Instance instance,
                                                          size_t* nContinuousStates) {
  return call(instance, "fmi3GetNumberOfContinuousStates",
              [&](Component& k) { return k.get_number_of_states(nContinuousStates); });
}

// ---- co-simulation

MBS_FMU_EXPORT fmi3Status fmi3EnterStepMode(fmi3Instance instance) {
  // without event mode, exitInitializationMode enters step mode itself
  return call(instance, "fmi3EnterStepMode", [&](Component& k) {
    return k.phase() == Component::Phase::StepMode
               ? Status::Ok
               : k.not_available("fmi3EnterStepMode", "not in event mode of co-simulation");
  });
}

MBS_FMU_EXPORT fmi3Status fmi3GetOutputDerivatives(fmi3Instance instance,
                                                   const fmi3ValueReference valueReferences[],
                                                   size_t nValueReferences,
                                                   const fmi3Int32 orders[], fmi3Float64 values[],
                                                   size_t nValues) {
  (void)valueReferences, (void)orders, (void)values, (void)nValues;
  return call(instance, "fmi3GetOutputDerivatives", [&](Component& k) {
    return nValueReferences == 0
               ? Status::Ok
               : k.not_available("fmi3GetOutputDerivatives", "maxOutputDerivativeOrder is 0");
  });
}

MBS_FMU_EXPORT fmi3Status fmi3DoStep(fmi3Instance instance, fmi3Float64 currentCommunicationPoint,
                                     fmi3Float64 communicationStepSize,
                                     fmi3Boolean noSetFMUStatePriorToCurrentPoint,
                                     fmi3Boolean* eventHandlingNeeded,
                                     fmi3Boolean* terminateSimulation, fmi3Boolean* earlyReturn,
                                     fmi3Float64* lastSuccessfulTime) {
  (void)noSetFMUStatePriorToCurrentPoint;
  return call(instance, "fmi3DoStep", [&](Component& k) {
    const Status s =
        k.do_step(currentCommunicationPoint, communicationStepSize, lastSuccessfulTime);
    if (eventHandlingNeeded) *eventHandlingNeeded = false;
    if (terminateSimulation) *terminateSimulation = false;
    if (earlyReturn) *earlyReturn = false;
    return s;
  });
}

MBS_FMU_EXPORT fmi3Status fmi3ActivateModelPartition(fmi3Instance instance,
                                                     fmi3ValueReference clockReference,
                                                     fmi3Float64 activationTime) {
  (void)clockReference, (void)activationTime;
  return unavailable(instance, "fmi3ActivateModelPartition",
                     "this FMU offers no scheduled execution");
}
