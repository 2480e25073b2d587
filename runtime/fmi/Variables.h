// The variables an FMU of a compiled model exposes, and where each lives: one table that the
// model description (tools/fmu/ModelDescription) is written from and that the FMU's runtime maps
// value references with, so the XML and the binary cannot disagree.
//
// Value references: 0 is time; then every output column of the model (every model variable,
// eliminated ones included, the inputs too: CompiledModel::inputs) in column order; then the state
// derivatives the model has no variable for (`der(q)` and `der(q,2)` of a second-order coordinate
// q, `der(y)` of a first-order y; FMI's structured names); then the parameters in CompiledModel
// order; then the solver's parameters; then one `_eventIndicator[k]` per zero-crossing function
// of the model (CompiledModel::n_crossings: FMI 3 lists event indicators as variables).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/model/CompiledModel.h"
#include "runtime/solvers/Options.h"

namespace mbs::rt::fmi {

enum class Causality : uint8_t {
  Independent,
  Parameter,
  CalculatedParameter,
  Input,
  Output,
  Local
};
enum class Variability : uint8_t { Constant, Fixed, Tunable, Discrete, Continuous };
enum class Initial : uint8_t { None, Exact, Approx, Calculated };
// The FMI type of a variable: the model's Real, Integer and Boolean (FMI 2 Real, Integer,
// Boolean; FMI 3 Float64, Int32, Boolean). Every value is held as a double (Boolean 1.0 / 0.0).
enum class Type : uint8_t { Float64, Int32, Boolean };

struct Variable {
  std::string name;
  uint32_t vr = 0;  // value reference
  Causality causality = Causality::Local;
  Variability variability = Variability::Continuous;
  Initial initial = Initial::None;
  Type type = Type::Float64;
  bool has_start = false;
  double start = 0.0;
  std::string unit, description;
  int32_t derivative_of = -1;  // index (in the table) of the variable this is the derivative of
  // where its value is: a slot of the symbol vector v, an output column, a solver option (an
  // index of rt::option_table(); a parameter of the FMU's solver), or an output of the events
  // kernel (a zero-crossing function: an event indicator) -- exactly one >= 0
  int32_t slot = -1;
  int32_t column = -1;
  int32_t option = -1;
  int32_t indicator = -1;
};

struct VariableTable {
  std::vector<Variable> vars;             // in value-reference order
  std::vector<int32_t> states;            // indices into vars: [q | qd | y]
  std::vector<int32_t> derivatives;       // indices into vars, one per state, in state order
  std::vector<int32_t> outputs;           // indices of the Output variables
  std::vector<int32_t> inputs;            // indices of the Input variables (CompiledModel order)
  std::vector<int32_t> parameters;        // indices of the Parameter variables (solver options too)
  std::vector<int32_t> event_indicators;  // indices of the event indicators, in kernel order
};

// The variables `m` declares `output` in the model itself (CompiledModel::output_interface).
std::vector<std::string> declared_outputs(const CompiledModel& m);

// The default outputs of its FMU: the declared ones; for a model that declares none, its states'
// positions (the coordinates q of second order, then the first-order states y: not the
// velocities der(q)), so that an importer has something to show (docs/fmu.md).
std::vector<std::string> default_outputs(const CompiledModel& m);

// The table of `m`. `outputs`: the names of the variables that are FMU outputs (an unknown name
// is an error); empty: none. `solver`: the co-simulation solver's options, which become fixed
// parameters "solver.<key>" after the model's (the numeric ones a run may change: step, tolerances,
// Newton and step-control settings; docs/fmu.md), with these values as start values; null: none.
// Returns "" or the error.
std::string fmu_variables(const CompiledModel& m, const std::vector<std::string>& outputs,
                          VariableTable& table, const SolverOptions* solver = nullptr);

// Is option `spec` of the solver a parameter of an FMU (fmu_variables)?
bool is_fmu_solver_parameter(const OptionSpec& spec);

// The structural dependencies of the state derivatives of a model without algebraic unknowns
// (model exchange), per entry of t.derivatives in its order: the indices in t.vars of the states
// and inputs it may depend on, ascending. der(q) is the state der(q) itself; der(q,2) and der(y)
// come from one solve with the leading matrix A, A [qdd | yd] = -(F_q dq + F_qd dqd + F_y dy),
// so they depend on the states that reach them through the structure of A (a matching of its
// rows to [qdd | yd] and the rows each unknown enters: the structure of A^-1 B), and on every
// input (the Jacobians have no input columns). Empty when m has algebraic unknowns or more than
// `max_states` states (then the description lists none: every derivative depends on every
// known).
std::vector<std::vector<int32_t>> derivative_dependencies(const CompiledModel& m,
                                                          const VariableTable& t,
                                                          size_t max_states = 5000);

// The dependencies of the FMU's outputs (t.outputs, in order) on the states and inputs, from the
// structure of d outputs / d[q | qd | qdd | y | yd | z] (CompiledModel::sens_outputs, a model
// compiled with sensitivities): a state directly, the derivatives der(q,2) and der(y) through
// `derivatives` (derivative_dependencies), and every input (conservatively). Co-simulation
// (`model_exchange` false): the inputs only, since the states are internal. Empty when m has no
// sensitivity kernels or (model exchange) `derivatives` is empty: none listed.
std::vector<std::vector<int32_t>> output_dependencies(
    const CompiledModel& m, const VariableTable& t,
    const std::vector<std::vector<int32_t>>& derivatives, bool model_exchange);

// "" when model exchange can be offered for `m` (its DAE is an ODE after the compiler's
// eliminations: no algebraic unknowns, so the derivatives follow from the states by one linear
// solve with the mass matrix), else why not, for the export-time message. Events are no
// obstacle: the zero-crossing functions are the event indicators (docs/fmu.md, "Model
// exchange").
// Rotations integrated as a Lie group (CompiledModel::rotation_charts) are none either: the
// importer's solver does not move their charts, so completedIntegratorStep asks for a step
// event when one has |theta| > 1 and event mode moves it (Unit::completed_integrator_step).
std::string model_exchange_obstacle(const CompiledModel& m);
// The constraints part of it alone: "" when the derivatives follow from the states (directional
// derivatives are available), else why not.
std::string constraints_obstacle(const CompiledModel& m);

}  // namespace mbs::rt::fmi
