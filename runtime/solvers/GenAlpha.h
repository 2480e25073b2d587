// The implicit Newmark family behind one integrator: generalized-alpha (Chung & Hulbert 1993, in
// the form of Arnold & Brüls 2007 for index-3 DAEs), Newmark's method (beta, gamma; alpha_m =
// alpha_f = 0) and the implicit trapezoidal rule (Newmark with beta = 1/4, gamma = 1/2). All solve
// for accelerations (option (A) of the solver chapter) with the same Newton machinery.
//
// Unknowns of a step t -> t + h: x = [qdd_T | yd_T | z_T]. With the algorithmic accelerations
//   (1 - alpha_m) a_T + alpha_m a_0 = (1 - alpha_f) qdd_T + alpha_f qdd_0
// (a = qdd for Newmark and trapezoidal) and Newmark's interpolation
//   q_T  = q_0 + h qd_0 + h^2 (1/2 - beta) a_0 + h^2 beta a_T
//   qd_T = qd_0 + h (1 - gamma) a_0 + h gamma a_T
//   y_T  = y_0 + h/2 (yd_0 + yd_T)                      (trapezoidal rule, gamma_FO = 1/2)
// the residual F(q_T, qd_T, qdd_T, y_T, yd_T, z_T, t + h) = 0 is solved by Newton's method
// (modified: the matrix is kept while the iteration contracts well; or full: a new matrix every
// iteration) on newton_matrix with c_q = beta' h^2, c_qd = gamma' h, c_y = h/2, where
// beta' = beta (1 - alpha_f) / (1 - alpha_m) and gamma' = gamma (1 - alpha_f) / (1 - alpha_m) are
// dq_T/dqdd_T / h^2 and dqd_T/dqdd_T / h. Rows of position-level constraints are scaled by
// 1 / (beta' h^2), velocity-level ones by 1 / (gamma' h).
//
// Index 2 (options.index2, newmark and trapezoidal only): index2_residual / index2_matrix replace
// every position-level constraint by its time derivative; those rows are then velocity-level.
// See docs/solvers.md, "Implicit family".
#pragma once

#include <limits>
#include <vector>

#include "runtime/linalg/LinearSolver.h"
#include "runtime/solvers/Integrator.h"

namespace mbs::rt {

// For each algebraic variable, the level of the constraint it is the multiplier of (Position,
// Velocity) or Algebraic: model.z_level, or inferred as documented there.
std::vector<EquationLevel> multiplier_levels(const CompiledModel& model);

class NewmarkFamily final : public Integrator {
 public:
  struct Parameters {
    double alpha_m, alpha_f, beta, gamma;
  };
  // Generalized-alpha: alpha_m = (2 rho - 1) / (rho + 1), alpha_f = rho / (rho + 1),
  // gamma = 1/2 - alpha_m + alpha_f, beta = (1 - alpha_m + alpha_f)^2 / 4.
  static Parameters parameters(double rho_inf);
  // Newmark: alpha_m = alpha_f = 0.
  static Parameters newmark_parameters(double beta, double gamma);
  // The parameters options.solver (gen-alpha, newmark, trapezoidal) uses.
  static Parameters parameters(const SolverOptions& options);

  // Throws SolverSetupError for index2 with gen-alpha, for index2 on a model with position-level
  // constraints but no index2 kernels, and for constraints without an init kernel when initial
  // accelerations are on.
  NewmarkFamily(std::shared_ptr<const CompiledModel> model, const SolverOptions& options);

  // Consistent initial qdd, yd, z from init_residual = 0 (Newton on init_matrix) unless
  // options.initial_accelerations is false; then a_0 = qdd_0.
  SolveStatus initialize() override;
  SolveStatus step() override;
  SolveStatus run(const Observer& observer) override;

  const Parameters& parameters() const { return p_; }
  bool index2() const { return index2_; }

 private:
  friend class Integrator;  // advance_grid_step() and run_loop() call attempt() and accept()

