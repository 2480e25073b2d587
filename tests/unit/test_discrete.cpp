// Discrete variables (docs/language.md, "Discrete variables"): variables assigned in
// when-equations, pre/edge/change, the event iteration, initial() and terminal(). Checked against
// closed forms: the number and times of a ball's bounces, a sampled controller against the exact
// recursion of its zero-order-hold discretisation, counters driven by edge and change through the
// event iteration, and the energy of an undamped oscillator recorded at the start and the end.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "mech_test_util.h"

namespace mbs {
namespace {

using testutil::output_column;

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

bool implicit(rt::SolverKind k) {
  return k == rt::SolverKind::GenAlpha || k == rt::SolverKind::Newmark ||
         k == rt::SolverKind::Trapezoidal;
}

// The rows at events: pairs of rows with the same time (before, after).
std::vector<size_t> event_rows(const testutil::Run& r) {
  std::vector<size_t> at;
  for (size_t i = 0; i + 1 < r.t.size(); ++i)
    if (r.t[i] == r.t[i + 1]) at.push_back(i);
  return at;
}

double col(const testutil::Run& r, size_t row, int c) {
  return r.rows[row][static_cast<size_t>(c)];
}

const char* const kCountingBall = R"mbs(
model CountingBall
  parameter Real e = 0.8, g = 9.81;
  Real h(start = 1, fixed = true), v(start = 0, fixed = true);
  Integer n(start = 0) "bounces so far";
  discrete Real t_last(start = -1) "time of the last bounce";
  discrete Real v_impact "speed of the last impact";
equation
  der(h) = v;
  der(v) = -g;
  when h < 0 then
    reinit(v, -e * pre(v));
    n = pre(n) + 1;
    t_last = time;
    v_impact = -v;
  end when;
end CountingBall;
)mbs";

TEST(Discrete, AssignmentsInAWhenCountAndRecordTheBouncesWithEveryIntegrator) {
  auto m = testutil::compile_source("counting_ball", kCountingBall);
  ASSERT_TRUE(m);
  const int n = output_column(*m, "n"), tl = output_column(*m, "t_last"),
            vi = output_column(*m, "v_impact"), v = output_column(*m, "v");
  const double g = 9.81, e = 0.8, t1 = std::sqrt(2.0 / g);
  std::vector<double> t_impact{t1}, v_impact{g * t1};
  for (int k = 1; k < 4; ++k) {
    v_impact.push_back(e * v_impact.back());
    t_impact.push_back(t_impact.back() + 2.0 * v_impact.back() / g);
  }
  for (rt::SolverKind kind : kAll) {
    SCOPED_TRACE(std::string(rt::solver_name(kind)));
    const testutil::Run r = testutil::simulate(*m, options(kind, 2.5));
    ASSERT_EQ(r.status, rt::SolveStatus::Finished);
    EXPECT_EQ(col(r, 0, n), 0.0);  // the start values
    EXPECT_EQ(col(r, 0, tl), -1.0);
    EXPECT_EQ(col(r, 0, vi), 0.0);
    const std::vector<size_t> at = event_rows(r);
    ASSERT_EQ(at.size(), 4u);
    for (size_t k = 0; k < at.size(); ++k) {
      // before the event the discrete values are those of the previous one, after it the new
      EXPECT_EQ(col(r, at[k], n), static_cast<double>(k));
      EXPECT_EQ(col(r, at[k] + 1, n), static_cast<double>(k + 1));
      EXPECT_NEAR(col(r, at[k] + 1, tl), t_impact[k], 1e-10);
      EXPECT_EQ(col(r, at[k] + 1, tl), r.t[at[k]]);
      // the right sides read the values before the event: -v before the reinit
      EXPECT_EQ(col(r, at[k] + 1, vi), -col(r, at[k], v));
      EXPECT_NEAR(col(r, at[k] + 1, vi), v_impact[k], 1e-9);
    }
    EXPECT_EQ(col(r, r.rows.size() - 1, n), 4.0);
  }
}

// A proportional controller sampled every T with a zero-order hold on the plant dx/dt = -a x + u:
// at t_k = k T, x_{k+1} = (Phi - Gamma K) x_k with Phi = exp(-a T), Gamma = (1 - Phi) / a.
TEST(Discrete, ASampledControllerFollowsItsExactDiscretisation) {
  auto m = testutil::compile_source("sampled", R"mbs(
model Sampled
  parameter Real a = 1, K = 2, T = 0.1;
  Real x(start = 1, fixed = true);
  discrete Real u "the control, held between samples";
  Integer k "samples taken";
equation
  der(x) = -a * x + u;
  when initial() then
    k = 0;
    u = -K * x;
  elsewhen time >= (pre(k) + 1) * T then
    k = pre(k) + 1;
    u = -K * x;
  end when;
end Sampled;
)mbs");
  ASSERT_TRUE(m);
  const int x = output_column(*m, "x"), u = output_column(*m, "u"), k = output_column(*m, "k");
  const double a = 1, K = 2, T = 0.1, phi = std::exp(-a * T), gamma = (1 - phi) / a;
  for (rt::SolverKind kind : kAll) {
    SCOPED_TRACE(std::string(rt::solver_name(kind)));
    const testutil::Run r = testutil::simulate(*m, options(kind, 1.05));
    ASSERT_EQ(r.status, rt::SolveStatus::Finished);
    // the start: initial() fired, u = -K x0
    EXPECT_EQ(col(r, 0, u), -K);
    EXPECT_EQ(col(r, 0, k), 0.0);
    const std::vector<size_t> at = event_rows(r);
    ASSERT_EQ(at.size(), 10u);
    double xk = 1.0;
    const double tol = implicit(kind) ? 1e-6 : 1e-9;
    for (size_t s = 0; s < at.size(); ++s) {
      xk = (phi - gamma * K) * xk;
      const size_t after = at[s] + 1;
      EXPECT_NEAR(r.t[after], static_cast<double>(s + 1) * T, 1e-10);
      EXPECT_EQ(col(r, after, k), static_cast<double>(s + 1));
      EXPECT_NEAR(col(r, after, x), xk, tol);
      EXPECT_NEAR(col(r, after, u), -K * col(r, after, x), 1e-14);
      EXPECT_EQ(col(r, at[s], u), s == 0 ? -K : col(r, at[s - 1] + 1, u));  // held
    }
  }
}

// sample(t0, T) fires at t0 + i T for every i >= 0 (one at the start at the start, before the
// first row): the controller above written with sample against the same recursion, with every
// integrator; a second clock with an offset counts its own instants, and 200 instants of a long
// run keep their times exact (each is computed from t0 and T, so nothing drifts).
TEST(Discrete, SampleFiresAtEveryInstantOfItsClockWithEveryIntegrator) {
  auto m = testutil::compile_source("sample", R"mbs(
model Sampled
  parameter Real a = 1, K = 2, T = 0.1, t1 = 0.05, T1 = 0.3;
  Real x(start = 1, fixed = true);
  discrete Real u "the control, held between samples";
  Integer k "samples taken";
  Integer j "instants of the second clock";
  discrete Real tj(start = -1) "the time of its last instant";
equation
  der(x) = -a * x + u;
  when sample(0, T) then
    k = pre(k) + 1;
    u = -K * x;
  end when;
  when sample(t1, T1) then
    j = pre(j) + 1;
    tj = time;
  end when;
end Sampled;
)mbs");
  ASSERT_TRUE(m);
  const int x = output_column(*m, "x"), u = output_column(*m, "u"), k = output_column(*m, "k");
  const int j = output_column(*m, "j"), tj = output_column(*m, "tj");
  EXPECT_EQ(m->output_names.size(), 5u) << "the counters of sample() have no columns";
  const double a = 1, K = 2, T = 0.1, phi = std::exp(-a * T), gamma = (1 - phi) / a;
  for (rt::SolverKind kind : kAll) {
    SCOPED_TRACE(std::string(rt::solver_name(kind)));
    const testutil::Run r = testutil::simulate(*m, options(kind, 1.05));
    ASSERT_EQ(r.status, rt::SolveStatus::Finished);
    // the instant t = 0 fired at the start, u = -K x0
    EXPECT_EQ(col(r, 0, u), -K);
    EXPECT_EQ(col(r, 0, k), 1.0);
    EXPECT_EQ(col(r, 0, j), 0.0);
    // instants 0.1 ... 1.0 of the first clock, 0.05, 0.35, 0.65, 0.95 of the second: 14 events
    const std::vector<size_t> at = event_rows(r);
    ASSERT_EQ(at.size(), 14u);
    double xk = 1.0;
    size_t s = 0, s1 = 0;
    const double tol = implicit(kind) ? 1e-6 : 1e-9;
    for (size_t e : at) {
      const size_t after = e + 1;
      if (col(r, after, k) != col(r, e, k)) {
        ++s;
        xk = (phi - gamma * K) * xk;
        EXPECT_NEAR(r.t[after], static_cast<double>(s) * T, 1e-10);
        EXPECT_EQ(col(r, after, k), static_cast<double>(s + 1));
        EXPECT_NEAR(col(r, after, x), xk, tol);
        EXPECT_NEAR(col(r, after, u), -K * col(r, after, x), 1e-14);
      } else {
        ++s1;
        EXPECT_NEAR(r.t[after], 0.05 + static_cast<double>(s1 - 1) * 0.3, 1e-10);
        EXPECT_EQ(col(r, after, j), static_cast<double>(s1));
        EXPECT_EQ(col(r, after, tj), r.t[after]);
        EXPECT_EQ(col(r, after, u), col(r, e, u));  // the other clock does not fire
      }
    }
    EXPECT_EQ(s, 10u);
    EXPECT_EQ(s1, 4u);
  }
  // a long run: the 200th instant of the first clock at 20 s, to the event tolerance
  const testutil::Run r = testutil::simulate(*m, options(rt::SolverKind::Dopri5, 20.01, 0.01));
  ASSERT_EQ(r.status, rt::SolveStatus::Finished);
  const std::vector<size_t> at = event_rows(r);
  size_t last = 0;
  for (size_t e : at)
    if (col(r, e + 1, k) != col(r, e, k)) last = e + 1;
  EXPECT_EQ(col(r, last, k), 201.0);
  EXPECT_NEAR(r.t[last], 20.0, 1e-10);
}

// A clock whose first instants lie before the start of the run skips them: an instant within
// 1e-9 T of the start fires at the start, the others come at their times. The start is the
// model's time (an FMU's startTime).
TEST(Discrete, SampleSkipsTheInstantsBeforeTheStart) {
  auto m = testutil::compile_source("sample_late", R"mbs(
model Late
  parameter Real T = 0.25;
  Real x(start = 0, fixed = true);
  Integer k;
  discrete Real t_first(start = -1);
equation
  der(x) = 1;
  when sample(0, T) then
    k = pre(k) + 1;
    t_first = if pre(k) == 0 then time else pre(t_first);
  end when;
end Late;
)mbs");
  ASSERT_TRUE(m);
  const int k = output_column(*m, "k"), tf = output_column(*m, "t_first");
  for (const double t0 : {0.6, 0.75}) {
    SCOPED_TRACE(t0);
    rt::CompiledModel late = *m;  // the run starts at the model's time
    late.v0[static_cast<size_t>(late.slot_time)] = t0;
    const testutil::Run r = testutil::simulate(late, options(rt::SolverKind::Rk4, 1.6));
    ASSERT_EQ(r.status, rt::SolveStatus::Finished);
    // instants 0.75, 1.0, 1.25, 1.5: at the start when t0 = 0.75
    EXPECT_EQ(col(r, 0, k), t0 == 0.75 ? 1.0 : 0.0);
    EXPECT_EQ(col(r, r.t.size() - 1, k), 4.0);
    EXPECT_NEAR(col(r, r.t.size() - 1, tf), 0.75, 1e-10);
    EXPECT_EQ(event_rows(r).size(), t0 == 0.75 ? 3u : 4u);
  }
}

// floor, ceil, integer, div, mod and rem of values that vary in time change at events, as in
// Modelica: on x = t^2/2, floor(x) steps at t_k = sqrt(2k), every integrator stops there (to
// 1e-10), and y = integral of floor(x) is exact between them: y(T) = sum_k (T - t_k). ceil(-x),
// integer(x) and rem(x, 1) step at the same instants, div(-x - 0.5, 1) at x = k - 1/2, and
// mod(time, 0.3) at multiples of 0.3. Inside noEvent(...) floor is the plain function: no
// events.
TEST(Discrete, FloorAndItsRelativesChangeAtEventsWithEveryIntegrator) {
  auto m = testutil::compile_source("floors", R"mbs(
model Floors
  Real x(start = 0, fixed = true), v(start = 0, fixed = true);
  Real y(start = 0, fixed = true) "integral of floor(x)";
  Real yq(start = 0, fixed = true) "integral of noEvent(floor(x + 0.25))";
  Real f, c, i, d, r, s;
equation
  der(x) = v;
  der(v) = 1;
  f = floor(x);
  c = ceil(-x);
  i = integer(x);
  d = div(-x - 0.5, 1);
  r = rem(x, 1);
  s = mod(time, 0.3);
  der(y) = f;
  der(yq) = noEvent(floor(x + 0.25));
end Floors;
)mbs");
  ASSERT_TRUE(m);
  const int f = output_column(*m, "f"), c = output_column(*m, "c"), i = output_column(*m, "i");
  const int d = output_column(*m, "d"), r = output_column(*m, "r"), s = output_column(*m, "s");
  const int y = output_column(*m, "y"), yq = output_column(*m, "yq"), x = output_column(*m, "x");
  const double T = 2.9;  // t_k = sqrt(2k): 1.414, 2, 2.449, 2.828; time = 0.3 k: 9 instants
  double y_exact = 0.0;
  for (int k = 1; std::sqrt(2.0 * k) < T; ++k) y_exact += T - std::sqrt(2.0 * k);
  double yq_exact = 0.0;  // floor(x + 1/4) steps at t = sqrt(2k - 1/2)
  for (int k = 1; std::sqrt(2.0 * k - 0.5) < T; ++k) yq_exact += T - std::sqrt(2.0 * k - 0.5);
  for (rt::SolverKind kind : kAll) {
    SCOPED_TRACE(std::string(rt::solver_name(kind)));
    const testutil::Run run = testutil::simulate(*m, options(kind, T));
    ASSERT_EQ(run.status, rt::SolveStatus::Finished);
    const std::vector<size_t> at = event_rows(run);
    ASSERT_EQ(at.size(), 4u + 9u + 4u);
    size_t k = 0, j = 0, jd = 0;
    for (size_t e : at) {
      const size_t after = e + 1;
      if (col(run, after, f) != col(run, e, f)) {
        ++k;
        EXPECT_NEAR(run.t[after], std::sqrt(2.0 * static_cast<double>(k)), 1e-10);
        const double kk = static_cast<double>(k);
        EXPECT_EQ(col(run, after, f), kk);
        EXPECT_EQ(col(run, after, i), kk);
        EXPECT_EQ(col(run, after, c), -kk);
        EXPECT_NEAR(col(run, after, r), col(run, after, x) - kk, 1e-12);
        EXPECT_EQ(col(run, e, f), kk - 1.0);  // before
      } else if (col(run, after, s) < col(run, e, s)) {
        ++j;
        EXPECT_NEAR(run.t[after], 0.3 * static_cast<double>(j), 1e-10);
        EXPECT_NEAR(col(run, e, s), 0.3, 1e-9);  // the sawtooth just before its jump
        EXPECT_NEAR(col(run, after, s), 0.0, 1e-9);
      } else {
        ++jd;  // div's instants, checked below
      }
    }
    EXPECT_EQ(k, 4u);
    EXPECT_EQ(j, 9u);
    EXPECT_EQ(jd, 4u);
    // div(-x - 0.5, 1) = -floor(x + 0.5): it steps where x = k - 1/2, t = sqrt(2k - 1)
    for (int h = 1; h <= 4; ++h) {
      const double th = std::sqrt(2.0 * h - 1.0);
      size_t row = 0;
      while (row + 1 < run.t.size() && run.t[row + 1] < th - 1e-9) ++row;
      EXPECT_EQ(col(run, row, d), -static_cast<double>(h - 1)) << th;
      EXPECT_EQ(col(run, row + 2, d), -static_cast<double>(h)) << th;
    }
    const std::vector<double>& last = run.rows.back();
    EXPECT_NEAR(last[static_cast<size_t>(y)], y_exact, 1e-9);
    // noEvent: no events at x = k - 1/4 (the counts above), the steps across them integrate the
    // jump as it comes: close, not exact
    EXPECT_NEAR(last[static_cast<size_t>(yq)], yq_exact, 1e-2);
  }
}

// Event iteration: the bounce toggles b; change(b) and edge(b) are seen in the next iteration of
// the same event, so m counts every bounce and c every second one (the rising edges of b).
TEST(Discrete, EdgeAndChangeFireInTheEventIteration) {
  auto m = testutil::compile_source("edges", R"mbs(
model Edges
  parameter Real e = 0.8, g = 9.81;
  Real h(start = 1, fixed = true), v(start = 0, fixed = true);
  Boolean b(start = false);
  Integer m, c;
  Integer big "bounces that leave faster than 3 m/s";
equation
  der(h) = v;
  der(v) = -g;
  when h < 0 then
    reinit(v, -e * pre(v));
    b = not pre(b);
  end when;
  when change(b) then
    m = pre(m) + 1;
    if v > 3 then
      big = pre(big) + 1;
    end if;
  end when;
  when edge(b) then
    c = pre(c) + 1;
  end when;
end Edges;
)mbs");
  ASSERT_TRUE(m);
  const int b = output_column(*m, "b"), mc = output_column(*m, "m"), c = output_column(*m, "c"),
            big = output_column(*m, "big");
  // speeds after the bounces (the iteration sees v after the reinit): 3.54, 2.83, 2.27, 1.81
  const double v1 = std::sqrt(2.0 * 9.81);
  int big_expected = 0;
  for (int k = 1; k <= 4; ++k) big_expected += v1 * std::pow(0.8, k) > 3.0 ? 1 : 0;
  for (rt::SolverKind kind : {rt::SolverKind::GenAlpha, rt::SolverKind::Dopri5}) {
    SCOPED_TRACE(std::string(rt::solver_name(kind)));
    const testutil::Run r = testutil::simulate(*m, options(kind, 2.5));
    ASSERT_EQ(r.status, rt::SolveStatus::Finished);
    const std::vector<size_t> at = event_rows(r);
    ASSERT_EQ(at.size(), 4u);  // the iterations are part of one event each
    EXPECT_EQ(r.stats.events, 4);
    for (size_t k = 0; k < at.size(); ++k) {
      const size_t after = at[k] + 1;
      EXPECT_EQ(col(r, after, b), (k % 2 == 0) ? 1.0 : 0.0);
      EXPECT_EQ(col(r, after, mc), static_cast<double>(k + 1));
      EXPECT_EQ(col(r, after, c), static_cast<double>(k / 2 + 1));
    }
    EXPECT_EQ(col(r, r.rows.size() - 1, big), static_cast<double>(big_expected));
  }
}

// initial() records the energy at the start, terminal() at the end: an undamped oscillator keeps
// it (to the accuracy of the method), and both equal the closed form from the row they are in.
TEST(Discrete, InitialAndTerminalRecordTheEnergyAtTheStartAndTheEnd) {
  auto m = testutil::compile_source("energy", R"mbs(
model Energy
  parameter Real m = 2, k = 50;
  Real x(start = 0.1, fixed = true), v(start = 0.3, fixed = true);
  discrete Real e0(start = -1), e1(start = -1);
equation
  der(x) = v;
  m * der(v) = -k * x;
  when initial() then
    e0 = 0.5 * m * v^2 + 0.5 * k * x^2;
  end when;
  when terminal() then
    e1 = 0.5 * m * v^2 + 0.5 * k * x^2;
  end when;
end Energy;
)mbs");
  ASSERT_TRUE(m);
  const int x = output_column(*m, "x"), v = output_column(*m, "v"), e0 = output_column(*m, "e0"),
            e1 = output_column(*m, "e1");
  const double exact = 0.5 * 2 * 0.09 + 0.5 * 50 * 0.01;
  for (rt::SolverKind kind : {rt::SolverKind::Trapezoidal, rt::SolverKind::Rk4}) {
    SCOPED_TRACE(std::string(rt::solver_name(kind)));
    const testutil::Run r = testutil::simulate(*m, options(kind, 2.0));
    ASSERT_EQ(r.status, rt::SolveStatus::Finished);
    EXPECT_EQ(r.stats.events, 2);  // the start's and the end's
    ASSERT_GE(r.rows.size(), 3u);
    EXPECT_DOUBLE_EQ(col(r, 0, e0), exact);
    EXPECT_EQ(col(r, 0, e1), -1.0);
    const size_t last = r.rows.size() - 1;
    // the end: the row before terminal() and the one after it
    EXPECT_EQ(r.t[last], 2.0);
    EXPECT_EQ(r.t[last - 1], 2.0);
    EXPECT_EQ(col(r, last - 1, e1), -1.0);
    const double xe = col(r, last, x), ve = col(r, last, v);
    EXPECT_DOUBLE_EQ(col(r, last, e1), 0.5 * 2 * ve * ve + 0.5 * 50 * xe * xe);
    EXPECT_NEAR(col(r, last, e1), exact, 1e-8);  // both methods conserve it to O(h^4)
    EXPECT_EQ(col(r, last, e0), col(r, 0, e0));
  }
}

TEST(Discrete, AnEventIterationThatDoesNotEndIsReported) {
  auto m = testutil::compile_source("no_end", R"mbs(
model NoEnd
  Real h(start = 1, fixed = true), v(start = 0, fixed = true);
  Integer k, n;
equation
  der(h) = v;
  der(v) = -9.81;
  when h < 0 then
    k = pre(k) + 1;
  end when;
  when change(k) or change(n) then
    n = pre(n) + 1;
  end when;
end NoEnd;
)mbs");
  ASSERT_TRUE(m);
  auto solver = rt::make_integrator(m, options(rt::SolverKind::GenAlpha, 1.0));
  EXPECT_EQ(solver->run(nullptr), rt::SolveStatus::Failed);
  ASSERT_NE(solver->failure(), nullptr);
  const std::string msg = solver->failure()->message;
  EXPECT_NE(msg.find("event iteration did not end"), std::string::npos) << msg;
  EXPECT_NE(msg.find("change(k) or change(n)"), std::string::npos) << msg;
  EXPECT_NEAR(solver->time(), std::sqrt(2.0 / 9.81), 1e-9);
  // the event was located: the message says so and gives the one advice that is true (pre),
  // none about the step
  EXPECT_EQ(solver->failure()->kind, rt::FailureKind::EventNotSettled);
  EXPECT_EQ(msg.rfind("error: gen-alpha: the event iteration did not end at t = ", 0), 0u) << msg;
  EXPECT_EQ(msg.find("could not be located"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("smaller --step"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("help:"), msg.rfind("help:")) << "one help line\n" << msg;
}

TEST(Discrete, CachedModelKeepsItsDiscreteVariables) {
  CompileOptions co;
  co.cache_dir = testutil::temp_path("discrete_cache");
  auto first = testutil::compile_source("ball_counted", kCountingBall, co);
  auto second = testutil::compile_source("ball_counted", kCountingBall, co);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(second->reinit_slot, first->reinit_slot);
  EXPECT_EQ(second->pre_slot, first->pre_slot);
  EXPECT_EQ(second->pre_value_slot, first->pre_value_slot);
  EXPECT_EQ(second->pre_slot.size(), 1u);  // pre(n); pre(v) of the state v is v
  const testutil::Run a = testutil::simulate(*first, options(rt::SolverKind::Rk4, 2.0));
  const testutil::Run b = testutil::simulate(*second, options(rt::SolverKind::Rk4, 2.0));
  EXPECT_EQ(a.t, b.t);
  EXPECT_EQ(a.rows, b.rows);
}

}  // namespace
}  // namespace mbs
