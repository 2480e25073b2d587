// User-defined functions (docs/language.md, "Functions") against independent references: values
// computed by hand, a chain whose force law is a function against the same chain with the law
// written out in its equations, and the derivative of an inlined call against the closed form.
// (The Newton matrix through function calls is checked against finite differences by
// test_model_kernels on examples/function_spring_chain.mbs.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "alloc_counter.h"
#include "compiler/driver/Compile.h"
#include "mech_test_util.h"
#include "runtime/solvers/Integrator.h"

namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = mbs::testutil::temp_path(name);
  std::ofstream(path) << text;
  return path;
}

mbs::CompileResult compile_text(const std::string& name, const std::string& text) {
  mbs::CompileOptions o;
  o.file = write_temp(name, text);
  std::ostringstream emit, diag;
  auto r = mbs::compile(o, emit, diag);
  EXPECT_TRUE(r.ok) << diag.str();
  return r;
}

using SimRun = mbs::testutil::Run;
using mbs::testutil::output_column;

SimRun simulate(const mbs::rt::CompiledModel& m, double t_end, double h) {
  mbs::rt::SolverOptions o;
  o.t_end = t_end;
  o.h = h;
  return mbs::testutil::simulate(m, o);
}

double parameter(const mbs::rt::CompiledModel& m, const std::string& name) {
  for (size_t i = 0; i < m.parameters.size(); ++i)
    if (m.parameters[i].name == name) return m.v0[m.parameter_slot[i]];
  ADD_FAILURE() << "no parameter " << name;
  return 0;
}

const char* kLibrary = R"mbs(
package P
  constant Real scale = 2;

  function poly "Horner's scheme: c[1] x^(n-1) + ... + c[n]"
    input Real x;
    input Real c[:];
    output Real y;
  algorithm
    y := 0;
    for i in 1:size(c, 1) loop
      y := y*x + c[i];
    end for;
  end poly;

  function isqrt "the largest r with r^2 <= n, by a while loop"
    input Integer n;
    output Integer r;
  algorithm
    r := 0;
    while (r + 1)*(r + 1) <= n loop
      r := r + 1;
    end while;
  end isqrt;

  function clamp "early return, defaults, an if-expression"
    input Real x;
    input Real lo = -1;
    input Real hi = 1;
    output Real y;
  algorithm
    if x < lo then
      y := lo;
      return;
    end if;
    y := if x > hi then hi else x;
  end clamp;

  function stats "three outputs; the last an array sized by the input"
    input Real a[:];
    output Real s;
    output Real mx;
    output Real r[size(a, 1)];
  algorithm
    s := sum(a);
    mx := max(a);
    for i in 1:size(a, 1) loop
      r[size(a, 1) + 1 - i] := scale*a[i];
    end for;
  end stats;

  function third "(s, m, r) := stats(a): m + r[1]"
    input Real a[:];
    output Real m;
  protected
    Real s;
    Real r[size(a, 1)];
  algorithm
    (s, m, r) := stats(a);
    m := m + r[1];
  end third;

  function twice
    input Real a[:];
    output Real b[size(a, 1)];
  algorithm
    b := 2*a;
  end twice;

  function ramp "piecewise: 0 below 0, x^2 up to 1, 2 x - 1 above (C1)"
    input Real x;
    output Real y;
  algorithm
    if x <= 0 then
      y := 0;
    elseif x <= 1 then
      y := x^2;
    else
      y := 2*x - 1;
    end if;
  end ramp;
end P;
)mbs";

// The flattener's unrolling, seen in --emit=flat: each assignment rebinds a name, the if on a
// variable becomes one if-expression over the two versions of y, the loop adds x + 2x + 3x after
// it, and the call with constant arguments folds to 2*2^2 + 1 + 6*2 = 21.
TEST(Functions, InlinedExpressionInTheFlatModel) {
  mbs::CompileOptions o;
  o.file = write_temp("flat.mbs", R"mbs(
function f
  input Real x;
  input Real a = 2;
  output Real y;
protected
  Real t;
algorithm
  t := x*x;
  y := a*t;
  if x > 1 then
    y := y + 1;
  end if;
  for i in 1:3 loop
    y := y + i*x;
  end for;
end f;

model M
  parameter Real p = 3;
  Real x(start = 1), y;
equation
  der(x) = -x;
  y = f(x, a = p) + f(2);
end M;
)mbs");
  o.emit = "flat";
  std::ostringstream emit, diag;
  auto r = mbs::compile(o, emit, diag);
  ASSERT_TRUE(r.ok) << diag.str();
  EXPECT_NE(emit.str().find("  0 = -6*x + y - (if x > 1 then p*x^2 + 1 else p*x^2) - 21  @24:3\n"),
            std::string::npos)
      << emit.str();
}

