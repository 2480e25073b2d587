// Events (docs/language.md, "Events"; docs/solvers.md, "Events"): when-equations with reinit,
// located by every integrator. Checked against closed forms: the bounce times and velocities of
// a ball (free fall is integrated exactly by every method here, so the located times must agree
// with the closed form to the event tolerance), the time a pendulum released from rest reaches
// its end stop (a quarter of its period, the complete elliptic integral K computed here by the
// arithmetic-geometric mean), a time event, elsewhen priority, chattering, the stepping API
// (step(), advance_to) against run(), and a model-cache round trip of the event tables.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numbers>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "mech_test_util.h"

namespace mbs {
namespace {

using testutil::output_column;

const char* const kBall = R"mbs(
model BouncingBall
  parameter Real e = 0.8 "coefficient of restitution";
  parameter Real g = 9.81;
  Real h(start = 1, fixed = true) "height";
  Real v(start = 0, fixed = true) "velocity";
equation
  der(h) = v;
  der(v) = -g;
  when h < 0 then
    reinit(v, -e * pre(v));
  end when;
end BouncingBall;
)mbs";

constexpr rt::SolverKind kAll[] = {rt::SolverKind::GenAlpha,    rt::SolverKind::Newmark,
                                   rt::SolverKind::Trapezoidal, rt::SolverKind::Rk4,
                                   rt::SolverKind::Dopri5,      rt::SolverKind::Ode23};

rt::SolverOptions options(rt::SolverKind kind, double t_end, double h = 1e-3) {
  rt::SolverOptions o;
  o.solver = kind;
  o.t_end = t_end;
  o.h = h;
  o.output_every = 0;  // the first and last point, and the rows of the events
  return o;
}

// The rows at events: pairs of rows with the same time (before, after).
std::vector<size_t> event_rows(const testutil::Run& r) {
  std::vector<size_t> at;
  for (size_t i = 0; i + 1 < r.t.size(); ++i)
    if (r.t[i] == r.t[i + 1]) at.push_back(i);
  return at;
}

TEST(Events, BouncingBallMatchesTheClosedFormWithEveryIntegrator) {
  auto m = testutil::compile_source("ball", kBall);
  ASSERT_TRUE(m);
  ASSERT_TRUE(m->has_events());
  const int h = output_column(*m, "h"), v = output_column(*m, "v");
  const double g = 9.81, e = 0.8, t1 = std::sqrt(2.0 / g), v1 = g * t1;
  // impact k (k = 0, 1, ...): time and speed before it
  std::vector<double> t_impact{t1}, v_impact{v1};
  for (int k = 1; k < 4; ++k) {
    v_impact.push_back(e * v_impact.back());
    t_impact.push_back(t_impact.back() + 2.0 * v_impact.back() / g);
  }
  for (rt::SolverKind kind : kAll) {
    SCOPED_TRACE(std::string(rt::solver_name(kind)));
    const testutil::Run r = testutil::simulate(*m, options(kind, 2.5));
    ASSERT_EQ(r.status, rt::SolveStatus::Finished);
    EXPECT_EQ(r.stats.events, 4);
    const std::vector<size_t> at = event_rows(r);
    ASSERT_EQ(at.size(), 4u);
    for (size_t k = 0; k < at.size(); ++k) {
      const auto& before = r.rows[at[k]];
      const auto& after = r.rows[at[k] + 1];
      EXPECT_NEAR(r.t[at[k]], t_impact[k], 1e-10) << "impact " << k;
      EXPECT_NEAR(before[static_cast<size_t>(h)], 0.0, 1e-10);
      EXPECT_LE(before[static_cast<size_t>(h)], 0.0);  // the condition h < 0 has become true
      EXPECT_EQ(after[static_cast<size_t>(h)], before[static_cast<size_t>(h)]);
      EXPECT_NEAR(before[static_cast<size_t>(v)], -v_impact[k], 1e-9);
      EXPECT_NEAR(after[static_cast<size_t>(v)], -e * before[static_cast<size_t>(v)], 1e-12);
    }
    // between the events the ball flies freely: the last row against the closed form
    const double dt = 2.5 - t_impact[3];
    const double v_up = e * v_impact[3];
    EXPECT_NEAR(r.rows.back()[static_cast<size_t>(h)], v_up * dt - 0.5 * g * dt * dt, 1e-9);
  }
}

// K(k) = pi / (2 agm(1, sqrt(1 - k^2))).
double elliptic_k(double k) {
  double a = 1.0, b = std::sqrt(1.0 - k * k);
  for (int i = 0; i < 40; ++i) {
    const double an = 0.5 * (a + b);
    b = std::sqrt(a * b);
    a = an;
  }
  return std::numbers::pi / (2.0 * a);
}

TEST(Events, PendulumReachesItsEndStopAfterAQuarterPeriod) {
  auto m = testutil::compile_source("stop", R"mbs(
model EndStop "a pendulum released from rest at phi0 hits a stop at phi = 0"
  parameter Real L = 0.8, g = 9.81, e = 0.5, phi0 = 1.2;
  Real phi(start = phi0, fixed = true), w(start = 0, fixed = true);
equation
  der(phi) = w;
  der(w) = -g / L * sin(phi);
  when phi < 0 then
    reinit(w, -e * pre(w));
  end when;
end EndStop;
)mbs");
  ASSERT_TRUE(m);
  const double L = 0.8, g = 9.81, phi0 = 1.2;
  const double t_stop = elliptic_k(std::sin(phi0 / 2.0)) * std::sqrt(L / g);
  const double w_stop = -2.0 * std::sqrt(g / L) * std::sin(phi0 / 2.0);  // energy
  const int w = output_column(*m, "w");
  for (rt::SolverKind kind : kAll) {
    SCOPED_TRACE(std::string(rt::solver_name(kind)));
    const bool explicit_method = rt::is_explicit(kind);
    rt::SolverOptions o = options(kind, 0.5, explicit_method ? 1e-3 : 1e-4);
    o.rtol = o.atol = 1e-10;
    const testutil::Run r = testutil::simulate(*m, o);
    ASSERT_EQ(r.status, rt::SolveStatus::Finished);
    const std::vector<size_t> at = event_rows(r);
    ASSERT_EQ(at.size(), 1u);
    // the located time of the discrete solution; its distance from the exact one is the
    // method's error (4th/5th order explicit, 2nd order implicit)
    EXPECT_NEAR(r.t[at[0]], t_stop, explicit_method ? 1e-8 : 2e-6);
    EXPECT_NEAR(r.rows[at[0]][static_cast<size_t>(w)], w_stop, explicit_method ? 1e-7 : 1e-4);
    EXPECT_NEAR(r.rows[at[0] + 1][static_cast<size_t>(w)],
                -0.5 * r.rows[at[0]][static_cast<size_t>(w)], 1e-12);
  }
}

TEST(Events, TimeEventsAndElsewhenPriority) {
  // x' = 1; at t = 0.25 the first branch sets x to 10; at t = 0.5 both conditions become true
  // and only the first branch (time > 0.45) fires: x = 100, not -100.
  auto m = testutil::compile_source("timed", R"mbs(
model Timed
  Real x(start = 0, fixed = true);
equation
  der(x) = 1;
  when time >= 0.25 then
    reinit(x, 10);
  end when;
  when time > 0.45 + 0.05 then
    reinit(x, 100);
  elsewhen time > 0.5 then
    reinit(x, -100);
  end when;
end Timed;
)mbs");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->n_whens(), 2);
  const int x = output_column(*m, "x");
  for (rt::SolverKind kind : kAll) {
    SCOPED_TRACE(std::string(rt::solver_name(kind)));
    const testutil::Run r = testutil::simulate(*m, options(kind, 1.0, 0.01));
    ASSERT_EQ(r.status, rt::SolveStatus::Finished);
    const std::vector<size_t> at = event_rows(r);
    ASSERT_EQ(at.size(), 2u);
    EXPECT_NEAR(r.t[at[0]], 0.25, 1e-12);
    EXPECT_NEAR(r.rows[at[0]][static_cast<size_t>(x)], 0.25, 1e-12);
    EXPECT_EQ(r.rows[at[0] + 1][static_cast<size_t>(x)], 10.0);
    EXPECT_NEAR(r.t[at[1]], 0.5, 1e-12);
    EXPECT_EQ(r.rows[at[1] + 1][static_cast<size_t>(x)], 100.0);
    EXPECT_NEAR(r.rows.back()[static_cast<size_t>(x)], 100.5, 1e-9);
  }
}

const char* const kSpringStop = R"mbs(
model SpringStop "a mass flying at v0 into a spring stop at x = x0 and back"
  parameter Real m = 1, k = 100, x0 = 0.5, v0 = 2;
  Real x(start = 0, fixed = true), v(start = v0, fixed = true);
equation
  der(x) = v;
  if x > x0 then
    m * der(v) = -k * (x - x0);
  else
    m * der(v) = 0;
  end if;
end SpringStop;
)mbs";

