// The compiled form of a model that every solver, the REPL and FMU export work from.
//
// Immutable after construction and safe to share between threads. All numerical entry points are
// native kernels `int32_t k(const double* v, double* out)` reading one "symbol vector" v: every
// quantity a kernel can depend on (time, coordinates and their derivatives, algebraic variables,
// parameters, solver coefficients) has a fixed slot in v. A solver owns its own copy of v in its
// Workspace, writes the current values into the slots and calls kernels.
//
// The equations are in residual form F(v) = 0, one per unknown, n_eq = n_q + n_y + n_z:
//   ODE2 coordinates q   (slots q, qd = der(q), qdd = der(der(q)))
//   ODE1 coordinates y   (slots y, yd = der(y))
//   algebraic variables z (slot z; Lagrange multipliers and other algebraic unknowns)
// F is linear in the highest derivatives (qdd, yd). Kernel return value: 0 ok, k > 0: output
// k - 1 was not finite (recoverable: retry with a smaller step), k < 0 fatal.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/model/Roles.h"
#include "runtime/model/Shapes.h"

namespace mbs::rt {

using KernelFn = int32_t (*)(const double* v, double* out);

struct Kernel {
  Kernel() = default;
  Kernel(KernelFn f, int32_t n, std::string sym = {}) : fn(f), n_out(n), symbol(std::move(sym)) {}
  KernelFn fn = nullptr;
  int32_t n_out = 0;
  // The symbol of its code (a model image names kernels by it: runtime/model/ModelImage.h);
  // "" for a kernel that has none.
  std::string symbol;
  int32_t operator()(const double* v, double* out) const { return fn(v, out); }
};

// A sparse matrix whose values a kernel computes, in the order of (row[k], col[k]); entries are
// sorted by column, then row (compressed-column order), no duplicates.
struct SparseKernel {
  Kernel values;
  int32_t rows = 0;
  int32_t cols = 0;
  std::vector<int32_t> row;
  std::vector<int32_t> col;
  int32_t nnz() const { return static_cast<int32_t>(row.size()); }
};

// Where something came from in the .mbs source.
struct SourceRef {
  std::string file;
  uint32_t line = 0;
  uint32_t col = 0;
  std::string text;  // the equation as written, or the declaration, for messages
};

struct Unknown {
  std::string name;  // dotted, e.g. "s.x"
  SourceRef source;
};

// Where the value of an output column comes from, for messages about it: a solved unknown (the
// declaration), or a variable the compiler eliminated (the equation that defines it).
struct OutputSource {
  enum class Kind : uint8_t { Unknown, Alias, Explicit };
  Kind kind = Kind::Unknown;  // solved (or not known), an alias a = +-b or der(x), v = f(...)
  SourceRef declaration;      // the variable's declaration
  SourceRef definition;       // Alias, Explicit: the defining equation with its text
  // Alias of scale * v[alias_slot] (a = b, a = -b, v = der(x)): its start value is that slot's
  // (rt::Instance::set_start); -1 otherwise.
  int32_t alias_slot = -1;
  double alias_scale = 1.0;
};

struct CompiledModel {
  std::string name;
  // The model's experiment annotation (Modelica 3.6, section 18.4): the defaults of a run that
  // the options given by the user override (rt::apply_experiment); NaN where not given.
  double experiment_stop_time = std::numeric_limits<double>::quiet_NaN();
  double experiment_interval = std::numeric_limits<double>::quiet_NaN();
  double experiment_tolerance = std::numeric_limits<double>::quiet_NaN();

  // ---- symbol vector layout
  int32_t n_v = 0;  // size of v
  int32_t slot_time = -1;
  int32_t n_q = 0, n_y = 0, n_z = 0;
  std::vector<int32_t> q_slot, qd_slot, qdd_slot;  // size n_q
  std::vector<int32_t> y_slot, yd_slot;            // size n_y
  std::vector<int32_t> z_slot;                     // size n_z
  // Newton-matrix coefficients (see newton_matrix).
  int32_t slot_c_q = -1, slot_c_qd = -1, slot_c_y = -1;
  std::vector<double> v0;  // initial v: parameter values, start values, time = 0, zeros elsewhere

