// One set of parameter values and start values over an immutable CompiledModel: what a run
// starts from (Pinocchio's Data to the model's Model, for the values a user sets).
//
//   rt::Instance inst(model);
//   inst.set_parameter("k", 200);     // derived parameters follow (parameter_bindings)
//   inst.set_start("x", 0.1);         // a start value of an unknown
//   inst.set_input("u", 2);           // the value of a top-level input (CompiledModel::inputs)
//   auto v = inst.start_vector();     // checked: bounds, finiteness
//   solver->set_start(v);             // or solve_static(..., v), InverseDynamicsOptions::start
//
// Nothing is recompiled. A parameter whose value the compiler used as a number
// (CompiledModel::parameter_compile_time) and a start value the model cannot take at run time
// (a model with constraints, whose start values the compiler checks or assembles) are refused
// with SetError::Kind::NeedsCompile; the compiling front ends (mbs::Session) then recompile.
// Cheap to copy: a study keeps one Instance per run or thread over one shared model.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/model/CompiledModel.h"
#include "runtime/solvers/Integrator.h"

namespace mbs::rt {

class SetError : public std::runtime_error {
 public:
  enum class Kind : uint8_t {
    UnknownName,   // no such parameter (or unknown); the message suggests the nearest names
    NeedsCompile,  // the value is used by the compiler; the message says where
    OutOfRange,    // outside the parameter's min/max
    NotFinite,     // NaN or infinite (also a derived parameter that becomes so)
  };
  SetError(Kind kind, std::string name, const std::string& message)
      : std::runtime_error(message), kind_(kind), name_(std::move(name)) {}
  Kind kind() const { return kind_; }
  const std::string& name() const { return name_; }

 private:
  Kind kind_;
  std::string name_;
};

class Instance {
 public:
  explicit Instance(std::shared_ptr<const CompiledModel> model);

  const CompiledModel& model() const { return *model_; }
  const std::shared_ptr<const CompiledModel>& shared_model() const { return model_; }

  // Index of a parameter in model().parameters, or -1.
  int32_t parameter_index(std::string_view name) const;
  // Does the model have a start value of this name (an unknown, der(q), or an alias of one)?
  bool has_start(std::string_view name) const;
  // Can `name` be set at run time? "" yes; else why not (compile-time use, constraints,
  // unknown name).
  std::string why_compile_time(std::string_view name) const;

  // Sets a parameter. Throws SetError: UnknownName (a start-value name gets a hint),
  // NeedsCompile, NotFinite. The bounds are checked in start_vector() (a derived parameter's
  // bounds depend on all values set).
  void set_parameter(std::string_view name, double value);
  // Sets the start value of an unknown: an ODE2 coordinate q, its derivative "der(q)", an ODE1
  // unknown y or an algebraic unknown z (a guess), or of an alias of one (v = der(x)). NeedsCompile
  // for any other name of the model and for models with position- or velocity-level constraints.
  void set_start(std::string_view name, double value);
  // Index of a top-level input in model().inputs, or -1.
  int32_t input_index(std::string_view name) const;
  // Sets the value of a top-level input (`input Real u` in the model itself) in its slot: the
  // value the run starts with, held until the caller changes it (an input is a known function
  // of time to the solvers; between steps an FMU's importer writes the slot). Never needs a
  // compile. Throws SetError: UnknownName (a parameter or unknown gets a hint), NotFinite.
  void set_input(std::string_view name, double value);
  // Forget everything set.
  void reset();

  const std::map<std::string, double>& parameters_set() const { return parameters_; }
  const std::map<std::string, double>& starts_set() const { return starts_; }
  const std::map<std::string, double>& inputs_set() const { return inputs_; }

  // The symbol vector a run starts from: v0 with the parameters and inputs set, the derived
  // parameters recomputed from their bindings, the start values recomputed from the parameters
  // and inputs (initial_values) and the start values set. Throws SetError (OutOfRange, NotFinite).
  const std::vector<double>& start_vector();
  // The direction of exact sensitivities with respect to a parameter or a start value (a
  // coordinate q, der(q) or an ODE1 unknown y, or an alias of one) at the values set: the
  // derived parameters and the start values computed from parameters follow it; parameters and
  // start values that were set do not. Needs a model compiled with sensitivities. Throws
  // SetError (UnknownName, NeedsCompile: a compile-time value or an algebraic unknown).
  SensitivityDirection sensitivity_direction(std::string_view name);
  // The value of a parameter in start_vector() (throws SetError::UnknownName).
  double parameter(std::string_view name);

 private:
  void update();
  std::shared_ptr<const CompiledModel> model_;
  std::map<std::string, double> parameters_, starts_, inputs_;
  std::vector<double> v_;
  std::vector<double> scratch_;
  bool dirty_ = false;
};

}  // namespace mbs::rt