TEST(Events, SwitchedEquationsStopAtEveryChangeOfTheirCondition) {
  // contact at x0 / v0, half an oscillation of pi sqrt(m / k), out again with -v0
  auto m = testutil::compile_source("spring_stop", kSpringStop);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->n_whens(), 0);
  EXPECT_EQ(m->n_switches, 1);
  const double t_in = 0.25, t_out = t_in + std::numbers::pi / 10.0;
  const int x = output_column(*m, "x"), v = output_column(*m, "v");
  for (rt::SolverKind kind : kAll) {
    SCOPED_TRACE(std::string(rt::solver_name(kind)));
    const bool explicit_method = rt::is_explicit(kind);
    rt::SolverOptions o = options(kind, 0.7, explicit_method ? 1e-3 : 1e-4);
    o.rtol = o.atol = 1e-11;
    const testutil::Run r = testutil::simulate(*m, o);
    ASSERT_EQ(r.status, rt::SolveStatus::Finished);
    EXPECT_EQ(r.stats.events, 2);
    const std::vector<size_t> at = event_rows(r);
    ASSERT_EQ(at.size(), 2u);
    EXPECT_NEAR(r.t[at[0]], t_in, 1e-12);
    EXPECT_NEAR(r.t[at[1]], t_out, explicit_method ? 1e-9 : 1e-6);
    EXPECT_NEAR(r.rows[at[1]][static_cast<size_t>(x)], 0.5, 1e-11);
    EXPECT_NEAR(r.rows.back()[static_cast<size_t>(v)], -2.0, explicit_method ? 1e-9 : 1e-6);
    EXPECT_NEAR(r.rows.back()[static_cast<size_t>(x)], 0.5 - 2.0 * (0.7 - t_out),
                explicit_method ? 1e-9 : 1e-5);
  }
}