  std::vector<Unknown> q, y, z;  // names of the unknowns
  // Optional, size n_z (or empty): for each algebraic variable, Position or Velocity if it is the
  // Lagrange multiplier of a position- or velocity-level constraint, else Algebraic. A
  // multiplier of an index-3 constraint is only determined to O(eps / h^2), so at small steps
  // Newton accepts its update once it stagnates with everything else converged. Empty: inferred
  // (a z whose Newton-matrix column has no entry in an Algebraic row is a multiplier).
  std::vector<EquationLevel> z_level;
  // Optional, size n_z (or empty): Velocity or Dynamic for an auxiliary unknown of the recursive
  // multibody form (a frame's velocities; its accelerations and forces), a function of q and
  // der(q) (and der(q, 2)) that the compiler keeps as an unknown to keep the equations linear in
  // size; Algebraic for any other. The implicit solvers measure an auxiliary's Newton update in
  // the units of the coordinates, as they do the accelerations der(q, 2) themselves:
  // gamma' h dz for Velocity, beta' h^2 dz for Dynamic (docs/solvers.md, "Newton strategy").
  std::vector<EquationLevel> z_auxiliary;

  // ---- equations
  int32_t n_eq() const { return n_q + n_y + n_z; }
  std::vector<EquationLevel> eq_level;  // size n_eq
  std::vector<SourceRef> eq_source;     // size n_eq
  // size n_eq (or empty: all Model): what each equation is for; for a Trajectory row the slot of
  // the parameter it reads (else -1); the subject: a Closure row's cut joint, a Trajectory row's
  // coordinate (else "")
  std::vector<EquationRole> eq_role;
  std::vector<int32_t> eq_param_slot;
  std::vector<std::string> eq_subject;

  // ---- kernels
  // F(v): n_eq residuals.
  Kernel residual;
  // J = dF/dqdd + c_q dF/dq + c_qd dF/dqd + dF/dyd + c_y dF/dy + dF/dz, an n_eq x n_eq matrix
  // whose columns are the unknowns [qdd (n_q) | yd (n_y) | z (n_z)]. The coefficients are read
  // from v[slot_c_q], v[slot_c_qd], v[slot_c_y]: with Newmark-type interpolation
  // q = ... + c_q qdd, qd = ... + c_qd qdd, y = ... + c_y yd this is the exact Newton matrix.
  // With c = 0 it is the matrix of the highest derivatives and z (used for explicit solvers and
  // initial accelerations of unconstrained systems).
  SparseKernel newton_matrix;
  // Index-reduced system for consistent initial (qdd, yd, z) at given (q, qd, y, t): equal to F
  // except that each position-level constraint is replaced by its second and each velocity-level
  // constraint by its first total time derivative. init_matrix is its Jacobian with respect to
  // [qdd | yd | z] (no coefficients).
  Kernel init_residual;
  SparseKernel init_matrix;

  // True when newton_matrix with c_q = c_qd = c_y = 0 (the matrix of the highest derivatives and
  // z) depends on parameters only, not on time, any unknown or any input (an input may change
  // between steps): explicit methods then factor it once per run instead of at every stage.
  bool constant_leading_matrix = false;

  // Why the start values cannot change without a new compile ("" when they can): the compiler
  // solved the initial equations and the free starts (`fixed = false`) into v0
  // (compiler/dae/Initial.h). rt::Instance refuses a new start value with this reason.
  std::string start_compile_time;

  // Values written to result files: one per column, in column order (after "time").
  Kernel outputs;
  std::vector<std::string> output_names;
  std::vector<OutputRole> output_role;      // per output (or empty: all Variable)
  std::vector<OutputSource> output_source;  // per output (or empty: unknown)
  // Per output (or empty): the unit and description of the variable's declaration ("" when it
  // has none); an array element's are the array's, an eliminated alias keeps its own.
  std::vector<std::string> output_unit, output_description;
  // Per output (or empty): 1 when the variable is declared `output` in the model itself (not in
  // one of its components): an output of an exported FMU (runtime/fmi/Variables.h).
  std::vector<uint8_t> output_interface;
  // Per output (or empty): 1 when the variable is discrete (it changes only at events: an FMU
  // declares it variability="discrete"; docs/language.md, "Discrete variables").
  std::vector<uint8_t> output_discrete;
  // Per output column (or empty): the declared type of the variable, 0 Real, 1 Integer, 2 Boolean.
  std::vector<uint8_t> output_type;