  bool attempt(double h);
  void accept(double h);
  // A short step of the event location in an index-3 model: by Taylor expansion (GenAlpha.cpp).
  bool taylor_step(double h);
  static constexpr double kTaylorStep = 1e-3;  // of options.h
  void write_state();  // ws_.x and the step's bases -> q, qd, qdd, y, yd, z slots of v
  bool refresh_newton_matrix();
  bool newton_failure(FailureKind kind, int32_t kernel_status, int32_t equation, int32_t unknown,
                      double update);
  bool solve_initial_values();
  void restore_accepted_state();  // v := the last accepted point (after a failed attempt)
  bool restart() override;
  void take_state_from_v() override;
  void charts_moved() override;
  void save_method(std::vector<double>& out) override;
  bool restore_method(std::span<const double> in, size_t& pos)
      override;  // consistent accelerations again; a_0 = qdd_0, no predictor history
  void prepare_sensitivities() override;
  void sensitivity_state(size_t k, double* w) const override;
  // exact sensitivities (docs/studies.md, "Exact sensitivities")
  bool initialize_sensitivities();
  void advance_sensitivities(double h);      // the accepted step's, from the converged point
  void solve_exact(std::vector<double>& b);  // J x = b by refinement on the factored matrix

  Parameters p_{};
  double beta_p_ = 0.0, gamma_p_ = 0.0;     // beta', gamma'
  double cq_ = 0.0, cqd_ = 0.0, cy_ = 0.0;  // of the current attempt
  bool index2_ = false;                     // residual_/matrix_ are the index-2 kernels
  bool index3_ = false;                     // position-level rows enforced at position level
  bool full_newton_ = false;                // a new matrix every iteration
  int32_t verbosity_ = 0;
  const Kernel* residual_ = nullptr;      // model.residual or model.index2_residual
  const SparseKernel* matrix_ = nullptr;  // model.newton_matrix or model.index2_matrix
  double* matrix_values_ = nullptr;       // ws_.newton_values or index2_values_
  std::vector<double> index2_values_;     // index2_matrix.nnz()
  std::vector<EquationLevel> row_level_;  // per equation, Position -> Velocity with index 2
  LinearSolver newton_;
  LinearSolver init_solver_;
  std::vector<double> row_scale_;       // per equation: 1, 1 / (beta' h^2) or 1 / (gamma' h)
  double row_scale_h_ = -1.0;           // h that row_scale_ was computed for
  std::vector<uint8_t> is_multiplier_;  // per z: a constraint multiplier (multiplier_levels())
  bool estimate_test_ = false;          // no multipliers: Newton may stop on the estimated error
  // K of the last new matrix: its first contraction theta = K |dx_1| (Newton's test of a first
  // update, attempt())
  double newton_k_ = std::numeric_limits<double>::quiet_NaN();
  std::vector<EquationLevel> z_auxiliary_;  // per z: model.z_auxiliary (or all Algebraic)
  std::vector<double> z_scale_;  // per z: its update's scale in Newton's test (1, cq or cqd)
  double z_scale_h_ = -1.0;      // h that z_scale_ was computed for
  // State at the start of the step.
  std::vector<double> q0_, qd0_, a0_, y0_;
  std::vector<double> x0_;                // [qdd_0 | yd_0 | z_0]
  std::vector<double> x_prev_, x_prev2_;  // the unknowns one and two steps earlier (predictor)
  double h_prev_ = 0.0, h_prev2_ = 0.0;   // the steps that ended at x0_ and at x_prev_
  int32_t n_history_ = 0;                 // how many of x_prev_, x_prev2_ are valid
  int32_t attempt_iterations_ = 0;        // Newton iterations of the last attempt (verbosity)
  // Parts of q_T, qd_T, y_T that do not depend on the unknowns.
  std::vector<double> q_base_, qd_base_, y_base_;
  // Modified Newton: the factorization is kept across iterations and steps.
  bool matrix_valid_ = false;
  bool refresh_next_ = true;
  double matrix_cq_ = 0.0;        // c_q = beta' h^2 the matrix was computed with
  bool matrix_fresh_ = false;     // computed during the current attempt
  double theta_ = 0.0;            // last contraction rate seen with this matrix (NaN: none yet)
  int32_t fresh_backoff_ = 0;     // steps that start with a new matrix after a kept one failed
  int32_t fresh_steps_left_ = 0;  // of those, still to come
  // Sensitivities per direction (direction-major): S of q, qd, a, y and x at the last point.
  std::vector<double> sq_, sqd_, sa_, sy_, sx_;
  std::vector<double> fp_values_, jq_values_, jqd_values_, jy_values_, j_exact_;
  std::vector<double> sb_q_, sb_qd_, sb_y_, rhs_, refine_r_, refine_x_;
};

// The generalized-alpha integrator is the family with options.solver = gen-alpha.
using GenAlpha = NewmarkFamily;

}  // namespace mbs::rt