// Issue 36: a function filling an array output element by element compiled in 0.12 s for 16,000
// elements and more than 2 min for 256,000: each element's assignment copied the whole array.
// Measured without a clock: the bytes allocated while flattening a model that fills n elements,
// for n and 2n. Linear work doubles them; the copies made them four times as many.
TEST(Functions, FillingAnArrayIsLinearInItsSize) {
  const auto bytes_for = [](int n) {
    mbs::CompileOptions o;
    std::string text = R"mbs(
function ramp
  input Real t;
  input Integer n;
  output Real y[n];
algorithm
  for i in 1:n loop
    y[i] := i*t;
  end for;
end ramp;
model Fill
  Real y[{0}];
  Real x(start = 1);
equation
  y = ramp(time, {0});
  der(x) = -y[1]*x;
end Fill;
)mbs";
    for (size_t at; (at = text.find("{0}")) != std::string::npos;)
      text.replace(at, 3, std::to_string(n));
    o.file = write_temp("fill.mbs", text);
    o.emit = "flat";
    std::ostringstream emit, diag;
    mbs::testalloc::g_bytes = 0;
    mbs::testalloc::g_counting = true;
    const auto r = mbs::compile(o, emit, diag);
    mbs::testalloc::g_counting = false;
    EXPECT_TRUE(r.ok) << diag.str();
    return static_cast<double>(mbs::testalloc::g_bytes.load());
  };
  const double small = bytes_for(3000), large = bytes_for(6000);
  std::printf("[ measure  ] bytes allocated: %.3g for 3000 elements, %.3g for 6000 (ratio %.2f)\n",
              small, large, large / small);
  EXPECT_LT(large / small, 2.6);
}

TEST(Functions, ValuesAgainstHandComputedOnes) {
  auto r = compile_text("values.mbs", std::string(kLibrary) + R"mbs(
model Values
  import P.*;
  parameter Real p1 = poly(2, {1, 2, 3}) "(1*2 + 2)*2 + 3 = 11";
  parameter Integer p2 = isqrt(50) "7";
  parameter Real p3 = clamp(5) + clamp(-5, lo = -2) + clamp(0.5, hi = 0.2) + clamp(hi = 3, x = 0.25)
    "1 - 2 + 0.2 + 0.25";
  parameter Real p4 = P.stats({1, 5, 2}) "the first output: 8";
  parameter Real p5 = third({1, 5, 2}) "5 + 2*2 = 9";
  Real w[3] "an array output in an array equation";
  Real q(start = -1) "q = t - 1";
  Real g "ramp(q)";
  Real gd "its time derivative, through the inlined if";
equation
  w = twice({1, 2, 3}*time);
  der(q) = 1;
  g = ramp(q);
  gd = der(ramp(q));
end Values;
)mbs");
  ASSERT_TRUE(r.model);
  const auto& m = *r.model;
  EXPECT_EQ(parameter(m, "p1"), 11.0);
  EXPECT_EQ(parameter(m, "p2"), 7.0);
  EXPECT_DOUBLE_EQ(parameter(m, "p3"), 1 - 2 + 0.2 + 0.25);
  EXPECT_EQ(parameter(m, "p4"), 8.0);
  EXPECT_EQ(parameter(m, "p5"), 9.0);
  SimRun run = simulate(m, 3.0, 1e-3);
  ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished);
  for (size_t i = 0; i < run.t.size(); i += 50) {
    double t = run.t[i], q = t - 1;
    const auto& row = run.rows[i];
    for (int k = 1; k <= 3; ++k)
      EXPECT_NEAR(row[output_column(m, "w[" + std::to_string(k) + "]")], 2 * k * t, 1e-12);
    ASSERT_NEAR(row[output_column(m, "q")], q, 1e-9);
    double g = q <= 0 ? 0 : q <= 1 ? q * q : 2 * q - 1;
    double gd = q <= 0 ? 0 : q <= 1 ? 2 * q : 2;
    EXPECT_NEAR(row[output_column(m, "g")], g, 1e-8) << "t = " << t;
    EXPECT_NEAR(row[output_column(m, "gd")], gd, 1e-8) << "t = " << t;
  }
}

