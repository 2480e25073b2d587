// One FMU instance without FMI's C types: the values an importer gets and sets by value
// reference, the experiment's setup, co-simulation steps, model exchange's right-hand side and
// the FMU state. The C functions of FMI 2 and 3 (tools/fmu/blob) are thin over it.
//
//   Unit u(model, variables, options, Unit::Kind::CoSimulation);
//   u.set_float64(vrs, values);          // parameters, start values, inputs
//   u.setup_experiment(std::nullopt, 0.0, 10.0);
//   u.exit_initialization();             // start vector, integrator, consistent accelerations
//   u.do_step(t, h); u.get_float64(...);
//
// Nothing throws out of it: every call returns a Status, and message() keeps the reason of the
// last call that did not return Ok (the wrapper logs it). See docs/fmu.md.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/fmi/Variables.h"
#include "runtime/model/CompiledModel.h"
#include "runtime/model/RotationCharts.h"
#include "runtime/session/Instance.h"
#include "runtime/solvers/Explicit.h"
#include "runtime/solvers/Integrator.h"
#include "runtime/solvers/Options.h"

namespace mbs::rt::fmi {

enum class Status : uint8_t { Ok, Warning, Discard, Error, Fatal };

class Unit {
 public:
  enum class Kind : uint8_t { CoSimulation, ModelExchange };

  // `options`: the export's solver options (options.t_end is the default stop time). Model
  // exchange needs model_exchange_obstacle(*model) == "" (else every call fails).
  Unit(std::shared_ptr<const CompiledModel> model, std::shared_ptr<const VariableTable> variables,
       const SolverOptions& options, Kind kind);

  Kind kind() const { return kind_; }
  const CompiledModel& model() const { return *model_; }
  const VariableTable& variables() const { return *vars_; }
  // Why the last call that did not return Ok failed.
  const std::string& message() const { return message_; }

  // Back to the instantiated state: the export's defaults, nothing set.
  void reset();

  // ---- setup (before exit_initialization)
  // tolerance: rtol of the solver (and atol = tolerance too); stop: the end of the experiment
  // (none: options.t_end, and steps may go beyond it).
  Status setup_experiment(std::optional<double> tolerance, double start,
                          std::optional<double> stop);
  // Builds the start vector from the values set; co-simulation: creates and initializes the
  // integrator (consistent initial accelerations). Error with the solver's message.
  Status exit_initialization();
  bool initialized() const { return initialized_; }
  double time() const;
  std::optional<double> stop_time() const { return stop_; }

  // ---- values by value reference (n values each)
  Status get_float64(std::span<const uint32_t> vrs, std::span<double> values);
  Status set_float64(std::span<const uint32_t> vrs, std::span<const double> values);

  // ---- co-simulation
  // From t_current (must be the unit's time up to rounding) to t_current + h (h >= 0).
  Status do_step(double t_current, double h);

  // ---- model exchange ([q | qd | y] states, [qd | qdd | yd] derivatives)
  size_t n_states() const { return vars_->states.size(); }
  Status set_time(double t);
  Status set_continuous_states(std::span<const double> x);
  Status get_continuous_states(std::span<double> x);
  Status get_derivatives(std::span<double> dx);
  Status get_nominals(std::span<double> x);  // 1.0 each

  // ---- model exchange's events (docs/fmu.md, "Model exchange"; runtime/model/Events.h)
  // The zero-crossing functions of the events kernel at the current point (CompiledModel::
  // n_crossings: the relations of the when-conditions, then the switches).
  size_t n_event_indicators() const { return static_cast<size_t>(model_->n_crossings); }
  Status get_event_indicators(std::span<double> z);
  // Event mode: the first branch of each when whose condition rose since the last event or
  // completed integrator step fires at the current point, with the event iteration, as the
  // integrator's events do. `states_changed`: a reinit changed a continuous state (at the first
  // call after initialization also one of the event at the start).
  Status update_discrete_states(bool& states_changed);
  // After an integrator step the importer accepted: `enter_event_mode` when a condition rose
  // (the event is then left to event mode); else the conditions of this point are the ones the
  // next event compares with. Also when a rotation chart (lie_group = true) is due to move:
  // |theta|^2 > kChartMoveAbove; event mode then moves it (a step event; docs/fmu.md).
  Status completed_integrator_step(bool& enter_event_mode);
  static constexpr double kChartMoveAbove = 1.0;
  // The end of a model-exchange run: the branches whose condition rises with terminal() = 1 fire.
  Status terminate();
  // After initialization: d derivatives / d states along `seed` (one value per known), from the
  // symbolic Jacobians (co-simulation too, at the integrator's point, for a model without
  // constraints). Any other pair of unknowns and knowns: Error.
  Status directional_derivative(std::span<const uint32_t> unknowns,
                                std::span<const uint32_t> knowns, std::span<const double> seed,
                                std::span<double> sensitivity);

