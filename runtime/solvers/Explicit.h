// The explicit Runge-Kutta family: one integrator driven by Butcher tableaus.
//
//   fixed step (on the grid of Integrator, halving on a non-finite kernel):
//     euler (1), midpoint (2), rk33 (Kutta, 3), rk44 (classic, 4; also rk4), rk6 (Butcher, 6)
//   embedded pairs with automatic step size (local error control):
//     ode23 (Bogacki-Shampine 3(2)), dopri5 (Dormand-Prince 5(4))
//
// The state is xi = [q | qd | y]; its derivative [qd | qdd | yd] comes from the residual, which is
// linear in the highest derivatives: with b = F(q, qd, qdd = 0, y, yd = 0, t) and A =
// newton_matrix with all coefficients c = 0 (= dF/d[qdd | yd]), A [qdd | yd] = -b. The derivative
// at the end of a step is evaluated (output values carry qdd, yd) and is the first stage of the
// next step; for FSAL tableaus (ode23, dopri5) it is the last stage itself.
//
// Algebraic variables and rows without highest derivatives are refused, unless
// options.ignore_constraints: then z = 0 and only the rows with level Dynamic are used.
// See docs/solvers.md, "Explicit Runge-Kutta family".
#pragma once

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/linalg/LinearSolver.h"
#include "runtime/solvers/Integrator.h"

namespace mbs::rt {

// An explicit Runge-Kutta tableau: c (stages), a (stages x stages, row-major, strictly lower
// triangular), b and, for embedded pairs, bhat of order embedded_order (0: no error estimate).
struct ButcherTableau {
  std::string_view name;
  int32_t stages = 0;
  int32_t order = 0;
  int32_t embedded_order = 0;
  std::span<const double> c, a, b, bhat;
  // First same as last: c_s = 1 and the last row of a equals b, so the last stage is the
  // derivative at the new point.
  bool fsal() const;
};

// The tableau of an explicit solver kind (is_explicit(kind) must hold).
const ButcherTableau& explicit_tableau(SolverKind kind);

class ExplicitRk final : public Integrator {
 public:
  static constexpr int32_t kMaxStages = 7;

  // Throws SolverSetupError if the model has algebraic variables or constraint rows (unless
  // options.ignore_constraints) or the remaining system is not square.
  ExplicitRk(std::shared_ptr<const CompiledModel> model, const SolverOptions& options);

  // Evaluates the derivative at the start (qdd_0, yd_0 are written to the symbol vector).
  SolveStatus initialize() override;
  // Fixed step: one grid step (with halving). Adaptive: to the next grid point, in as many
  // error-controlled steps as needed, the last one shortened to hit the grid point exactly.
  SolveStatus step() override;
  // Fixed step: as Integrator. Adaptive: the steps hit only the points that are output (every
  // output_every-th grid point and t_end), so --h-max > --step lets steps span grid points.
  SolveStatus run(const Observer& observer) override;

  // ---- model exchange (rt::fmi::Unit): the right-hand side of the ODE at any point, without
  // stepping. v: a whole symbol vector (time, [q | qd | y] in their slots, parameters, inputs);
  // d := [qd | qdd | yd] there. The workspace's v becomes v with that qdd and yd (symbols()).
  // `refactor`: factor the leading matrix again even if it is constant (a parameter changed).
  // Returns "" or why not (a kernel failed, a singular leading matrix).
  std::string evaluate_derivative(std::span<const double> v, std::span<double> d, bool refactor);
  // After a successful evaluate_derivative: dd = the change of [qd | qdd | yd] for a change ds
  // of [q | qd | y], from the symbolic Jacobians jac_q, jac_qd, jac_y and the factored leading
  // matrix (A dacc = -(F_q dq + F_qd dqd + F_y dy)). "" or why not (no Jacobian kernels).
  std::string derivative_direction(std::span<const double> ds, std::span<double> dd);

  const ButcherTableau& tableau() const { return tab_; }
  bool adaptive() const { return tab_.embedded_order > 0; }
  // The error estimate of the last step attempt of an adaptive method (RMS of the scaled error).
  double last_error() const { return err_; }

 private:
  friend class Integrator;

