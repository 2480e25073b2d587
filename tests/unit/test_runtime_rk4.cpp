// The classical Runge-Kutta method: fourth-order convergence on x'' = -x, ODE1 systems, the
// rejection of models with algebraic variables, and step halving on a non-finite residual.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "runtime/solvers/Explicit.h"
#include "runtime/solvers/Integrator.h"
#include "tests/unit/runtime_models.h"

namespace mbs::rt {
namespace {

namespace tm = testmodels;

SolverOptions rk4(double h, double t_end) {
  SolverOptions o;
  o.solver = SolverKind::Rk4;
  o.h = h;
  o.t_end = t_end;
  return o;
}

// Max error of x over the grid for x'' = -x, x(0) = 1, x'(0) = 0: x = cos t.
double oscillator_error(double h) {
  auto solver = make_integrator(tm::msd::make(1.0, 0.0, 1.0, 1.0, 0.0), rk4(h, 5.0));
  double err = 0.0;
  EXPECT_EQ(solver->run([&](double t, std::span<const double> y) {
    err = std::max(err, std::fabs(y[0] - std::cos(t)));
    return 0;
  }),
            SolveStatus::Finished);
  return err;
}

TEST(Rk4, FourthOrderOnHarmonicOscillator) {
  const double e1 = oscillator_error(0.1), e2 = oscillator_error(0.05),
               e3 = oscillator_error(0.025);
  std::printf("rk4 x'' = -x: max error %.3e %.3e %.3e, ratios %.3f %.3f\n", e1, e2, e3, e1 / e2,
              e2 / e3);
  EXPECT_LT(e1, 1e-4);
  EXPECT_GE(e1 / e2, 15.0);
  EXPECT_LE(e1 / e2, 17.0);
  EXPECT_GE(e2 / e3, 15.0);
  EXPECT_LE(e2 / e3, 17.0);
}

TEST(Rk4, OutputsCarryAccelerations) {
  // The observer sees qdd of the output point (computed at the end of the step).
  auto solver = make_integrator(tm::msd::make(1.0, 0.0, 1.0, 1.0, 0.0), rk4(1e-2, 1.0));
  double worst = 0.0;
  solver->run([&](double, std::span<const double> y) {
    worst = std::max(worst, std::fabs(y[2] + y[0]));  // qdd = -x
    return 0;
  });
  EXPECT_LT(worst, 1e-14);
}

TEST(Rk4, ExponentialDecay) {
  auto solver = make_integrator(tm::decay::make(2.0, 1.0), rk4(1e-2, 1.0));
  ASSERT_EQ(solver->run(nullptr), SolveStatus::Finished);
  const double y = solver->symbols()[tm::decay::L.y(0)];
  EXPECT_NEAR(y, std::exp(-2.0), 1e-9);
  const Statistics& s = solver->statistics();
  EXPECT_EQ(s.steps, 100);
  EXPECT_EQ(s.residual_evaluations, 1 + 4 * 100);  // FSAL: the end derivative is the next k1
}

TEST(Rk4, RejectsAlgebraicVariables) {
  try {
    make_integrator(tm::pendulum::make(), rk4(1e-3, 1.0));
    FAIL() << "no error";
  } catch (const SolverSetupError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("rk44 solver cannot integrate model 'pendulum'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("1 algebraic variable(s) (lambda)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--solver gen-alpha"), std::string::npos) << msg;
  }
}

TEST(Rk4, HalvesStepOnNonFiniteResidualAndReportsFailure) {
  auto model = tm::msd::make(1.0, 0.0, 1.0, 1.0, 0.0);
  model.v0[tm::msd::T_FAIL] = 0.25;
  auto solver = make_integrator(model, rk4(1e-2, 1.0));
  ASSERT_EQ(solver->run(nullptr), SolveStatus::Failed);
  const FailureRecord& f = *solver->failure();
  std::printf("%s", f.message.c_str());
  EXPECT_EQ(f.kind, FailureKind::NonFiniteResidual);
  EXPECT_EQ(f.solver, "rk44");
  EXPECT_NEAR(f.t, 0.25, 1e-10);
  EXPECT_EQ(f.equation, 0);
  EXPECT_GT(solver->statistics().rejected_steps, 10);
  // The state is the last accepted one, not a failed stage.
  EXPECT_EQ(solver->symbols()[tm::msd::L.t()], solver->time());
  EXPECT_NEAR(solver->symbols()[tm::msd::L.q(0)], std::cos(solver->time()), 1e-8);
}

}  // namespace
}  // namespace mbs::rt
