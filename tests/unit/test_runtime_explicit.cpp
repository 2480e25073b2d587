// The explicit Runge-Kutta family (runtime/solvers/Explicit.h): measured convergence orders of
// the fixed-step methods, tolerance and step counts of the embedded pairs, the output grid of
// the adaptive methods, constraint handling and the h_min failure of the error test.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "runtime/solvers/Explicit.h"
#include "runtime/solvers/Integrator.h"
#include "tests/unit/runtime_models.h"

namespace mbs::rt {
namespace {

namespace tm = testmodels;

// x'' = -100 x, x(0) = 1, x'(0) = 0: x = cos(10 t).
constexpr double kOmega = 10.0;
CompiledModel oscillator() {
  return tm::msd::make(1.0, 0.0, kOmega * kOmega, 1.0, 0.0);
}

SolverOptions options(SolverKind kind, double h, double t_end = 1.0) {
  SolverOptions o;
  o.solver = kind;
  o.h = h;
  o.t_end = t_end;
  return o;
}

struct RunResult {
  SolveStatus status = SolveStatus::Failed;
  double max_error = 0.0;  // max over the output points of |x - cos(10 t)|
  Statistics stats;
  std::vector<double> times;
};

RunResult run_oscillator(const SolverOptions& o) {
  auto solver = make_integrator(oscillator(), o);
  RunResult r;
  r.status = solver->run([&](double t, std::span<const double> y) {
    r.max_error = std::max(r.max_error, std::fabs(y[0] - std::cos(kOmega * t)));
    r.times.push_back(t);
    return 0;
  });
  r.stats = solver->statistics();
  return r;
}

struct OrderCase {
  SolverKind kind;
  int order;
  double h;  // the largest of three step sizes h, h/2, h/4
};

class ExplicitOrder : public testing::TestWithParam<OrderCase> {};

TEST_P(ExplicitOrder, MeasuredOrderMatchesNominal) {
  const OrderCase c = GetParam();
  double e[3];
  for (int i = 0; i < 3; ++i) {
    const RunResult r = run_oscillator(options(c.kind, c.h / (1 << i)));
    ASSERT_EQ(r.status, SolveStatus::Finished);
    e[i] = r.max_error;
  }
  const double p1 = std::log2(e[0] / e[1]), p2 = std::log2(e[1] / e[2]);
  const std::string name(solver_name(c.kind));
  std::cout << name << " x'' = -100 x on [0, 1], h = " << c.h << ", " << c.h / 2 << ", " << c.h / 4
            << ": max error " << e[0] << " " << e[1] << " " << e[2] << ", measured order " << p1
            << " " << p2 << "\n";
  RecordProperty("order_" + name, std::to_string(p2));
  EXPECT_NEAR(p1, c.order, 0.2);
  EXPECT_NEAR(p2, c.order, 0.1);
  EXPECT_EQ(explicit_tableau(c.kind).order, c.order);
}

INSTANTIATE_TEST_SUITE_P(FixedStep, ExplicitOrder,
                         testing::Values(OrderCase{SolverKind::Euler, 1, 1e-4},
                                         OrderCase{SolverKind::Midpoint, 2, 4e-3},
                                         OrderCase{SolverKind::Rk33, 3, 1e-2},
                                         OrderCase{SolverKind::Rk44, 4, 1e-2},
                                         OrderCase{SolverKind::Rk6, 6, 2e-2}),
                         [](const testing::TestParamInfo<OrderCase>& i) {
                           return std::string(solver_name(i.param.kind));
                         });

TEST(ExplicitTableaus, ConsistentAndFsalWhereExpected) {
  for (SolverKind k : {SolverKind::Euler, SolverKind::Midpoint, SolverKind::Rk33, SolverKind::Rk44,
                       SolverKind::Rk6, SolverKind::Ode23, SolverKind::Dopri5}) {
    const ButcherTableau& t = explicit_tableau(k);
    EXPECT_EQ(t.name, solver_name(k));
    double sb = 0.0, sbh = 0.0;
    for (int32_t j = 0; j < t.stages; ++j) {
      sb += t.b[j];
      if (!t.bhat.empty()) sbh += t.bhat[j];
      double row = 0.0;
      for (int32_t l = 0; l < t.stages; ++l) row += t.a[j * t.stages + l];
      EXPECT_NEAR(row, t.c[j], 1e-15) << t.name << " row " << j;
    }
    EXPECT_NEAR(sb, 1.0, 1e-15) << t.name;
    if (!t.bhat.empty()) {
      EXPECT_NEAR(sbh, 1.0, 1e-15) << t.name;
    }
    EXPECT_EQ(t.fsal(), is_adaptive(k)) << t.name;
  }
  EXPECT_EQ(&explicit_tableau(SolverKind::Rk4), &explicit_tableau(SolverKind::Rk44));
}

TEST(ExplicitFixedStep, EvaluationsPerStep) {
  // s stages + 1 evaluation at the end of each step, which is the next step's first stage.
  for (auto [kind, stages] : {std::pair{SolverKind::Euler, 1}, std::pair{SolverKind::Midpoint, 2},
                              std::pair{SolverKind::Rk33, 3}, std::pair{SolverKind::Rk6, 7}}) {
    const RunResult r = run_oscillator(options(kind, 1e-2));
    EXPECT_EQ(r.stats.steps, 100);
    EXPECT_EQ(r.stats.residual_evaluations, 1 + stages * 100) << solver_name(kind);
    EXPECT_EQ(r.stats.factorizations, r.stats.residual_evaluations);
  }
}

// ---- embedded pairs

struct AdaptiveRun {
  double rtol;
  RunResult r;
};

AdaptiveRun run_adaptive(SolverKind kind, double rtol) {
  SolverOptions o = options(kind, 0.1);  // output grid 0.1, also the initial and largest step
  o.rtol = rtol;
  o.atol = rtol;
  return {rtol, run_oscillator(o)};
}

TEST(ExplicitAdaptive, MeetsToleranceAndStepsDecreaseWithOrderAndTolerance) {
  const double rtols[] = {1e-4, 1e-6, 1e-8, 1e-10};
  int64_t prev_ode23 = 0, prev_dopri5 = 0;
  double ratio_ode23 = 0.0, ratio_dopri5 = 0.0;
  for (double rtol : rtols) {
    const AdaptiveRun a = run_adaptive(SolverKind::Ode23, rtol);
    const AdaptiveRun b = run_adaptive(SolverKind::Dopri5, rtol);
    for (const AdaptiveRun* x : {&a, &b}) {
      ASSERT_EQ(x->r.status, SolveStatus::Finished);
    }
    std::cout << "rtol = atol = " << rtol << ": ode23 " << a.r.stats.steps << " steps ("
              << a.r.stats.rejected_steps << " rejected), max error " << a.r.max_error
              << "; dopri5 " << b.r.stats.steps << " steps (" << b.r.stats.rejected_steps
              << " rejected), max error " << b.r.max_error << "\n";
    RecordProperty("ode23_steps_rtol_" + std::to_string(rtol), std::to_string(a.r.stats.steps));
    RecordProperty("dopri5_steps_rtol_" + std::to_string(rtol), std::to_string(b.r.stats.steps));
    // The tolerance bounds the local error of each step (err <= 1); the global error over 1.6
    // periods (16 rad) accumulates to a small multiple of it, the same multiple for every
    // tolerance (tolerance proportionality).
    EXPECT_LT(a.r.max_error, 20.0 * rtol) << "ode23 rtol " << rtol;
    EXPECT_LT(b.r.max_error, 5.0 * rtol) << "dopri5 rtol " << rtol;
    if (prev_ode23 > 0) {
      EXPECT_NEAR(std::log10(a.r.max_error / rtol), std::log10(ratio_ode23), 0.5);
      EXPECT_NEAR(std::log10(b.r.max_error / rtol), std::log10(ratio_dopri5), 0.5);
    }
    ratio_ode23 = a.r.max_error / rtol;
    ratio_dopri5 = b.r.max_error / rtol;
    // Higher order: fewer steps; tighter tolerance: more steps.
    EXPECT_LT(b.r.stats.steps, a.r.stats.steps) << rtol;
    EXPECT_GT(a.r.stats.steps, prev_ode23);
    EXPECT_GT(b.r.stats.steps, prev_dopri5);
    prev_ode23 = a.r.stats.steps;
    prev_dopri5 = b.r.stats.steps;
    // Steps are chosen, not fixed.
    EXPECT_LT(a.r.stats.h_smallest, a.r.stats.h_largest);
  }
}

TEST(ExplicitAdaptive, OutputsStayOnTheRegularGrid) {
  SolverOptions o = options(SolverKind::Dopri5, 0.05);
  o.rtol = o.atol = 1e-7;
  const RunResult r = run_oscillator(o);
  ASSERT_EQ(r.status, SolveStatus::Finished);
  ASSERT_EQ(r.times.size(), 21u);
  for (size_t n = 0; n < r.times.size(); ++n) {
    EXPECT_EQ(r.times[n], n == 20 ? 1.0 : 0.05 * static_cast<double>(n)) << n;
  }
}

TEST(ExplicitAdaptive, HMaxLargerThanOutputStepSpansGridPoints) {
  // output_every = 0 (first and last point): steps may exceed --step up to --h-max.
  SolverOptions o = options(SolverKind::Dopri5, 1e-3);
  o.h_max = 0.1;
  o.output_every = 0;
  o.rtol = o.atol = 1e-6;
  const RunResult r = run_oscillator(o);
  ASSERT_EQ(r.status, SolveStatus::Finished);
  EXPECT_EQ(r.times.size(), 2u);
  EXPECT_GT(r.stats.h_largest, 1e-2);
  EXPECT_LE(r.stats.h_largest, 0.1);
  EXPECT_LT(r.max_error, 1e-5);
}

TEST(ExplicitAdaptive, StepByStepEqualsRun) {
  SolverOptions o = options(SolverKind::Ode23, 0.1);
  o.rtol = o.atol = 1e-6;
  auto a = make_integrator(oscillator(), o);
  auto b = make_integrator(oscillator(), o);
  ASSERT_EQ(a->run(nullptr), SolveStatus::Finished);
  // run() without observer steps straight to t_end; step() stops at each grid point, so the
  // step sequence differs: compare to the tolerance instead.
  SolveStatus st = SolveStatus::Ok;
  int n = 0;
  while (st == SolveStatus::Ok) st = b->step(), ++n;
  EXPECT_EQ(st, SolveStatus::Finished);
  EXPECT_EQ(n, 10);
  EXPECT_EQ(b->time(), 1.0);
  EXPECT_NEAR(a->symbols()[tm::msd::L.q(0)], b->symbols()[tm::msd::L.q(0)], 1e-5);
}

// ---- constraints

TEST(ExplicitConstraints, AlgebraicVariableIsRefusedWithTheEquation) {
  for (SolverKind k : {SolverKind::Euler, SolverKind::Rk44, SolverKind::Dopri5}) {
    try {
      make_integrator(tm::pendulum::make(), options(k, 1e-3));
      FAIL() << "no error";
    } catch (const SolverSetupError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("the " + std::string(solver_name(k)) +
                         " solver cannot integrate model 'pendulum'"),
                std::string::npos)
          << msg;
      EXPECT_NE(msg.find("1 algebraic variable(s) (lambda)"), std::string::npos) << msg;
      EXPECT_NE(msg.find("equation 2 (pendulum.mbs:8:1: x^2 + y^2 = L^2)"), std::string::npos)
          << msg;
      EXPECT_NE(msg.find("--ignore-constraints"), std::string::npos) << msg;
      EXPECT_NE(msg.find("--solver gen-alpha"), std::string::npos) << msg;
    }
  }
}

TEST(ExplicitConstraints, IgnoreConstraintsRunsTheDynamicRowsWithZEqualZero) {
  // Without the constraint and lambda = 0 the pendulum bob falls freely: x'' = 0, y'' = -g.
  // rk44 integrates that quadratic exactly.
  SolverOptions o = options(SolverKind::Rk44, 1e-2, 0.5);
  o.ignore_constraints = true;
  const auto model = tm::pendulum::make(0.5);
  auto solver = make_integrator(model, o);
  ASSERT_EQ(solver->run(nullptr), SolveStatus::Finished);
  const auto v = solver->symbols();
  namespace p = tm::pendulum;
  EXPECT_NEAR(v[p::X], std::sin(0.5), 1e-13);
  EXPECT_NEAR(v[p::Y], -std::cos(0.5) - 0.5 * 9.81 * 0.25, 1e-12);
  EXPECT_NEAR(v[p::YD], -9.81 * 0.5, 1e-12);
  EXPECT_EQ(v[p::LAM], 0.0);
  EXPECT_EQ(solver->statistics().steps, 50);
}

TEST(ExplicitConstraints, RowWithoutHighestDerivativeIsNamed) {
  // A model without algebraic variables whose equation 0 has level Position.
  auto model = oscillator();
  model.eq_level[0] = EquationLevel::Position;
  try {
    make_integrator(model, options(SolverKind::Rk33, 1e-3));
    FAIL() << "no error";
  } catch (const SolverSetupError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("equation 0 (msd.mbs:7:1: m*der(der(x)) + d*der(x) + k*x = 0)"),
              std::string::npos)
        << msg;
    EXPECT_EQ(msg.find("algebraic variable(s)"), std::string::npos) << msg;
  }
  // With ignore_constraints only Dynamic rows remain: none for one unknown.
  SolverOptions o = options(SolverKind::Rk33, 1e-3);
  o.ignore_constraints = true;
  try {
    make_integrator(model, o);
    FAIL() << "no error";
  } catch (const SolverSetupError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("leaves 0 equation(s) of level Dynamic for 1 unknown(s)"), std::string::npos)
        << msg;
  }
}