  // ---- FMU state: a snapshot to continue from bitwise identically
  struct State {
    std::vector<double> integrator;  // Integrator::save (co-simulation after initialization)
    std::vector<double> v;           // the unit's symbol vector
    std::vector<double> conditions;  // model exchange: the events kernel the next event compares
    std::vector<std::pair<std::string, double>> parameters, starts;  // what the Instance holds
    std::vector<double> inputs;
    double start = 0.0;
    double stop = 0.0;
    bool has_stop = false;
    bool initialized = false;
    bool parameters_changed = false;
    // the mode the instance was in (Component::Phase; set by Component, which restores it)
    uint8_t mode = 0;
  };
  Status get_state(State& out);
  Status set_state(const State& in);
  // Little-endian bytes with a magic, a version and the model's name.
  std::vector<uint8_t> serialize(const State& s) const;
  Status deserialize(std::span<const uint8_t> bytes, State& out);

 private:
  Status error(std::string message);
  // index into vars_->vars for a value reference, or nullptr (message_ set)
  const Variable* variable(uint32_t vr);
  // the start vector from the Instance, start time and inputs (before initialization)
  bool rebuild_start();
  std::span<const double> symbols();  // the current point's v (with derivatives in ME)
  bool ensure_outputs();
  bool ensure_derivatives();
  void changed() { outputs_valid_ = derivatives_valid_ = false; }
  // The events kernel at the current point (with its derivatives after initialization).
  bool evaluate_events(std::vector<double>& out);
  // Fires fired_ at the current point, where `basis` holds the events kernel there (after
  // initialization, model exchange); then conditions_ at the new point.
  bool fire(std::vector<double>& basis, bool& states_changed);
  int32_t input_index(const Variable& v) const;

  std::shared_ptr<const CompiledModel> model_;
  std::shared_ptr<const VariableTable> vars_;
  SolverOptions defaults_, options_;
  Kind kind_;
  std::string obstacle_;  // model exchange impossible: why
  Instance instance_;
  std::vector<double> v_;       // before initialization, and the state of model exchange
  std::vector<double> inputs_;  // per model input
  double start_ = 0.0;
  std::optional<double> stop_;
  bool initialized_ = false;
  bool start_dirty_ = true;
  bool parameters_changed_ = true;          // model exchange: refactor the leading matrix
  std::unique_ptr<Integrator> integrator_;  // co-simulation
  std::unique_ptr<ExplicitRk> rhs_;         // model exchange: the right-hand side
  std::unique_ptr<ExplicitRk> cs_rhs_;      // co-simulation: for directional derivatives
  std::vector<double> outputs_, derivatives_, seed_, direction_;
  bool outputs_valid_ = false, derivatives_valid_ = false;
  // model exchange's events: the conditions at the last event or completed integrator step, and
  // scratch
  // (the events kernel's outputs, then the side at zero of each crossing of the whens:
  // CompiledModel::crossing_side_slot)
  std::vector<double> conditions_, ev_now_, ev_after_, ev_reinit_, ev_states_, ev_before_,
      ev_sides_, ev_v_;
  std::vector<int32_t> fired_;
  bool initial_states_changed_ = false;  // the event at the start changed a state: not yet told
  RotationCharts charts_;                // model exchange moves them in event mode
  std::string message_;
};

const char* status_name(Status s);

}  // namespace mbs::rt::fmi