  // d outputs / dz (outputs x n_z): how the outputs depend on the algebraic unknowns (the joint
  // wrenches of a mechanism on its multipliers and efforts, for inverse dynamics). Optional.
  SparseKernel outputs_z;
  // The position-level rows alone, in equation order (rt::ConstraintKinematics): g(q, t), its
  // Jacobian dg/dq (rows x n_q), dg/dt and the acceleration bias gamma (d2g/dt2 with qdd = 0).
  Kernel constraint_g, constraint_gd, constraint_gamma;
  SparseKernel constraint_G;
  // The body-wise Newton-Euler balance of a mechanism compiled for inverse dynamics (optional;
  // docs/inverse-dynamics.md, "The body-wise balance"): its rows and the joints' wrenches at
  // zero unknowns (the z slots of v must be 0), and their Jacobians with respect to the unknowns
  // [z (n_z) | reaction coordinates of the tree joints (body_reaction_names)].
  Kernel body_rows, body_wrench;
  SparseKernel body_rows_u, body_wrench_u;
  std::vector<std::string> body_row_names, body_reaction_names, body_wrench_names;
  // For inverse dynamics, optional: what rt::InverseDynamics evaluates at each reconstructed
  // motion, in one kernel that shares the common subexpressions: F (n_eq values), the values of
  // jac_z (its order), the outputs in the columns inverse_output_columns (closure checks, joint
  // wrenches, CutForceTorque sensors, every output that depends on z), then the entries of
  // outputs_z in those rows (inverse_outputs_z_row: position in inverse_output_columns; _col: z).
  Kernel inverse_balance;
  std::vector<int32_t> inverse_output_columns, inverse_outputs_z_row, inverse_outputs_z_col;
  // dF/d[qdd | yd]: the mass matrix (n_eq x (n_q + n_y)), for linearisation and analysis.
  SparseKernel mass_matrix;
  // Partial derivatives dF/dq (n_eq x n_q), dF/dqd (n_eq x n_q), dF/dy (n_eq x n_y) and
  // dF/dz (n_eq x n_z): the stiffness, damping and constraint blocks for linearisation and the
  // static solver.
  SparseKernel jac_q, jac_qd, jac_y, jac_z;
  // Velocity-level (index-2) form: F with every position-level constraint g(q) = 0 replaced by
  // dg/dt = (dg/dq) qd = 0, and its Newton matrix (same columns and coefficients as
  // newton_matrix). Used by Newmark and trapezoidal with the index-2 option; those rows then
  // have level Velocity.
  Kernel index2_residual;
  SparseKernel index2_matrix;

  // Start values [q | qd | y | z] computed from the parameters in v (v0 was filled with it).
  Kernel initial_values;

  // Inputs (`input Real u` at the top level of the model): known functions of time that the
  // caller sets between steps (an FMU's importer; rt::Integrator::set_input), held constant
  // over a step. Each has a slot in v (its start value in v0) and is also an output column
  // (output_names) reading that slot.
  std::vector<Unknown> inputs;
  std::vector<int32_t> input_slot;

  // Parameters: names and slots in v. A parameter changes without recompiling (rt::Instance)
  // unless parameter_compile_time says why the compiler used its value as a number.
  std::vector<Unknown> parameters;
  std::vector<int32_t> parameter_slot;
  // Per parameter (or empty): "" when it can be set at run time, else why a new value needs a
  // new compile (e.g. "a range bound at m.mbs:3:12", "the start assembly of the mechanism").
  std::vector<std::string> parameter_compile_time;
  // Per parameter (or empty): 1 when its binding reads other parameters (`omega = sqrt(k/m)`):
  // its value follows theirs (parameter_bindings) unless it is set itself.
  std::vector<uint8_t> parameter_derived;
  // Per parameter (or empty): its declared type, 0 Real, 1 Integer, 2 Boolean (the flattener's
  // ScalarType); the value in v is the number (Boolean: 1.0 / 0.0).
  std::vector<uint8_t> parameter_type;
  // Per parameter (or empty): its `min`/`max` attributes (-inf/+inf when absent), unit and
  // description from the model text.
  std::vector<double> parameter_min, parameter_max;
  std::vector<std::string> parameter_unit, parameter_description;
  // The value of every parameter from the others: output i is the binding of parameters[i] as
  // written (reading other parameters' slots; a constant for a literal value). Evaluated
  // parameter_binding_passes times, writing back every parameter that was not set, it brings
  // the derived parameters up to date after some were set.
  Kernel parameter_bindings;
  int32_t parameter_binding_passes = 0;