TEST(Events, NoEventKeepsTheSolversFromStopping) {
  std::string text = kSpringStop;
  const std::string from = "  if x > x0 then";
  text.replace(text.find(from), text.find("end if;") + 7 - text.find(from),
               "  m * der(v) = noEvent(if x > x0 then -k * (x - x0) else 0);");
  auto quiet = testutil::compile_source("spring_stop_quiet", text);
  ASSERT_TRUE(quiet);
  EXPECT_FALSE(quiet->has_events());
  text.replace(text.find("noEvent("), 8, "(");
  auto located = testutil::compile_source("spring_stop_expr", text);
  ASSERT_TRUE(located);
  EXPECT_EQ(located->n_switches, 1);
  const testutil::Run a = testutil::simulate(*quiet, options(rt::SolverKind::Rk4, 0.7));
  const testutil::Run b = testutil::simulate(*located, options(rt::SolverKind::Rk4, 0.7));
  EXPECT_EQ(a.stats.events, 0);
  EXPECT_EQ(b.stats.events, 2);
  // both reach -v0; the located run far closer (the kinks inside steps cost accuracy)
  const int v = output_column(*located, "v");
  const double err_quiet = std::fabs(a.rows.back()[static_cast<size_t>(v)] + 2.0);
  const double err_located = std::fabs(b.rows.back()[static_cast<size_t>(v)] + 2.0);
  EXPECT_LT(err_located, 1e-9);
  EXPECT_LT(err_located, 0.01 * err_quiet);
}

const char* const kCartesianStop = R"mbs(
model CartesianStop "a point mass on a rod whose horizontal velocity is stopped at x = -0.6"
  parameter Real m = 1, L = 1, g = 9.81;
  Real x(start = 1), y(start = 0), vx, vy;
  Real lambda "constraint multiplier";
equation
  der(x) = vx;
  der(y) = vy;
  m * der(vx) = -2 * x * lambda;
  m * der(vy) = -m * g - 2 * y * lambda;
  x^2 + y^2 = L^2;
  when x < -0.6 then
    reinit(vx, 0);
  end when;
end CartesianStop;
)mbs";

TEST(Events, AReinitInAConstrainedModelIsMadeConsistentByAnImpulse) {
  // At (-0.6, -0.8) the velocity is s t with t the unit tangent and s = sqrt(2 g 0.8) (energy).
  // reinit(vx, 0) leaves (0, vy); the impulse of the rod (mass-weighted projection on the
  // tangent, m the same in x and y) gives (t . (0, vy)) t = t_y^2 s t: both components times
  // t_y^2 = 0.36 (to the accuracy of the event's point and of the velocity before it, which
  // index-3 integration keeps on the tangent to about 1e-8), and the rod's velocity constraint
  // x vx + y vy = 0 holds again.
  auto m = testutil::compile_source("cartesian_stop", kCartesianStop);
  ASSERT_TRUE(m);
  const int x = output_column(*m, "x"), y = output_column(*m, "y");
  const int vx = output_column(*m, "vx"), vy = output_column(*m, "vy");
  const double s = std::sqrt(2.0 * 9.81 * 0.8);
  for (rt::SolverKind kind :
       {rt::SolverKind::GenAlpha, rt::SolverKind::Newmark, rt::SolverKind::Trapezoidal}) {
    SCOPED_TRACE(std::string(rt::solver_name(kind)));
    const testutil::Run r = testutil::simulate(*m, options(kind, 1.5, 1e-4));
    ASSERT_EQ(r.status, rt::SolveStatus::Finished);
    const std::vector<size_t> at = event_rows(r);
    ASSERT_EQ(at.size(), 1u);
    const auto& before = r.rows[at[0]];
    const auto& after = r.rows[at[0] + 1];
    EXPECT_NEAR(before[static_cast<size_t>(x)], -0.6, 1e-9);
    EXPECT_NEAR(std::hypot(before[static_cast<size_t>(vx)], before[static_cast<size_t>(vy)]), s,
                1e-3);  // the numerical damping of the method over the swing
    EXPECT_NEAR(after[static_cast<size_t>(vx)], 0.36 * before[static_cast<size_t>(vx)], 1e-7);
    EXPECT_NEAR(after[static_cast<size_t>(vy)], 0.36 * before[static_cast<size_t>(vy)], 1e-7);
    // exactly: the projection of (0, vy) on the tangent at the event's own point
    const double px = before[static_cast<size_t>(x)], py = before[static_cast<size_t>(y)];
    const double tx = -py / std::hypot(px, py), ty = px / std::hypot(px, py);
    const double along = ty * before[static_cast<size_t>(vy)];
    EXPECT_NEAR(after[static_cast<size_t>(vx)], along * tx, 1e-12);
    EXPECT_NEAR(after[static_cast<size_t>(vy)], along * ty, 1e-12);
    EXPECT_NEAR(after[static_cast<size_t>(x)] * after[static_cast<size_t>(vx)] +
                    after[static_cast<size_t>(y)] * after[static_cast<size_t>(vy)],
                0.0, 1e-9);
    // and the run goes on on the circle
    EXPECT_NEAR(
        std::hypot(r.rows.back()[static_cast<size_t>(x)], r.rows.back()[static_cast<size_t>(y)]),
        1.0, 1e-9);
  }
  // a new position of a constrained model: x is kept, y moves back onto the circle
  std::string text = kCartesianStop;
  text.replace(text.find("reinit(vx, 0)"), 13, "reinit(x, -0.5)");
  auto positions = testutil::compile_source("cartesian_stop_x", text);
  ASSERT_TRUE(positions);
  const testutil::Run p = testutil::simulate(*positions, options(rt::SolverKind::GenAlpha, 0.8));
  ASSERT_EQ(p.status, rt::SolveStatus::Finished);
  const std::vector<size_t> at = event_rows(p);
  ASSERT_GE(at.size(), 1u);
  const auto& moved = p.rows[at[0] + 1];
  EXPECT_EQ(moved[static_cast<size_t>(x)], -0.5);
  EXPECT_NEAR(moved[static_cast<size_t>(y)], -std::sqrt(0.75), 1e-12);
  EXPECT_NEAR(-0.5 * moved[static_cast<size_t>(vx)] +
                  moved[static_cast<size_t>(y)] * moved[static_cast<size_t>(vy)],
              0.0, 1e-12);
}

