// The classical fourth-order Runge-Kutta method for models without algebraic variables
// (n_z == 0). The state is xi = [q | qd | y]; its derivative [qd | qdd | yd] comes from the
// residual, which is linear in the highest derivatives: with b = F(q, qd, qdd = 0, y, yd = 0, t)
// and A = newton_matrix with all coefficients c = 0 (= dF/d[qdd | yd]), A [qdd | yd] = -b.
// The derivative at the end of a step is the first stage of the next (four evaluations a step).
#pragma once

#include <vector>

#include "runtime/linalg/LinearSolver.h"
#include "runtime/solvers/Integrator.h"

namespace mbs::rt {

class Rk4 final : public Integrator {
 public:
  // Throws SolverSetupError if the model has algebraic variables.
  Rk4(std::shared_ptr<const CompiledModel> model, const SolverOptions& options);

  // Evaluates the derivative at the start (qdd_0, yd_0 are written to the symbol vector).
  SolveStatus initialize() override;
  SolveStatus step() override;
  SolveStatus run(const Observer& observer) override;

 private:
  friend class Integrator;

  bool attempt(double h);
  void accept(double h);
  // d := f(t, xi); leaves v at (t, xi, qdd, yd). False with attempt_failure_ set on failure.
  bool derivative(double t, const double* xi, double* d);
  void restore_accepted_state();

  LinearSolver solver_;
  int32_t n_state_ = 0;           // 2 n_q + n_y
  std::vector<double> xi0_, d0_;  // accepted state and its derivative
  std::vector<double> k2_, k3_, k4_, stage_, xi1_, d1_;
};

}  // namespace mbs::rt