  bool attempt(double h);
  void accept(double h);
  // Adaptive: steps to grid point `target` (index); Failed with failure_ set.
  SolveStatus advance_adaptive(int64_t target);
  // d := f(t, xi); leaves v at (t, xi, qdd, yd). False with attempt_failure_ set on failure.
  bool derivative(double t, const double* xi, double* d);
  // Solves the factored leading matrix for the right-hand side in ws_.x and writes d.
  bool finish_derivative(const double* xi, double* d);
  bool factored_ = false;  // the leading matrix has been factored at least once
  // Exact sensitivities: the stage derivative's, d S_k = [S_qd | S_acc | S_yd] from the stage
  // state's S_g, at the point derivative() just left in v (its factorization in solver_).
  // Direction `dir` (0 first: the Jacobians are evaluated then, for all directions).
  void stage_sensitivity(size_t dir, const double* s_state, double* s_deriv);
  // What stage_sensitivity and derivative_direction share: dp (n_p, or null: no parameter
  // term), `evaluate`: the Jacobians at the point in v first.
  void linearized_derivative(const double* s_state, const double* dp, bool evaluate,
                             double* s_deriv);
  void prepare_sensitivities() override;
  void sensitivity_state(size_t k, double* w) const override;
  // direction-major, n_state each: S of xi0, d0, xi1, d1, the stage state; S of the stages
  std::vector<double> s_xi0_, s_d0_, s_xi1_, s_d1_, s_stage_, s_k_;
  std::vector<double> fp_values_, jq_values_, jqd_values_, jy_values_, rhs_;
  void restore_accepted_state();
  // Fixed-step methods on a model with switches (if-expressions, abs, sign, min, max of the
  // state): whether the point derivative() just left in v is on the other side of a switch than
  // the start of the step (ev_old_). A step whose stages crossed a switch and which ends on the
  // side it started is a sliding mode: the endpoint test of the event location cannot see it
  // (rk4 froze there, issue 36), so the step fails as chattering instead.
  bool stage_switched();
  bool watch_stages() const { return !adaptive() && model_.n_switches > 0 && !locating_; }
  std::vector<double> ev_stage_;
  bool restart() override;
  void take_state_from_v() override;
  void charts_moved() override;
  void save_method(std::vector<double>& out) override;
  bool restore_method(std::span<const double> in, size_t& pos)
      override;  // d0_ (the first stage) again, the leading matrix refactored
  // The error test failed at the smallest step `floor` (h_min or the floor relative to t).
  void fail_error_test(double h, double h_next, double floor);
  // The error test's failure as an attempt failure (the component with the largest error).
  AttemptFailure error_test_attempt() const;

  const ButcherTableau& tab_;
  bool fsal_ = false;
  LinearSolver solver_;
  int32_t n_state_ = 0;  // 2 n_q + n_y
  int32_t n_x_ = 0;      // n_q + n_y: the unknowns [qdd | yd]
  // ignore_constraints (or a model whose rows are not all used): the subsystem of the Dynamic
  // rows and the [qdd | yd] columns. Empty when the whole newton_matrix is used.
  bool reduced_ = false;
  std::vector<int32_t> sub_row_;    // n_x: row of the model for each row of the subsystem
  std::vector<int32_t> sub_entry_;  // entry of newton_matrix for each subsystem entry
  std::vector<double> sub_values_;
  std::vector<double> xi0_, d0_, xi1_, d1_, stage_, err_vec_;
  std::vector<double> k_;  // stages x n_state: the stage derivatives (row 0 unused: d0_)
  // Adaptive step control.
  double h_max_ = 0.0;     // largest step (h_max, or h)
  double h_prop_ = 0.0;    // proposed size of the next step
  double err_ = 0.0;       // scaled RMS error of the last attempt
  int32_t err_comp_ = -1;  // component of xi with the largest scaled error
  double err_comp_ratio_ = 0.0;
};

// Creates the explicit integrator for options.solver (is_explicit(options.solver) must hold).
// Throws SolverSetupError when the model has algebraic equations the method cannot handle.
std::unique_ptr<Integrator> make_explicit_integrator(std::shared_ptr<const CompiledModel> model,
                                                     const SolverOptions& options);

}  // namespace mbs::rt