// ---- failures

TEST(ExplicitFailure, ErrorTestBelowHMinStopsWithTheComponent) {
  // y' = -1e8 y: every explicit step above ~3e-8 is unstable, so the error estimate stays
  // above 1 down to h_min = 1e-6.
  SolverOptions o = options(SolverKind::Dopri5, 1e-3, 1.0);
  o.h_min = 1e-6;
  auto solver = make_integrator(tm::decay::make(1e8, 1.0), o);
  std::vector<double> times;
  ASSERT_EQ(solver->run([&](double t, std::span<const double>) {
    times.push_back(t);
    return 0;
  }),
            SolveStatus::Failed);
  const FailureRecord& f = *solver->failure();
  std::cout << f.message;
  EXPECT_EQ(f.solver, "dopri5");
  EXPECT_EQ(f.t, 0.0);
  EXPECT_EQ(f.h, 1e-6);
  EXPECT_EQ(f.h_min, 1e-6);
  EXPECT_EQ(f.unknown, 0);
  const std::string& m = f.message;
  EXPECT_NE(m.find("error: dopri5: the local error estimate stays above the tolerance in the "
                   "step from t = 0 with h = 1e-06"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("is below h_min = 1e-06"), std::string::npos) << m;
  EXPECT_NE(m.find("component 'y' (declared at decay.mbs:2:1) has the largest error"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("help: "), std::string::npos) << m;
  EXPECT_GT(solver->statistics().rejected_steps, 1);
  EXPECT_EQ(solver->statistics().steps, 0);
  EXPECT_EQ(times.size(), 1u);  // the start point only
  // The state is the accepted one.
  EXPECT_EQ(solver->symbols()[tm::decay::L.y(0)], 1.0);
}

TEST(ExplicitFailure, NonFiniteResidualHalvesInAdaptiveMethods) {
  auto model = oscillator();
  model.v0[tm::msd::T_FAIL] = 0.25;
  SolverOptions o = options(SolverKind::Ode23, 1e-2);
  auto solver = make_integrator(model, o);
  ASSERT_EQ(solver->run(nullptr), SolveStatus::Failed);
  const FailureRecord& f = *solver->failure();
  EXPECT_EQ(f.kind, FailureKind::NonFiniteResidual);
  EXPECT_EQ(f.equation, 0);
  EXPECT_NEAR(f.t, 0.25, 1e-9);
  EXPECT_LE(f.h, 2e-12);
}

}  // namespace
}  // namespace mbs::rt