TEST(Functions, OutputListsInEquations) {
  auto r = compile_text("outputs.mbs", std::string(kLibrary) + R"mbs(
model Outputs
  Real y(start = 1) "exp(-t)";
  Real s, mx, r[3], b;
equation
  der(y) = -y;
  (s, mx, r) = P.stats({1, 5, 2}*y);
  (, b) = P.stats({y, 2*y});
end Outputs;
)mbs");
  ASSERT_TRUE(r.model);
  const auto& m = *r.model;
  SimRun run = simulate(m, 1.0, 1e-3);
  ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished);
  for (size_t i = 0; i < run.t.size(); i += 100) {
    const auto& row = run.rows[i];
    double y = row[output_column(m, "y")];
    EXPECT_NEAR(y, std::exp(-run.t[i]), 1e-5);
    EXPECT_NEAR(row[output_column(m, "s")], 8 * y, 1e-12);
    EXPECT_NEAR(row[output_column(m, "mx")], 5 * y, 1e-12);
    EXPECT_NEAR(row[output_column(m, "r[1]")], 4 * y, 1e-12);
    EXPECT_NEAR(row[output_column(m, "r[2]")], 10 * y, 1e-12);
    EXPECT_NEAR(row[output_column(m, "r[3]")], 2 * y, 1e-12);
    EXPECT_NEAR(row[output_column(m, "b")], 2 * y, 1e-12);
  }
}

// An early return under a condition on the state: the paths that returned keep their values
// (select on the return condition), and der() of the call differentiates each path.
TEST(Functions, EarlyReturnOnAStateCondition) {
  auto r = compile_text("sat.mbs", R"mbs(
model Sat
  function sat "saturation with two early returns"
    input Real x;
    input Real lim;
    output Real y;
  algorithm
    if x > lim then
      y := lim;
      return;
    elseif x < -lim then
      y := -lim;
      return;
    end if;
    y := x;
  end sat;
  model Holder "a function of the enclosing model, called in a modifier"
    parameter Real lim;
  end Holder;
  Holder h(lim = sat(2, 0.5));
  Real x(start = 1), v, y, yd;
equation
  der(x) = v;
  der(v) = -10*x;
  y = sat(x, h.lim);
  yd = der(sat(x, h.lim));
end Sat;
)mbs");
  ASSERT_TRUE(r.model);
  const auto& m = *r.model;
  EXPECT_EQ(parameter(m, "h.lim"), 0.5);
  SimRun run = simulate(m, 2.0, 1e-3);
  ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished);
  int inside = 0;
  for (const auto& row : run.rows) {
    double x = row[output_column(m, "x")], v = row[output_column(m, "v")];
    double y = x > 0.5 ? 0.5 : x < -0.5 ? -0.5 : x;
    inside += std::fabs(x) < 0.5;
    ASSERT_EQ(row[output_column(m, "y")], y);
    ASSERT_EQ(row[output_column(m, "yd")], std::fabs(x) > 0.5 ? 0.0 : v);
  }
  EXPECT_GT(inside, 100);  // every path was taken
  EXPECT_LT(inside, static_cast<int>(run.rows.size()) - 100);
}