  // ---- events (optional: a model with when-equations; docs/solvers.md, "Events")
  // events(v): n_crossings zero-crossing functions (a - b of each relation of the conditions),
  // then the condition of every branch (1.0 / 0.0), when by when, branch by branch.
  // event_reinit(v): the new value of every reinit, in the same order. At an event the first
  // branch of each when whose condition became true fires: its reinits set
  // v[reinit_slot[r]] = value / reinit_scale[r] (a q, der(q) or y slot).
  // The last n_switches crossing functions are those of the switches of the equations
  // (if-expressions that depend on time or the state, abs, sign, min, max): any sign change
  // stops the step there and restarts the method, without a reinit.
  Kernel events, event_reinit;
  int32_t n_crossings = 0, n_switches = 0;
  // Per crossing function of the whens (the first n_crossings - n_switches): the slot of its side
  // at zero, which the conditions read where the function is exactly 0: 0 (the default) gives
  // the relations as written, -1 the value just below 0, +1 just above (a < b, for instance,
  // reads a < b or (a == b and side < 0)). The model-exchange FMU sets it where an importer's
  // step ends exactly on a zero (rt::fmi::Unit); the integrators leave it 0.
  std::vector<int32_t> crossing_side_slot;
  std::vector<int32_t> when_first_branch;    // size n_when + 1: the branches of when w
  std::vector<int32_t> branch_first_reinit;  // size n_branches + 1: the reinits of branch b
  std::vector<SourceRef> branch_source;      // per branch: its condition as written
  std::vector<int32_t> reinit_slot;
  std::vector<double> reinit_scale;
  std::vector<SourceRef> reinit_source;  // per reinit: the reinit equation
  // Discrete variables (docs/language.md, "Discrete variables") have slots of their own; a
  // reinit slot may be one (an assignment x = e in a when). pre(x) of a discrete x that the model
  // reads: pre_slot[k] holds the value of v[pre_value_slot[k]] before the event's current
  // iteration (equal to it outside events).
  std::vector<int32_t> pre_value_slot, pre_slot;
  // The slots of initial() and terminal() (-1 when the model does not use them): 1.0 while the
  // conditions of the event at the start (the end) are evaluated, else 0.0.
  int32_t slot_initial = -1, slot_terminal = -1;
  // Per branch (or empty): 1 when its condition reads initial(): at the start it fires when its
  // condition is true (Modelica: only such when-equations are active at the initialization).
  std::vector<uint8_t> branch_initial;
  bool has_events() const { return events.fn != nullptr; }
  int32_t n_whens() const {
    return when_first_branch.empty() ? 0 : static_cast<int32_t>(when_first_branch.size()) - 1;
  }
  // ---- rotations integrated as a Lie group (optional: Spherical and FreeMotion joints with
  // lie_group = true; docs/mechanics.md, "Rotations as a Lie group"). Per rotation ten slots:
  // its rotation vector theta[1..3] and angular velocity w[1..3] (both y slots) and the
  // reference quaternion Q_ref[1..4] of its chart (discrete slots); the rotation is
  // R(Q_ref) exp([theta]x) and der(theta) = dexp^-1(theta) w. After every accepted step the
  // solvers move each chart to the current rotation (rt::reset_rotation_charts): Q_ref := Q_ref
  // exp(theta), normalised, theta := 0, der(theta) := w -- the Runge-Kutta-Munthe-Kaas form of
  // the explicit methods and the Lie-group form of the implicit ones.
  std::vector<int32_t> rotation_charts;
  int32_t n_rotation_charts() const { return static_cast<int32_t>(rotation_charts.size() / 10); }
  // ---- exact sensitivities (optional: compiled with CompileOptions::sensitivities; values.fn
  // null otherwise). p = parameters in order.
  SparseKernel sens_F_p;       // dF/dp (n_eq x n_p)
  SparseKernel sens_init;      // d init_residual / d[q | qd | y | p]
  SparseKernel sens_start;     // d initial_values / dp ([q | qd | y | z] x n_p)
  SparseKernel sens_bindings;  // d parameter_bindings / dp (n_p x n_p)
  SparseKernel sens_outputs;   // d outputs / d[q | qd | qdd | y | yd | z | p]
  bool has_sensitivities() const { return sens_F_p.values.fn != nullptr; }

  // ---- animation (optional: compiled with CompileOptions::animation; docs/animation.md): the
  // shapes the mechanism is drawn with, the frames they are attached to and, per frame, its
  // first output column of the kPoseColumns of role ShapePose (its position, then its
  // orientation row by row), which result files leave out.
  std::vector<Shape> shapes;
  std::vector<std::string> shape_frames;
  std::vector<int32_t> shape_frame_column;

  // Keeps the JIT-compiled code (and anything else the kernels need) alive.
  std::shared_ptr<const void> code_owner;
};

}  // namespace mbs::rt