TEST(Events, ChatteringIsReportedWithTheWhenClause) {
  // A ball put back on the ground at each impact, e = 0.5: the bounces accumulate at
  // t = t1 (1 + 2 e / (1 - e)) = 3 t1 ~ 1.35 s (Zeno), where the run must fail as chattering.
  // (Without reinit(h, 0), the ball of kBall ends slightly below the ground once a bounce is too
  // small to lift it above it within a step, the condition h < 0 stays true and it falls.)
  std::string text = kBall;
  const std::string reinit_v = "    reinit(v, -e * pre(v));\n";
  text.insert(text.find(reinit_v), "    reinit(h, 0);\n");
  auto m = testutil::compile_source("zeno", text);
  ASSERT_TRUE(m);
  for (rt::SolverKind kind : {rt::SolverKind::GenAlpha, rt::SolverKind::Dopri5}) {
    rt::SolverOptions o = options(kind, 3.0);
    o.chatter_limit = 20;
    auto solver = rt::make_integrator(m, o);
    std::vector<double> v(m->v0);
    for (size_t i = 0; i < m->parameters.size(); ++i)
      if (m->parameters[i].name == "e") v[static_cast<size_t>(m->parameter_slot[i])] = 0.5;
    solver->set_start(v);
    size_t rows = 0;
    const rt::SolveStatus st = solver->run([&](double, std::span<const double>) {
      ++rows;
      return 0;
    });
    ASSERT_EQ(st, rt::SolveStatus::Failed);
    ASSERT_NE(solver->failure(), nullptr);
    EXPECT_EQ(solver->failure()->kind, rt::FailureKind::Chattering);
    const std::string& msg = solver->failure()->message;
    EXPECT_NE(msg.find("chattering"), std::string::npos) << msg;
    EXPECT_NE(msg.find("when h < 0"), std::string::npos) << msg;
    EXPECT_NEAR(solver->time(), 3.0 * std::sqrt(2.0 / 9.81), 1e-6);
    EXPECT_GT(rows, 40u);  // the rows before the failure were written
  }
}

TEST(Events, SteppingMeetsTheSameEventsAsRun) {
  auto m = testutil::compile_source("ball_step", kBall);
  ASSERT_TRUE(m);
  const int h = output_column(*m, "h");
  for (rt::SolverKind kind : {rt::SolverKind::GenAlpha, rt::SolverKind::Rk4}) {
    const testutil::Run r = testutil::simulate(*m, options(kind, 2.0));
    auto stepper = rt::make_integrator(m, options(kind, 2.0));
    for (int i = 0; i < 500; ++i) ASSERT_EQ(stepper->step(), rt::SolveStatus::Ok);
    ASSERT_EQ(stepper->advance_to(0.7), rt::SolveStatus::Ok);  // across the first impact
    ASSERT_EQ(stepper->advance_to(1.3), rt::SolveStatus::Ok);  // the second
    ASSERT_EQ(stepper->advance_to(2.0), rt::SolveStatus::Ok);  // the third
    EXPECT_EQ(stepper->statistics().events, r.stats.events);
    EXPECT_NEAR(stepper->evaluate_outputs()[static_cast<size_t>(h)],
                r.rows.back()[static_cast<size_t>(h)], 1e-12);
  }
}