// The example's chain with its force law written out in the equations: the same numbers, to
// rounding (the inlined law and the written one are different but equal expressions, so the
// Newton iterates differ in the last bits and the runs agree to about the Newton tolerance:
// 2e-10 relative over 5000 steps when this was written).
TEST(Functions, ChainWithAFunctionForceLawEqualsTheChainWrittenOut) {
  mbs::CompileOptions o;
  o.file = std::string(MBS_SOURCE_DIR) + "/examples/function_spring_chain.mbs";
  std::ostringstream emit, diag;
  auto a = mbs::compile(o, emit, diag);
  ASSERT_TRUE(a.ok) << diag.str();
  auto b = compile_text("chain_written.mbs", R"mbs(
model FunctionSpringChain
  parameter Integer n = 4;
  parameter Real m = 1, k = 100, k3 = 5000, d = 0.5, d0 = 0.1;
  parameter Real f0 = 0.2*k + k3*(0.2 - d0)^3;
  Real x[n](start = {0.2, 0.35, 0.45, 0.5});
  Real v[n];
  Real T[n];
  Real E;
protected
  Real e[n] "elongations";
equation
  der(x) = v;
  e[1] = x[1];
  e[2] = x[2] - x[1];
  e[3] = x[3] - x[2];
  e[4] = x[4] - x[3];
  T[1] = k*e[1] + (if abs(e[1]) > d0 then k3*(e[1] - sign(e[1])*d0)^3 else 0) + d*v[1];
  T[2] = k*e[2] + (if abs(e[2]) > d0 then k3*(e[2] - sign(e[2])*d0)^3 else 0) + d*(v[2] - v[1]);
  T[3] = k*e[3] + (if abs(e[3]) > d0 then k3*(e[3] - sign(e[3])*d0)^3 else 0) + d*(v[3] - v[2]);
  T[4] = k*e[4] + (if abs(e[4]) > d0 then k3*(e[4] - sign(e[4])*d0)^3 else 0) + d*(v[4] - v[3]);
  m*der(v[1]) = -T[1] + T[2];
  m*der(v[2]) = -T[2] + T[3];
  m*der(v[3]) = -T[3] + T[4];
  m*der(v[4]) = -T[4];
  E = 0.5*m*(v[1]^2 + v[2]^2 + v[3]^2 + v[4]^2)
      + 0.5*k*(e[1]^2 + e[2]^2 + e[3]^2 + e[4]^2)
      + (if abs(e[1]) > d0 then 0.25*k3*(e[1] - sign(e[1])*d0)^4 else 0)
      + (if abs(e[2]) > d0 then 0.25*k3*(e[2] - sign(e[2])*d0)^4 else 0)
      + (if abs(e[3]) > d0 then 0.25*k3*(e[3] - sign(e[3])*d0)^4 else 0)
      + (if abs(e[4]) > d0 then 0.25*k3*(e[4] - sign(e[4])*d0)^4 else 0);
end FunctionSpringChain;
)mbs");
  ASSERT_TRUE(a.model);
  ASSERT_TRUE(b.model);
  EXPECT_EQ(parameter(*a.model, "f0"), 25.0);
  EXPECT_EQ(parameter(*b.model, "f0"), 25.0);
  SimRun ra = simulate(*a.model, 5.0, 1e-3);
  SimRun rb = simulate(*b.model, 5.0, 1e-3);
  ASSERT_EQ(ra.status, mbs::rt::SolveStatus::Finished);
  ASSERT_EQ(rb.status, mbs::rt::SolveStatus::Finished);
  ASSERT_EQ(ra.rows.size(), rb.rows.size());
  std::vector<std::string> names = {"E"};
  for (int i = 1; i <= 4; ++i)
    for (const char* v : {"x", "v", "T"})
      names.push_back(std::string(v) + "[" + std::to_string(i) + "]");
  double worst = 0;
  for (const auto& name : names) {
    int ca = output_column(*a.model, name), cb = output_column(*b.model, name);
    for (size_t i = 0; i < ra.rows.size(); ++i) {
      double x = ra.rows[i][ca], y = rb.rows[i][cb];
      worst = std::max(worst, std::fabs(x - y) / (1 + std::fabs(y)));
      ASSERT_NEAR(x, y, 1e-8 * (1 + std::fabs(y))) << name << " row " << i;
    }
  }
  std::ostringstream worst_text;
  worst_text << worst;
  RecordProperty("worst_relative_difference", worst_text.str());
  // not trivial: E(0) by hand, and the dampers take energy out
  const int ea = output_column(*a.model, "E");
  EXPECT_NEAR(ra.rows.front()[ea],
              0.5 * 100 * (0.04 + 0.0225 + 0.01 + 0.0025) + 0.25 * 5000 * (1e-4 + 6.25e-6), 1e-12);
  EXPECT_LT(ra.rows.back()[ea], 0.8 * ra.rows.front()[ea]);
}

// Unrolled loops multiply; the flattener bounds the statements it executes, as it bounds
// comprehensions, instead of running for hours on 10^12 iterations.
TEST(Functions, UnrolledLoopsAreBoundedByTheInstanceLimit) {
  mbs::CompileOptions o;
  o.file = write_temp("loops.mbs", R"mbs(
function count
  input Integer n;
  output Integer c = 0;
algorithm
  for i in 1:n loop
    for j in 1:n loop
      c := c + 1;
    end for;
  end for;
end count;

model M
  parameter Integer small = count(30) "900 statements; count(900) runs 810000";
  parameter Integer big = count(900);
end M;
)mbs");
  o.max_instances = 1000;
  std::ostringstream emit, diag;
  auto r = mbs::compile(o, emit, diag);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(diag.str().find("executing the statements of functions more than 10000 times"),
            std::string::npos)
      << diag.str();
  EXPECT_EQ(diag.str().find("small"), std::string::npos) << diag.str();
  // the failed binding of big is not reported a second time as a cycle
  EXPECT_EQ(diag.str().find("depends on itself"), std::string::npos) << diag.str();
}

}  // namespace
