// Generalized-alpha against analytic solutions: second-order convergence on a damped oscillator,
// the index-3 pendulum (constraint, period, energy), ODE1 systems, step halving and the failure
// record. Models are hand-written kernels (tests/unit/runtime_models.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "runtime/solvers/Explicit.h"
#include "runtime/solvers/GenAlpha.h"
#include "runtime/solvers/Integrator.h"
#include "tests/unit/runtime_models.h"

namespace mbs::rt {
namespace {

namespace tm = testmodels;

struct Sample {
  double t;
  std::vector<double> y;
};

// Runs to t_end and returns every output point.
std::vector<Sample> simulate(const CompiledModel& model, const SolverOptions& options,
                             SolveStatus expected = SolveStatus::Finished,
                             Statistics* stats = nullptr) {
  auto solver = make_integrator(model, options);
  std::vector<Sample> out;
  const SolveStatus st = solver->run([&](double t, std::span<const double> y) {
    out.push_back({t, std::vector<double>(y.begin(), y.end())});
    return 0;
  });
  EXPECT_EQ(status_name(st), status_name(expected))
      << (solver->failure() ? solver->failure()->message : "");
  if (stats) *stats = solver->statistics();
  return out;
}

TEST(GenAlphaParameters, FromRhoInf) {
  const auto p1 = GenAlpha::parameters(1.0);  // trapezoidal rule
  EXPECT_DOUBLE_EQ(p1.alpha_m, 0.5);
  EXPECT_DOUBLE_EQ(p1.alpha_f, 0.5);
  EXPECT_DOUBLE_EQ(p1.gamma, 0.5);
  EXPECT_DOUBLE_EQ(p1.beta, 0.25);
  const auto p0 = GenAlpha::parameters(0.0);
  EXPECT_DOUBLE_EQ(p0.alpha_m, -1.0);
  EXPECT_DOUBLE_EQ(p0.alpha_f, 0.0);
  EXPECT_DOUBLE_EQ(p0.gamma, 1.5);
  EXPECT_DOUBLE_EQ(p0.beta, 1.0);
  const auto p = GenAlpha::parameters(0.9);
  EXPECT_DOUBLE_EQ(p.alpha_m, 0.8 / 1.9);
  EXPECT_DOUBLE_EQ(p.alpha_f, 0.9 / 1.9);
}

// Spectral radius at infinity: for h -> infinity on x'' + x = 0 the amplification of the
// algorithm tends to rho_inf, so the amplitude after one huge step is damped accordingly... the
// direct consequence used here: with rho_inf = 0 a very stiff spring is damped out in a few steps.
TEST(GenAlpha, DampsUnresolvedHighFrequency) {
  const double k = 1e8;  // period 6e-4 s, far below h = 1e-2
  SolverOptions o;
  o.t_end = 0.1;
  o.h = 1e-2;
  o.rho_inf = 0.0;
  const auto out = simulate(tm::msd::make(1.0, 0.0, k, 1.0, 0.0), o);
  EXPECT_LT(std::fabs(out.back().y[0]), 1e-6);
  o.rho_inf = 1.0;  // no numerical damping: the amplitude stays
  const auto out1 = simulate(tm::msd::make(1.0, 0.0, k, 1.0, 0.0), o);
  EXPECT_GT(std::fabs(out1.back().y[0]), 0.1);
}

// ---- 1. mass-spring-damper: second-order convergence
double msd_max_error(double rho, double h) {
  const double m = 1.0, d = 0.4, k = 4.0 * M_PI * M_PI, x0 = 1.0, v0 = 0.5;
  SolverOptions o;
  o.t_end = 2.0;
  o.h = h;
  o.rho_inf = rho;
  o.rtol = 1e-13;
  o.atol = 1e-15;
  double err = 0.0;
  for (const Sample& s : simulate(tm::msd::make(m, d, k, x0, v0), o)) {
    err = std::max(err, std::fabs(s.y[0] - tm::msd::exact(m, d, k, x0, v0, s.t)));
  }
  return err;
}

TEST(GenAlpha, MassSpringDamperSecondOrder) {
  for (double rho : {0.9, 0.5}) {
    const double e1 = msd_max_error(rho, 1e-2), e2 = msd_max_error(rho, 5e-3),
                 e3 = msd_max_error(rho, 2.5e-3);
    std::printf("rho_inf %.2f: max error %.3e %.3e %.3e, ratios %.3f %.3f\n", rho, e1, e2, e3,
                e1 / e2, e2 / e3);
    EXPECT_LT(e1, 1e-2);
    EXPECT_GE(e1 / e2, 3.5);
    EXPECT_LE(e1 / e2, 4.5);
    EXPECT_GE(e2 / e3, 3.5);
    EXPECT_LE(e2 / e3, 4.5);
  }
}

// ---- 2. pendulum in Cartesian coordinates (index 3)
TEST(GenAlpha, PendulumConstraintAndPeriod) {
  const double phi0 = 0.5;
  SolverOptions o;
  o.t_end = 10.0;
  o.h = 1e-3;
  Statistics stats;
  const auto out = simulate(tm::pendulum::make(phi0), o, SolveStatus::Finished, &stats);
  ASSERT_EQ(out.size(), 10001u);
  double drift = 0.0;
  for (const Sample& s : out) drift = std::max(drift, std::fabs(s.y[3]));
  // Downward zero crossings of x, linearly interpolated.
  std::vector<double> crossings;
  for (size_t i = 1; i < out.size(); ++i) {
    const double a = out[i - 1].y[0], b = out[i].y[0];
    if (a > 0.0 && b <= 0.0) {
      crossings.push_back(out[i - 1].t + (out[i].t - out[i - 1].t) * a / (a - b));
    }
  }
  ASSERT_GE(crossings.size(), 4u);
  const double period = (crossings.back() - crossings.front()) / double(crossings.size() - 1);
  const double exact = tm::pendulum::exact_period(phi0);
  std::printf("pendulum: max |x^2+y^2-L^2| = %.3e, period %.9f vs exact %.9f (rel. %.2e)\n", drift,
              period, exact, std::fabs(period - exact) / exact);
  std::printf("%s", format_statistics_table(stats, "pendulum statistics").c_str());
  EXPECT_LE(drift, 1e-10);
  EXPECT_LT(std::fabs(period - exact) / exact, 1e-5);
  // Modified Newton: far fewer factorizations than steps, few iterations per step.
  EXPECT_LT(stats.factorizations, stats.steps / 4);
  EXPECT_LT(double(stats.newton_iterations) / double(stats.steps), 2.5);
}

TEST(GenAlpha, PendulumEnergyDriftSmallWithLittleDamping) {
  SolverOptions o;
  o.t_end = 10.0;
  o.h = 1e-3;
  o.rho_inf = 0.99;
  const auto out = simulate(tm::pendulum::make(0.5), o);
  const double e0 = out.front().y[4];
  double drift = 0.0;
  for (const Sample& s : out) drift = std::max(drift, std::fabs(s.y[4] - e0));
  // Reference scale: the potential energy swing m g L (1 - cos phi0) ~ 1.2 J.
  std::printf("pendulum rho_inf 0.99: max |E - E0| = %.3e J\n", drift);
  EXPECT_LT(drift, 1e-5);
}

TEST(GenAlpha, PendulumInitialAccelerationsAreConsistent) {
  // At rest, released at phi0: lambda_0 = m g cos(phi0) / (2 L), qdd_0 tangential.
  const double phi0 = 0.5, m = 1.0, g = 9.81;
  auto model = tm::pendulum::make(phi0, m, g);
  SolverOptions o;
  auto solver = make_integrator(model, o);
  ASSERT_EQ(solver->initialize(), SolveStatus::Ok);
  const auto v = solver->symbols();
  namespace p = tm::pendulum;
  EXPECT_NEAR(v[p::LAM], m * g * std::cos(phi0) / 2.0, 1e-12);
  EXPECT_NEAR(v[p::XDD], -g * std::sin(phi0) * std::cos(phi0), 1e-12);
  EXPECT_NEAR(v[p::YDD], -g * std::sin(phi0) * std::sin(phi0), 1e-12);
}

// Without consistent initial accelerations (qdd_0 = 0 instead of -1 here) the first step makes
// an O(h) velocity error, so the result is only first-order accurate.
TEST(GenAlpha, InitialAccelerationsMatterForAccuracy) {
  SolverOptions o;
  o.t_end = 1.0;
  const double with = std::fabs(simulate(tm::msd::make(), o).back().y[0] - std::cos(1.0));
  o.initial_accelerations = false;
  const double without = std::fabs(simulate(tm::msd::make(), o).back().y[0] - std::cos(1.0));
  std::printf("x'' = -x, h = 1e-3, error at t = 1: %.3e with, %.3e without initial accelerations\n",
              with, without);
  EXPECT_LT(with, 1e-6);
  EXPECT_LT(without, 1e-3);
  EXPECT_GT(without, 100.0 * with);
}

// A larger model: 30 unknowns go through KLU (analyse once, refactor afterwards).
TEST(GenAlpha, ChainOfMassesThroughKluMatchesNormalMode) {
  namespace c = tm::chain;
  SolverOptions o;
  o.t_end = 2.0;
  o.h = 1e-3;
  o.rtol = 1e-12;
  o.atol = 1e-14;
  Statistics stats;
  const auto out = simulate(c::make(1.0, 100.0), o, SolveStatus::Finished, &stats);
  const double w1 = c::omega1(1.0, 100.0);
  double err = 0.0;
  for (const Sample& s : out) {
    for (int32_t i = 0; i < c::N; ++i) {
      err = std::max(err, std::fabs(s.y[i] - c::mode_shape(i) * std::cos(w1 * s.t)));
    }
  }
  std::printf("chain of %d masses (KLU): max error %.3e, %lld factorizations\n", c::N, err,
              static_cast<long long>(stats.factorizations));
  EXPECT_LT(err, 1e-6);
  EXPECT_LT(stats.factorizations, 10);  // linear: the matrix never needs refreshing
}

// ---- 3. ODE1 systems
TEST(GenAlpha, ExponentialDecaySecondOrder) {
  auto err = [](double h) {
    SolverOptions o;
    o.t_end = 1.0;
    o.h = h;
    o.rtol = 1e-13;
    o.atol = 1e-15;
    double e = 0.0;
    for (const Sample& s : simulate(tm::decay::make(2.0, 1.0), o)) {
      e = std::max(e, std::fabs(s.y[0] - std::exp(-2.0 * s.t)));
    }
    return e;
  };
  const double e1 = err(1e-2), e2 = err(5e-3);
  std::printf("decay: errors %.3e %.3e ratio %.3f\n", e1, e2, e1 / e2);
  EXPECT_LT(e1, 1e-4);
  EXPECT_GE(e1 / e2, 3.5);
  EXPECT_LE(e1 / e2, 4.5);
}

TEST(GenAlpha, VanDerPolMatchesFineRk4) {
  SolverOptions o;
  o.t_end = 5.0;
  o.h = 1e-3;
  o.rtol = 1e-12;
  o.atol = 1e-14;
  const auto ga = simulate(tm::vdp::make(1.0), o);
  SolverOptions r = o;
  r.solver = SolverKind::Rk4;
  r.h = 1e-4;
  const auto ref = simulate(tm::vdp::make(1.0), r);
  const double e1 = std::fabs(ga.back().y[0] - ref.back().y[0]);
  const double e2 = std::fabs(ga.back().y[1] - ref.back().y[1]);
  std::printf("van der Pol at t = 5: |dy1| = %.3e, |dy2| = %.3e\n", e1, e2);
  EXPECT_LT(e1, 1e-5);
  EXPECT_LT(e2, 1e-5);
  EXPECT_GT(e1 + e2, 0.0);  // the trapezoidal rule is not exact
}

// ---- 5. step halving and failure records
TEST(GenAlphaFailure, HalvesStepAndRecovers) {
  auto model = tm::msd::make(1.0, 0.0, 1.0, 1.0, 0.0);
  model.v0[tm::msd::T_LO] = 0.3;
  model.v0[tm::msd::T_HI] = 0.4;
  model.v0[tm::msd::H_MAX] = 3e-4;  // steps over 3e-4 fail in (0.3, 0.4)
  SolverOptions o;
  o.t_end = 1.0;
  Statistics stats;
  const auto out = simulate(model, o, SolveStatus::Finished, &stats);
  EXPECT_EQ(out.size(), 1001u);
  EXPECT_GT(stats.rejected_steps, 0);
  EXPECT_GT(stats.steps, 1000);
  EXPECT_NEAR(stats.h_smallest, 2.5e-4, 1e-15);
  EXPECT_DOUBLE_EQ(stats.h_largest, 1e-3);
  EXPECT_NEAR(out.back().y[0], std::cos(1.0), 1e-6);
  EXPECT_DOUBLE_EQ(out.back().t, 1.0);
}

TEST(GenAlphaFailure, NonFiniteResidualBeyondSomeTime) {
  auto model = tm::msd::make(1.0, 0.0, 1.0, 1.0, 0.0);
  model.v0[tm::msd::T_FAIL] = 0.5;
  SolverOptions o;
  o.t_end = 1.0;
  auto solver = make_integrator(model, o);
  double last_t = -1.0;
  const SolveStatus st = solver->run([&](double t, std::span<const double>) {
    last_t = t;
    return 0;
  });
  ASSERT_EQ(st, SolveStatus::Failed);
  const FailureRecord* f = solver->failure();
  ASSERT_NE(f, nullptr);
  std::printf("%s", f->message.c_str());
  EXPECT_EQ(f->kind, FailureKind::NonFiniteResidual);
  EXPECT_EQ(f->phase, FailurePhase::Step);
  EXPECT_NEAR(f->t, 0.5, 1e-11);
  EXPECT_LE(f->t, 0.5);
  EXPECT_LT(f->h, 2.0 * o.effective_h_min());
  EXPECT_GE(f->h, o.effective_h_min());
  EXPECT_GE(f->halvings, 20);
  EXPECT_EQ(f->equation, 0);
  EXPECT_EQ(f->kernel_status, 1);
  EXPECT_EQ(f->halvings, 29);  // 1e-3 / 2^29 = 1.86e-12, half of it is below h_min = 1e-12
  EXPECT_NE(f->message.find("in the step from t = 0.5 with h = 1.86265e-12"), std::string::npos);
  EXPECT_NE(f->message.find("halved 29 times"), std::string::npos);
  EXPECT_NE(f->message.find("msd.mbs:7:1: m*der(der(x)) + d*der(x) + k*x = 0"), std::string::npos);
  EXPECT_NE(f->message.find("help:"), std::string::npos);
  EXPECT_EQ(last_t, solver->time());  // the last good point was output
  EXPECT_NEAR(solver->symbols()[tm::msd::L.q(0)], std::cos(solver->time()), 1e-5);
  EXPECT_GT(solver->statistics().rejected_steps, 20);
}

TEST(GenAlphaFailure, HalvesStepWhenNewtonDiverges) {
  // Stick-slip: Newton on the regularized friction diverges at some transitions for h = 1e-3.
  SolverOptions o;
  o.t_end = 2.0;
  o.h = 1e-3;
  Statistics stats;
  const auto model = tm::friction::make();
  const auto out = simulate(model, o, SolveStatus::Finished, &stats);
  std::printf("%s", format_statistics_table(stats, "friction").c_str());
  EXPECT_GT(stats.rejected_steps, 0);
  EXPECT_LT(stats.h_smallest, 1e-3);
  // Reference: RK4 with a step well inside its stability limit for the stick phase.
  SolverOptions r = o;
  r.solver = SolverKind::Rk4;
  r.h = 2e-6;
  r.output_every = 500;
  const auto ref = simulate(model, r);
  ASSERT_EQ(ref.size(), out.size());
  double err = 0.0;
  for (size_t i = 0; i < out.size(); ++i) err = std::max(err, std::fabs(out[i].y[0] - ref[i].y[0]));
  std::printf("friction: max |x - x_rk4| = %.3e\n", err);
  EXPECT_LT(err, 1e-4);
}

TEST(GenAlphaFailure, NewtonFailureNamesEquationAndUnknown) {
  SolverOptions o;
  o.initial_accelerations = false;
  auto solver = make_integrator(tm::no_solution::make(), o);  // the integrator keeps a copy
  ASSERT_EQ(solver->run(nullptr), SolveStatus::Failed);
  const FailureRecord& f = *solver->failure();
  std::printf("%s", f.message.c_str());
  EXPECT_TRUE(f.kind == FailureKind::NewtonDiverged || f.kind == FailureKind::NewtonMaxIterations)
      << failure_kind_name(f.kind);
  EXPECT_EQ(f.t, 0.0);
  EXPECT_EQ(f.equation, 0);
  EXPECT_EQ(f.unknown, 0);
  EXPECT_GT(f.update, 1.0);
  EXPECT_NE(f.message.find("equation 0 (residual "), std::string::npos);
  EXPECT_NE(f.message.find("nosol.mbs:4:1: w^2 + 1 = 0"), std::string::npos);
  EXPECT_NE(f.message.find("unknown 'w' (declared at nosol.mbs:2:1) has the largest Newton update"),
            std::string::npos);
  EXPECT_NE(f.message.find("help: "), std::string::npos);
}

int32_t fatal_after_02(const double* v, double* out) {
  const int32_t st = tm::msd::residual(v, out);
  return v[tm::msd::L.t()] > 0.2 ? -7 : st;
}

TEST(GenAlphaFailure, FatalKernelStatusStopsWithoutHalving) {
  auto model = tm::msd::make();
  model.residual.fn = fatal_after_02;
  SolverOptions o;
  auto solver = make_integrator(model, o);
  ASSERT_EQ(solver->run(nullptr), SolveStatus::Failed);
  const FailureRecord& f = *solver->failure();
  EXPECT_EQ(f.kind, FailureKind::KernelFatal);
  EXPECT_EQ(f.kernel_status, -7);
  EXPECT_EQ(f.halvings, 0);
  EXPECT_NEAR(f.t, 0.2, 1e-12);
  EXPECT_EQ(solver->statistics().rejected_steps, 1);
}

TEST(GenAlphaFailure, SingularInitMatrixNamesTheMultiplier) {
  auto model = tm::pendulum::make();
  model.v0[tm::pendulum::X] = 0.0;  // at the pivot: the constraint gradient vanishes
  model.v0[tm::pendulum::Y] = 0.0;
  model.v0[tm::pendulum::LEN] = 0.0;
  auto solver = make_integrator(model, SolverOptions{});
  ASSERT_EQ(solver->initialize(), SolveStatus::Failed);
  const FailureRecord& f = *solver->failure();
  std::printf("%s", f.message.c_str());
  EXPECT_EQ(f.kind, FailureKind::SingularMatrix);
  EXPECT_EQ(f.phase, FailurePhase::InitialValues);
  EXPECT_EQ(f.unknown, 2);
  EXPECT_NE(f.message.find("unknown 'lambda'"), std::string::npos);
  EXPECT_NE(f.message.find("consistent initial values"), std::string::npos);
}

// ---- life cycle
TEST(GenAlphaLifeCycle, StepByStepEqualsRun) {
  SolverOptions o;
  o.t_end = 0.05;
  auto a = make_integrator(tm::pendulum::make(), o);
  auto b = make_integrator(tm::pendulum::make(), o);
  ASSERT_EQ(a->initialize(), SolveStatus::Ok);
  SolveStatus st = SolveStatus::Ok;
  int n = 0;
  while (st == SolveStatus::Ok) st = a->step(), ++n;
  EXPECT_EQ(st, SolveStatus::Finished);
  EXPECT_EQ(n, 50);
  EXPECT_EQ(a->step(), SolveStatus::Finished);
  EXPECT_EQ(b->run(nullptr), SolveStatus::Finished);
  EXPECT_DOUBLE_EQ(a->time(), 0.05);
  for (size_t i = 0; i < a->symbols().size(); ++i) {
    EXPECT_EQ(a->symbols()[i], b->symbols()[i]) << "slot " << i;
  }
}

TEST(GenAlphaLifeCycle, OutputEveryAndLastPoint) {
  SolverOptions o;
  o.t_end = 0.1005;  // 101 grid steps, the last one 0.5e-3 long
  o.output_every = 10;
  const auto out = simulate(tm::msd::make(), o);
  ASSERT_EQ(out.size(), 12u);  // t0, 10 every 10th step, and t_end
  EXPECT_EQ(out.front().t, 0.0);
  EXPECT_DOUBLE_EQ(out[1].t, 0.01);
  EXPECT_EQ(out.back().t, 0.1005);
  o.output_every = 0;
  EXPECT_EQ(simulate(tm::msd::make(), o).size(), 2u);
}

TEST(GenAlphaLifeCycle, ObserverCanStop) {
  SolverOptions o;
  auto solver = make_integrator(tm::msd::make(), o);
  int calls = 0;
  EXPECT_EQ(solver->run([&](double, std::span<const double>) { return ++calls == 5 ? 1 : 0; }),
            SolveStatus::Stopped);
  EXPECT_EQ(calls, 5);
  EXPECT_EQ(solver->grid_index(), 4);
}

TEST(GenAlphaLifeCycle, InterruptFlagStopsCleanly) {
  SolverOptions o;
  auto solver = make_integrator(tm::msd::make(), o);
  int calls = 0;
  const SolveStatus st = solver->run([&](double, std::span<const double>) {
    if (++calls == 100) request_interrupt();
    return 0;
  });
  clear_interrupt();
  EXPECT_EQ(st, SolveStatus::Interrupted);
  EXPECT_EQ(calls, 100);
  EXPECT_EQ(solver->grid_index(), 99);
}

TEST(GenAlphaSetup, RejectsBadModelsAndOptions) {
  auto model = tm::pendulum::make();
  model.eq_level.pop_back();
  try {
    make_integrator(model, SolverOptions{});
    FAIL() << "no error";
  } catch (const SolverSetupError& e) {
    EXPECT_NE(std::string(e.what()).find("eq_level has 2 entries, expected n_eq = 3"),
              std::string::npos)
        << e.what();
  }
  auto unsorted = tm::pendulum::make();
  std::swap(unsorted.newton_matrix.row[0], unsorted.newton_matrix.row[1]);
  EXPECT_THROW(make_integrator(unsorted, SolverOptions{}), SolverSetupError);
  SolverOptions o;
  o.rho_inf = 1.5;
  EXPECT_THROW(make_integrator(tm::msd::make(), o), SolverSetupError);
  auto no_init = tm::pendulum::make();
  no_init.init_residual = Kernel{};
  EXPECT_THROW(make_integrator(no_init, SolverOptions{}), SolverSetupError);
}

}  // namespace
}  // namespace mbs::rt