TEST(Events, CachedModelKeepsItsEvents) {
  CompileOptions co;
  co.cache_dir = testutil::temp_path("event_cache");
  auto first = testutil::compile_source("ball_cached", kBall, co);
  auto second = testutil::compile_source("ball_cached", kBall, co);
  ASSERT_TRUE(first && second);
  ASSERT_TRUE(second->has_events());
  EXPECT_EQ(second->reinit_slot, first->reinit_slot);
  EXPECT_EQ(second->branch_source.front().text, "h < 0");
  const testutil::Run a = testutil::simulate(*first, options(rt::SolverKind::GenAlpha, 2.0));
  const testutil::Run b = testutil::simulate(*second, options(rt::SolverKind::GenAlpha, 2.0));
  EXPECT_EQ(a.t, b.t);
  EXPECT_EQ(a.rows, b.rows);
}

TEST(Events, ExactSensitivitiesAreRefused) {
  CompileOptions co;
  co.sensitivities = true;
  auto m = testutil::compile_source("ball_sens", kBall, co);
  ASSERT_TRUE(m);
  auto solver = rt::make_integrator(m, options(rt::SolverKind::GenAlpha, 1.0));
  rt::SensitivityDirection d;
  d.dp.assign(m->parameters.size(), 0.0);
  d.start.assign(static_cast<size_t>(2 * m->n_q + m->n_y), 0.0);
  EXPECT_THROW(solver->enable_sensitivities({d}), rt::SolverSetupError);
}

