// FlatModel: one model with no components left. Scalar variables with dotted names
// (`crank.phi`, `x[2]`), parameters with their binding expressions, equations in residual form,
// each carrying the span it came from. Expressions live in the symbolic DAG; every variable and
// parameter is a symbol, and der() of a variable is a symbol of its own (see DerivativeTable).
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/diag/Diagnostics.h"
#include "compiler/symbolic/Expr.h"
#include "runtime/model/Roles.h"
#include "runtime/model/Shapes.h"

namespace mbs {

enum class ScalarType : uint8_t { Real, Integer, Boolean };
// Input: an `input Real` declared in the model itself, a known function of time that the caller
// sets (held constant over a step): not an unknown, a slot in v like a parameter, its value the
// start value (CompiledModel::inputs).
// Discrete: a variable that changes only at events: declared `discrete`, or the target of an
// assignment `x = e` in a when-equation (docs/language.md, "Discrete variables"). Not an unknown:
// a slot in v like an input, its value at the start the start value; between events it is
// constant (der = 0).
enum class VarRole : uint8_t { Variable, Parameter, Constant, Input, Discrete };
// Where a parameter's value was given: its declaration (`parameter Real m = 1`), a modifier of
// an enclosing component (`Mass m1(m = 2)`), or the command line (`--set m1.m=2`).
enum class ValueOrigin : uint8_t { None, Declaration, Modifier, Override };

struct FlatVar {
  std::string name;  // dotted, e.g. "s.x", "x[2]"
  uint32_t symbol = 0;
  ScalarType type = ScalarType::Real;
  VarRole role = VarRole::Variable;
  bool flow = false;
  bool input = false;
  bool output = false;          // declared `output` in the model itself (not in a component)
  sym::Expr binding = nullptr;  // Parameter/Constant/Input: its value expression (may be null)
  double value = 0.0;         // Parameter/Constant/Input: the binding's value, parameters resolved
  sym::Expr start = nullptr;  // `start` attribute (may be null)
  Span start_span;            // its value expression
  bool fixed = false;         // `fixed` attribute
  bool fixed_given = false;   // `fixed` written (fixed = false: a free start, solved at t0)
  bool keep = false;          // never eliminated by the DAE pass (recursive multibody form)
  bool multiplier = false;    // the Lagrange multiplier of a position-level constraint
  // An auxiliary unknown of the recursive multibody form (FlatVar::keep): Velocity for a frame's
  // velocities, Dynamic for its accelerations and forces; Algebraic for any other variable.
  // rt::CompiledModel::z_auxiliary.
  rt::EquationLevel auxiliary = rt::EquationLevel::Algebraic;
  bool second_order = false;  // an ODE2 coordinate even if no equation has its 2nd derivative
  bool hidden = false;        // made by the compiler (the counters of sample()): no result column
  rt::OutputRole output_role = rt::OutputRole::Variable;  // what the runtime reads it as
  sym::Expr min = nullptr, max = nullptr;  // `min`/`max` attributes (checked for parameters)
  Span min_span, max_span;
  ValueOrigin value_origin = ValueOrigin::None;  // Parameter/Constant
  Span value_span;  // Parameter/Constant: the expression of its value (invalid for Override)
  std::string unit;
  std::string description;
  Span span;  // the declaration
};

struct FlatEquation {
  sym::Expr residual;  // lhs - rhs
  Span span;
  std::string text;    // the equation as written (for messages), e.g. "x^2 + y^2 = L^2"
  std::string origin;  // instance path the equation came from ("" for the top model)
  rt::EquationRole role = rt::EquationRole::Model;
  // The equations of one source equation in one for-equation, one array of components or one
  // array equation share a group (1, 2, ...; set by the flattener at its end); 0: none (the
  // equations the mechanics lowering and the DAE pass add). The structure survives to code
  // generation, which computes a large group's equations by a loop over index tables
  // (KernelSpec::groups, docs/architecture.md).
  uint32_t group = 0;   // (in the padding after role)
  int64_t param = -1;   // Trajectory: the parameter symbol the row reads
  std::string subject;  // Closure: the cut joint's path; Trajectory: the coordinate's name
};

// The symbols of time derivatives: der(s) for a variable symbol s, created on first use.
class DerivativeTable {
 public:
  explicit DerivativeTable(sym::Context& cx) : cx_(cx) {}
  // The symbol of d/dt of `s`, creating it (named "der(<name>)") on first use.
  uint32_t der(uint32_t s);
  // The symbol whose derivative `s` is, or -1.
  int64_t integral_of(uint32_t s) const;
  bool has_der(uint32_t s) const { return s < der_.size() && der_[s] != kNone; }
  // Declares that symbols of `zero_rate` have zero time derivative (parameters, constants).
  void set_constant(uint32_t s) { constant_.insert_or_assign(s, true); }
  bool is_constant(uint32_t s) const { return constant_.count(s) != 0; }
  void set_time(uint32_t s) { time_ = static_cast<int64_t>(s); }
  int64_t time() const { return time_; }