std::string example_text(const std::string& name) {
  std::ifstream in(std::string(MBS_SOURCE_DIR) + "/examples/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_FALSE(ss.str().empty()) << name;
  return ss.str();
}

// examples/relief_valve.mbs: the pressure rises linearly (integrated exactly by every method)
// until the valve cracks at t1 = pc C / Q, then relaxes exponentially to pc + Q/kv.
TEST(Events, ReliefValveOpensAtTheClosedFormTimeWithEveryIntegrator) {
  auto m = testutil::compile_source("relief", example_text("relief_valve.mbs"));
  ASSERT_TRUE(m);
  const double Q = 2e-4, C = 1e-11, pc = 1.2345e7, kv = 4e-11, t1 = pc * C / Q, tau = C / kv;
  const auto exact = [&](double t) {
    return t <= t1 ? Q * t / C : pc + Q / kv * (1 - std::exp(-(t - t1) / tau));
  };
  const int p = output_column(*m, "p");
  for (rt::SolverKind kind : kAll) {
    SCOPED_TRACE(std::string(rt::solver_name(kind)));
    rt::SolverOptions o = options(kind, 2.0);
    o.output_every = 1;
    const testutil::Run r = testutil::simulate(*m, o);
    ASSERT_EQ(r.status, rt::SolveStatus::Finished);
    EXPECT_EQ(r.stats.events, 1);
    const std::vector<size_t> at = event_rows(r);
    ASSERT_EQ(at.size(), 1u);
    EXPECT_NEAR(r.t[at[0]], t1, 1e-10);
    EXPECT_NEAR(r.rows[at[0]][static_cast<size_t>(p)], pc, 1e-10 * pc);
    // second-order implicit methods on the exponential: h^2-accurate; the explicit ones far better
    const bool implicit = kind == rt::SolverKind::GenAlpha || kind == rt::SolverKind::Newmark ||
                          kind == rt::SolverKind::Trapezoidal;
    for (size_t i = 0; i < r.t.size(); ++i)
      EXPECT_NEAR(r.rows[i][static_cast<size_t>(p)], exact(r.t[i]), (implicit ? 3e-7 : 1e-9) * pc)
          << r.t[i];
  }
}

// examples/switched_spring_chain.mbs: an undamped chain whose last mass meets a stop spring.
// Its energy is conserved; the methods keep it to their accuracy only when the contacts and
// releases are located (the same model with noEvent drifts by orders of magnitude more).
TEST(Events, SwitchedSpringInAChainConservesEnergyOnlyWhenLocated) {
  const std::string text = example_text("switched_spring_chain.mbs");
  std::string quiet_text = text;
  const std::string from =
      "  if x[3] > gap then\n    fs = ks*(x[3] - gap);\n  else\n    fs = 0;\n"
      "  end if;\n";
  ASSERT_NE(quiet_text.find(from), std::string::npos);
  quiet_text.replace(quiet_text.find(from), from.size(),
                     "  fs = noEvent(if x[3] > gap then ks*(x[3] - gap) else 0);\n");
  auto located = testutil::compile_source("switched_chain", text);
  auto quiet = testutil::compile_source("switched_chain_quiet", quiet_text);
  ASSERT_TRUE(located && quiet);
  const auto drift = [](const rt::CompiledModel& m, const testutil::Run& r) {
    const auto e = static_cast<size_t>(output_column(m, "E"));
    double worst = 0;
    for (const auto& row : r.rows) worst = std::max(worst, std::fabs(row[e] - r.rows[0][e]));
    return worst;
  };
  struct Case {
    rt::SolverKind kind;
    double bound;  // the located run's energy drift over 5 s at h = 1e-3
  };
  for (const Case c : {Case{rt::SolverKind::Trapezoidal, 1e-10}, Case{rt::SolverKind::Rk4, 2e-7},
                       Case{rt::SolverKind::Dopri5, 2e-8}}) {
    SCOPED_TRACE(std::string(rt::solver_name(c.kind)));
    rt::SolverOptions o = options(c.kind, 5.0);
    o.output_every = 1;
    const testutil::Run a = testutil::simulate(*located, o);
    const testutil::Run b = testutil::simulate(*quiet, o);
    ASSERT_EQ(a.status, rt::SolveStatus::Finished);
    ASSERT_EQ(b.status, rt::SolveStatus::Finished);
    EXPECT_EQ(a.stats.events, 14);
    EXPECT_EQ(b.stats.events, 0);
    EXPECT_NEAR(a.rows[0][static_cast<size_t>(output_column(*located, "E"))], 2.75, 1e-12);
    EXPECT_LT(drift(*located, a), c.bound);
    EXPECT_GT(drift(*quiet, b), 100 * drift(*located, a));
  }
}

// The slider-crank of examples/mechanics/slider_crank_backlash.mbs in its one minimal coordinate,
// integrated independently of mbs: phi'' = (tau - M'(phi) phi'^2 / 2) / M(phi) with the mass
// M(phi) of the loop in closed form (crank, rod and slider; the rod angle theta from
// r sin(phi) + l sin(theta) = 0), the motor Jm psi'' = tau_m - tau, RK4 at 1e-5 with each change
// of the gear's contact located by bisection on the step length to 1e-15.
struct BacklashReference {
  static constexpr double r = 0.1, l = 0.3, Jm = 2e-3, k = 20, b = 0.05, tau_m = 0.1;
  using State = std::array<double, 4>;  // phi, phi', psi, psi'
  static void mass(double f, double& M, double& dM) {
    const double th = std::asin(-r * std::sin(f) / l), ct = std::cos(th), st = std::sin(th);
    const double t1 = -r * std::cos(f) / (l * ct);                      // theta'(phi)
    const double t2 = (r * std::sin(f) + l * st * t1 * t1) / (l * ct);  // theta''(phi)
    // d/dphi and d2/dphi2 of the crank's centre of mass, the rod's and the slider's position
    const double p1x = -r / 2 * std::sin(f), p1y = r / 2 * std::cos(f);
    const double q1x = -r / 2 * std::cos(f), q1y = -r / 2 * std::sin(f);
    const double p2x = -r * std::sin(f) - l / 2 * t1 * st, p2y = r * std::cos(f) + l / 2 * t1 * ct;
    const double q2x = -r * std::cos(f) + l / 2 * (-t2 * st - t1 * t1 * ct);
    const double q2y = -r * std::sin(f) + l / 2 * (t2 * ct - t1 * t1 * st);
    const double s1 = -r * std::sin(f) - l * st * t1;
    const double s2 = -r * std::cos(f) - l * (ct * t1 * t1 + st * t2);
    const double I1 = 1e-3, I2 = 7.5e-3;  // the bodies' inertia about z; all masses 1
    M = p1x * p1x + p1y * p1y + I1 + p2x * p2x + p2y * p2y + I2 * t1 * t1 + s1 * s1;
    dM = 2 * (p1x * q1x + p1y * q1y) + 2 * (p2x * q2x + p2y * q2y) + 2 * I2 * t1 * t2 + 2 * s1 * s2;
  }
  static int contact(const State& x) {
    const double d = x[2] - x[0];
    return d > b ? 1 : d < -b ? -1 : 0;
  }
  static State rhs(const State& x, int c) {
    double M = 0, dM = 0;
    mass(x[0], M, dM);
    const double d = x[2] - x[0], tau = c == 1 ? k * (d - b) : c == -1 ? k * (d + b) : 0.0;
    return {x[1], (tau - 0.5 * dM * x[1] * x[1]) / M, x[3], (tau_m - tau) / Jm};
  }
  static State rk4(const State& x, double h, int c) {
    const auto at = [&](const State& k, double s) {
      State y;
      for (int i = 0; i < 4; ++i) y[i] = x[i] + s * k[i];
      return y;
    };
    const State k1 = rhs(x, c), k2 = rhs(at(k1, h / 2), c), k3 = rhs(at(k2, h / 2), c),
                k4 = rhs(at(k3, h), c);
    State y;
    for (int i = 0; i < 4; ++i) y[i] = x[i] + h / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
    return y;
  }
  // the times at which the contact changes until t_end
  static std::vector<double> events(double t_end) {
    State x{0.5, 2, 0.5, 3};
    double t = 0;
    const double h = 1e-5;
    int c = contact(x);
    std::vector<double> at;
    while (t < t_end - 1e-15) {
      const double hh = std::min(h, t_end - t);
      State y = rk4(x, hh, c);
      if (contact(y) != c) {
        double lo = 0, hi = hh;
        while (hi - lo > 1e-15) {
          const double s = 0.5 * (lo + hi);
          (contact(rk4(x, s, c)) != c ? hi : lo) = s;
        }
        y = rk4(x, hi, c);
        t += hi;
        c = contact(y);
        at.push_back(t);
      } else {
        t += hh;
      }
      x = y;
    }
    return at;
  }
};

// examples/mechanics/slider_crank_backlash.mbs: switches in a closed loop (position-level
// constraints). Every contact and release of the gear is located, on the discrete solution to
// the event tolerance, and at the times of the minimal-coordinate model above to the accuracy
// of each method, converging at second order.
TEST(Events, SliderCrankWithBacklashMeetsTheEventsOfItsMinimalCoordinateModel) {
  auto m = testutil::compile_source("slider_crank_backlash",
                                    example_text("mechanics/slider_crank_backlash.mbs"));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->n_switches, 2);
  EXPECT_GT(m->n_z, 0);
  const std::vector<double> ref = BacklashReference::events(2.0);
  ASSERT_EQ(ref.size(), 55u);
  const auto phi = static_cast<size_t>(output_column(*m, "crank.phi"));
  const auto psi = static_cast<size_t>(output_column(*m, "psi"));
  for (rt::SolverKind kind :
       {rt::SolverKind::GenAlpha, rt::SolverKind::Newmark, rt::SolverKind::Trapezoidal}) {
    SCOPED_TRACE(std::string(rt::solver_name(kind)));
    double error[2] = {0, 0};
    for (int i = 0; i < 2; ++i) {
      const testutil::Run r = testutil::simulate(*m, options(kind, 2.0, i == 0 ? 1e-3 : 1e-4));
      ASSERT_EQ(r.status, rt::SolveStatus::Finished);
      EXPECT_EQ(r.stats.events, 55);
      const std::vector<size_t> at = event_rows(r);
      ASSERT_EQ(at.size(), ref.size());
      for (size_t e = 0; e < at.size(); ++e) {
        error[i] = std::max(error[i], std::fabs(r.t[at[e]] - ref[e]));
        // the gap is closed or opened exactly at the rows of the event
        for (size_t row : {at[e], at[e] + 1}) {
          const double d = r.rows[row][psi] - r.rows[row][phi];
          EXPECT_LT(std::min(std::fabs(d - 0.05), std::fabs(d + 0.05)), 1e-10) << r.t[row];
        }
      }
    }
    EXPECT_LT(error[0], 3e-3);
    EXPECT_LT(error[1], 3e-5);
    EXPECT_GT(error[0] / error[1], 50.0);  // second order
  }
}

// A time switch just after a grid point in a constrained model: the step that ends at it is
// 1e-12 s long. Solved by Newton, the index-3 rows (scaled by 1 / (beta h^2)) turned rounding
// into multipliers of 5e7 instead of 0.1 and a jump of 1e-4 in the crank speed; the short step
// is now the Taylor expansion (docs/solvers.md, "Events"). The run must agree with the one
// whose switch is on the grid point, to the effect of shifting the switch by 1e-12 s.
TEST(Events, AShortStepToAnEventKeepsTheMultipliersOfAConstrainedModel) {
  std::string text = example_text("mechanics/slider_crank.mbs");
  const std::string from = "  crank.tau = torque;\n";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), "  crank.tau = if time > ts then 1 else 0;\n");
  const std::string par = "  parameter Real torque";
  ASSERT_NE(text.find(par), std::string::npos);
  for (rt::SolverKind kind : {rt::SolverKind::GenAlpha, rt::SolverKind::Trapezoidal}) {
    SCOPED_TRACE(std::string(rt::solver_name(kind)));
    std::vector<testutil::Run> runs;
    std::shared_ptr<const rt::CompiledModel> m;
    for (const double ts : {0.1, 0.1 + 1e-12}) {
      rt::SolverOptions o = options(kind, 1.0);
      o.output_every = 1;
      char line[64];
      std::snprintf(line, sizeof line, "  parameter Real ts = %.17g;\n", ts);
      std::string with_ts = text;
      with_ts.insert(with_ts.find(par), line);
      m = testutil::compile_source("slider_crank_switch", with_ts);
      ASSERT_TRUE(m);
      runs.push_back(testutil::simulate(*m, o));
      ASSERT_EQ(runs.back().status, rt::SolveStatus::Finished);
      EXPECT_EQ(runs.back().stats.events, 1);
    }
    const auto l1 = static_cast<size_t>(output_column(*m, "pin.lambda[1]"));
    const auto w = static_cast<size_t>(output_column(*m, "crank.w"));
    const std::vector<size_t> a = event_rows(runs[0]), b = event_rows(runs[1]);
    // on the grid point the event's two rows follow the row of the grid: three at t = 0.1
    ASSERT_EQ(a.size(), 2u);
    ASSERT_EQ(b.size(), 1u);
    EXPECT_NEAR(runs[1].t[b[0]], 0.1 + 1e-12, 1e-15);
    // the row before the event: 1e-12 s after the grid point's row of the same run
    const auto& grid = runs[1].rows[b[0] - 1];
    const auto& before = runs[1].rows[b[0]];
    EXPECT_EQ(runs[1].t[b[0] - 1], 0.1);
    EXPECT_NEAR(before[l1], grid[l1], 1e-9 * std::fabs(grid[l1]));
    EXPECT_NEAR(before[w], grid[w], 1e-9);
    // the row after it: as after the event on the grid point (consistent multipliers)
    const auto& after = runs[1].rows[b[0] + 1];
    const auto& after_on_grid = runs[0].rows[a[1] + 1];
    EXPECT_NEAR(after[l1], after_on_grid[l1], 1e-9 * std::fabs(after_on_grid[l1]));
    EXPECT_NEAR(after[w], after_on_grid[w], 1e-9);
    EXPECT_NEAR(runs[1].rows.back()[w], runs[0].rows.back()[w], 1e-7);
  }
}