  // Total time derivative of e: sum over symbols s of de/ds * der(s) (+ de/dtime).
  sym::Expr total_derivative(sym::Expr e);

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  sym::Context& cx_;
  // by symbol: der(s), and the symbol whose derivative s is; kNone if there is none (hash maps
  // of the 10^5 derivatives of a model of 10^5 equations held 8 MB, these 1.6 MB)
  std::vector<uint32_t> der_;
  std::vector<uint32_t> inv_;
  std::unordered_map<uint32_t, bool> constant_;
  int64_t time_ = -1;
};

// An instance of a built-in multibody element (a class of stdlib/Mechanics.mbs marked with
// `annotation(__mbs_element = "...")`). Its parameters and variables are ordinary FlatVars named
// `<path>.<member>`; compiler/mech turns the elements into equations of motion.
struct MechElement {
  std::string kind;  // "World", "Body", "Revolute", ..., "Frame" (a frame connector)
  std::string path;  // instance path, e.g. "crank" or "link[3]"
  std::string type_name;
  Span span;  // the component declaration
};

// connect(a, b) of two frames: the frames coincide.
struct FrameConnection {
  std::string a, b;  // frame instance paths, e.g. "pivot.frame_b"
  Span span;
  std::string text;
};

// The body-wise Newton-Euler balances of a mechanism, the second formulation of inverse dynamics
// (compiler/mech with MechOptions::inverse_dynamics; docs/inverse-dynamics.md, "The body-wise
// balance"): six rows per moving rigid aggregate, linear in the efforts of the active joints, the
// closure multipliers and the reaction coordinates of the tree joints. The reaction coordinates
// are symbols of their own (not variables of the model); every joint's wrench is given in the
// same unknowns.
struct BodyBalance {
  std::vector<sym::Expr> rows;              // zero when the aggregate is balanced
  std::vector<std::string> row_names;       // "<frame>: force along x", ...
  std::vector<uint32_t> reactions;          // reaction-coordinate symbols
  std::vector<std::string> reaction_names;  // "<joint>.reaction[k]: force along x", ...
  std::vector<std::string> wrench_names;    // "<joint>.reaction_f[1]", ..., "reaction_t[3]"
  std::vector<sym::Expr> wrenches;
};

// `reinit(x, e)` in a when-equation: at the event, the variable x (a state) takes the value e,
// evaluated before any reinit of the event is applied (`pre(y)` in e is y there).
struct FlatReinit {
  uint32_t var = 0;  // the variable's symbol
  sym::Expr value = nullptr;
  Span span;         // the reinit equation
  std::string text;  // as written
};

// One branch of a when-equation: `when c then ...` or `elsewhen c then ...`. The branch fires
// when its condition becomes true (false just before the event, true at it).
struct FlatWhenBranch {
  sym::Expr condition = nullptr;  // 1.0 / 0.0 (relations, and, or, not)
  Span condition_span;
  std::string condition_text;
  std::vector<FlatReinit> reinits;
  // `x = e` of a discrete variable x, in an order where an assignment that reads another's new
  // value comes after it; e is in the values before the event (the new values of the branch's
  // earlier assignments substituted).
  std::vector<FlatReinit> assigns;
};

// A when-equation: at an event, the first branch whose condition became true fires (Modelica's
// elsewhen priority).
struct FlatWhen {
  std::vector<FlatWhenBranch> branches;
  Span span;           // the whole when-equation
  std::string origin;  // instance path it came from ("" for the top model)
};

struct FlatModel {
  std::string name;
  std::string description;
  Span span;  // the model's name in its declaration
  uint32_t time_symbol = 0;
  std::vector<FlatVar> vars;
  std::vector<FlatEquation> equations;
  // `initial equation` sections: they hold at the start only, together with the equations, and
  // determine the start values declared `fixed = false` (compiler/dae/Initial.h)
  std::vector<FlatEquation> initial_equations;
  std::vector<FlatWhen> whens;  // when-equations, in source order
  // pre(x) of each discrete variable x that the model reads: (x, the symbol of pre(x)). Outside
  // an event pre(x) = x; during an event's iteration pre(x) is x before the iteration.
  std::vector<std::pair<uint32_t, uint32_t>> pre_symbols;
  // The symbols of initial() and terminal() when the model uses them (1.0 at the start's and at
  // the end's event, 0.0 otherwise), else -1.
  int64_t initial_symbol = -1, terminal_symbol = -1;
  // The values of noEvent(...) and smooth(p, ...) written in the model: the switches inside them
  // (if-expressions, abs, sign, min, max) do not stop the solvers at their changes
  // (docs/language.md, "Events").
  std::vector<sym::Expr> no_event;
  // The local charts of rotations integrated as a Lie group (Spherical and FreeMotion with
  // lie_group = true; compiler/mech): per joint the symbols of its rotation vector theta[1..3]
  // (ODE1 unknowns), of the angular velocity w[1..3] of frame_b in frame_b (ODE1 unknowns) and
  // of the chart's reference quaternion Q_ref[1..4] (hidden discrete variables), in that order.
  // The solvers move each chart to the current rotation after every step
  // (rt::CompiledModel::rotation_charts).
  std::vector<std::array<uint32_t, 10>> rotation_charts;
  std::vector<MechElement> mech_elements;  // in declaration order
  std::vector<FrameConnection> frame_connections;
  // The animation's shapes (compiler/mech with MechOptions::animation): Shape::frame indexes
  // shape_frames, the frames whose poses are the outputs <frame>.shape_r[k], <frame>.shape_R[i,j]
  std::vector<rt::Shape> shapes;
  std::vector<std::string> shape_frames;
  BodyBalance body_balance;  // inverse dynamics only
  // symbol -> index into vars (only variable/parameter symbols)
  std::unordered_map<uint32_t, size_t> var_of_symbol;
  // Parameters whose value the compiler used as a number (an array size, a range bound, an
  // if-condition, a multibody axis or structural zero, the start assembly of a mechanism): a
  // new value needs a new compile. Symbol -> why (the first use found). Parameters whose
  // bindings refer to them are added by the driver (compile_time_parameters).
  std::unordered_map<uint32_t, std::string> compile_time_parameters;
  void mark_compile_time(uint32_t symbol, const std::string& why) {
    if (var_of_symbol.count(symbol)) compile_time_parameters.emplace(symbol, why);
  }
};

void print_flat_model(std::ostream& os, const sym::Context& cx, const FlatModel& m);

// An instance path or variable name without its array indices ("a[3].b[1, 2]" -> "a[].b[]"):
// equal for the elements of one array (the key of FlatEquation::group and of the variables'
// groups of KernelSpec::groups).
void append_without_indices(std::string_view path, std::string& out);

}  // namespace mbs