// A reinit of a coordinate in a closed loop: the crank of examples/mechanics/slider_crank.mbs is
// set back to phi = 0.5 at t = 0.3. The crank keeps that value, the rod and the slider move to
// close the loop (the slider at the exact kinematics r cos(phi) + sqrt(l^2 - r^2 sin(phi)^2)),
// and the velocities are consistent with the new configuration (the slider's speed is the time
// derivative of the exact kinematics). Setting both joint angles to values that do not close
// the loop cannot be done, and says so.
TEST(Events, AReinitOfACoordinateInAClosedLoopIsProjectedOnTheConstraints) {
  const std::string text = example_text("mechanics/slider_crank.mbs");
  const std::string end = "end SliderCrank;";
  ASSERT_NE(text.find(end), std::string::npos);
  const auto with = [&](const std::string& when) {
    std::string t = text;
    t.insert(t.find(end), when);
    return t;
  };
  auto m = testutil::compile_source(
      "slider_crank_reinit",
      with("  when time > 0.3 then\n    reinit(crank.phi, 0.5);\n  end when;\n"));
  ASSERT_TRUE(m);
  const double r = 0.1, l = 0.3;
  const auto phi = static_cast<size_t>(output_column(*m, "crank.phi"));
  const auto w = static_cast<size_t>(output_column(*m, "crank.w"));
  const auto rod = static_cast<size_t>(output_column(*m, "rod_joint.phi"));
  const auto s = static_cast<size_t>(output_column(*m, "slider.s"));
  const auto v = static_cast<size_t>(output_column(*m, "slider.v"));
  for (rt::SolverKind kind :
       {rt::SolverKind::GenAlpha, rt::SolverKind::Newmark, rt::SolverKind::Trapezoidal}) {
    SCOPED_TRACE(std::string(rt::solver_name(kind)));
    rt::SolverOptions o = options(kind, 0.5);
    o.output_every = 1;
    const testutil::Run run = testutil::simulate(*m, o);
    ASSERT_EQ(run.status, rt::SolveStatus::Finished);
    const std::vector<size_t> at = event_rows(run);
    ASSERT_EQ(at.size(), 1u);
    const auto& before = run.rows[at[0]];
    const auto& after = run.rows[at[0] + 1];
    EXPECT_NEAR(run.t[at[0]], 0.3, 1e-12);
    EXPECT_GT(before[phi], 1.0);  // it had turned on: the reinit moves the loop a long way
    EXPECT_EQ(after[phi], 0.5);
    EXPECT_GT(std::fabs(after[rod] - before[rod]), 0.1);
    const double f = after[phi], root = std::sqrt(l * l - r * r * std::sin(f) * std::sin(f));
    EXPECT_NEAR(after[s], r * std::cos(f) + root, 1e-12);
    const double ds = -r * std::sin(f) - r * r * std::sin(f) * std::cos(f) / root;
    EXPECT_NEAR(after[v], ds * after[w], 1e-10);
    // the loop stays closed afterwards
    for (size_t i = at[0] + 1; i < run.t.size(); ++i) {
      const double g = run.rows[i][phi];
      EXPECT_NEAR(run.rows[i][s],
                  r * std::cos(g) + std::sqrt(l * l - r * r * std::sin(g) * std::sin(g)), 1e-12);
    }
  }
  // both angles kept at values that do not close the loop
  auto bad = testutil::compile_source(
      "slider_crank_reinit_both",
      with("  when time > 0.3 then\n    reinit(crank.phi, 0.5);\n    reinit(rod_joint.phi, 1);\n"
           "  end when;\n"));
  ASSERT_TRUE(bad);
  auto solver = rt::make_integrator(bad, options(rt::SolverKind::GenAlpha, 0.5));
  EXPECT_EQ(solver->run([](double, std::span<const double>) { return 0; }),
            rt::SolveStatus::Failed);
  ASSERT_TRUE(solver->failure());
  EXPECT_EQ(solver->failure()->kind, rt::FailureKind::ReinitInconsistent);
  const std::string& msg = solver->failure()->message;
  EXPECT_NE(msg.find("singular"), std::string::npos) << msg;
  // it says what happened (the event was found; its reinits cannot be met), names what the
  // reinit set, and gives no advice about the step, which plays no part in it
  EXPECT_NE(msg.find("do not satisfy the constraints"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'crank.phi', 'rod_joint.phi'"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("could not be located"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("smaller --step"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("halved"), std::string::npos) << msg;
}

}  // namespace
}  // namespace mbs
