// The session API (compiler/driver/Session, runtime/session/Instance): parameters and start
// values set at run time give the same runs as a new compile with --set / --start (a second
// formulation), derived parameters follow, values the compiler used as numbers are recompiled,
// and bounds are checked.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <numbers>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/driver/Session.h"

namespace {

using mbs::Session;
using mbs::rt::SetError;

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = testing::TempDir() + std::to_string(getpid()) + "_" + name;
  std::ofstream(path) << text;
  return path;
}

const char* kOscillator = R"(
model Osc
  parameter Real m(min = 0) = 1;
  parameter Real k(min = 0) = 100;
  parameter Real zeta = 0;
  parameter Real d = 2*zeta*sqrt(k*m) "a derived parameter";
  parameter Real d2 = d + 0 "derived twice";
  parameter Real x0 = 0.1;
  Real x(start = x0);
  Real v(start = 0);
equation
  v = der(x);
  m*der(v) + d2*v + k*x = 0;
end Osc;
)";

struct Rows {
  std::vector<double> t;
  std::vector<std::vector<double>> y;
  int column(const mbs::rt::CompiledModel& m, const std::string& name) const {
    for (size_t i = 0; i < m.output_names.size(); ++i)
      if (m.output_names[i] == name) return static_cast<int>(i);
    return -1;
  }
};

Rows run(Session& s) {
  Rows r;
  auto res = s.simulate([&](double t, std::span<const double> out) {
    r.t.push_back(t);
    r.y.emplace_back(out.begin(), out.end());
    return 0;
  });
  EXPECT_TRUE(res.setup_error.empty()) << res.setup_error;
  EXPECT_EQ(res.status, mbs::rt::SolveStatus::Finished);
  return r;
}

mbs::CompileOptions options(const std::string& file) {
  mbs::CompileOptions o;
  o.file = file;
  return o;
}

void expect_same(const Rows& a, const Rows& b, double tol) {
  ASSERT_EQ(a.t.size(), b.t.size());
  for (size_t i = 0; i < a.t.size(); ++i) {
    ASSERT_EQ(a.y[i].size(), b.y[i].size());
    for (size_t j = 0; j < a.y[i].size(); ++j)
      ASSERT_NEAR(a.y[i][j], b.y[i][j], tol * (1 + std::fabs(b.y[i][j]))) << i << " " << j;
  }
}

TEST(Session, ParametersSetAtRunTimeGiveTheRunOfANewCompile) {
  const std::string file = write_temp("osc.mbs", kOscillator);
  std::ostringstream diag, emit;
  Session s(options(file), diag);
  ASSERT_TRUE(s.compile(emit)) << diag.str();
  const auto first = s.model();
  s.options().t_end = 1.0;
  s.options().h = 1e-3;
  s.set_parameter("k", 400);
  s.set_parameter("zeta", 0.05);
  s.set_parameter("x0", 0.2);  // the start value x follows its parameter
  EXPECT_FALSE(s.needs_compile());
  // the derived parameters follow, through a chain of two bindings
  EXPECT_NEAR(s.instance().parameter("d"), 2 * 0.05 * std::sqrt(400.0), 1e-14);
  EXPECT_NEAR(s.instance().parameter("d2"), 2 * 0.05 * std::sqrt(400.0), 1e-14);
  Rows runtime = run(s);
  EXPECT_EQ(s.model(), first) << "nothing was recompiled";

  mbs::CompileOptions o = options(file);
  o.overrides = {{"k", 400}, {"zeta", 0.05}, {"x0", 0.2}};
  Session fresh(o, diag);
  ASSERT_TRUE(fresh.compile(emit)) << diag.str();
  fresh.options() = s.options();
  Rows compiled = run(fresh);
  expect_same(runtime, compiled, 1e-12);

  // and against the closed form of the damped oscillator x(t) = x0 e^{-zeta w t} (cos + ...)
  const double w = 20, zeta = 0.05, wd = w * std::sqrt(1 - zeta * zeta);
  const int x = runtime.column(*s.model(), "x");
  for (size_t i = 0; i < runtime.t.size(); i += 100) {
    const double t = runtime.t[i];
    const double exact =
        0.2 * std::exp(-zeta * w * t) * (std::cos(wd * t) + zeta * w / wd * std::sin(wd * t));
    EXPECT_NEAR(runtime.y[i][static_cast<size_t>(x)], exact, 2e-3) << t;
  }
}

TEST(Session, StartValuesSetAtRunTime) {
  const std::string file = write_temp("osc_start.mbs", kOscillator);
  std::ostringstream diag, emit;
  Session s(options(file), diag);
  ASSERT_TRUE(s.compile(emit)) << diag.str();
  s.options().t_end = 0.5;
  s.set_start("x", -0.3);
  s.set_start("v", 2.0);
  EXPECT_FALSE(s.needs_compile());
  Rows runtime = run(s);
  mbs::CompileOptions o = options(file);
  o.start_overrides = {{"x", -0.3}, {"v", 2.0}};
  Session fresh(o, diag);
  ASSERT_TRUE(fresh.compile(emit)) << diag.str();
  fresh.options() = s.options();
  expect_same(runtime, run(fresh), 1e-12);
  EXPECT_EQ(runtime.y[0][static_cast<size_t>(runtime.column(*s.model(), "v"))], 2.0);
}

TEST(Session, BoundsAndNamesAreChecked) {
  const std::string file = write_temp("osc_bounds.mbs", kOscillator);
  std::ostringstream diag, emit;
  Session s(options(file), diag);
  ASSERT_TRUE(s.compile(emit)) << diag.str();
  try {
    s.set_parameter("kk", 1);
    FAIL() << "no error";
  } catch (const SetError& e) {
    EXPECT_EQ(e.kind(), SetError::Kind::UnknownName);
    EXPECT_NE(std::string(e.what()).find("did you mean 'k'"), std::string::npos) << e.what();
  }
  try {
    s.set_parameter("x", 1);
    FAIL() << "no error";
  } catch (const SetError& e) {
    EXPECT_NE(std::string(e.what()).find("start value"), std::string::npos) << e.what();
  }
  EXPECT_THROW(s.set_parameter("k", std::nan("")), SetError);
  s.set_parameter("k", -1);
  try {
    s.instance().start_vector();
    FAIL() << "no error";
  } catch (const SetError& e) {
    EXPECT_EQ(e.kind(), SetError::Kind::OutOfRange);
    EXPECT_NE(std::string(e.what()).find("min = 0"), std::string::npos) << e.what();
  }
  auto r = s.simulate([](double, std::span<const double>) { return 0; });
  EXPECT_NE(r.setup_error.find("violates min = 0"), std::string::npos) << r.setup_error;
  // a derived value that is not finite: sqrt of a negative product
  s.set_parameter("k", 1);
  s.set_parameter("m", 0);
  s.set_parameter("zeta", std::numeric_limits<double>::max());
  EXPECT_THROW(s.instance().start_vector(), SetError);
}

TEST(Session, ValuesTheCompilerUsesAreRecompiled) {
  const std::string file = write_temp("arr.mbs", R"(
model Arr
  parameter Integer n = 3;
  parameter Real a = 2;
  Real x[n](each start = 1);
equation
  for i in 1:n loop
    der(x[i]) = -a*i*x[i];
  end for;
end Arr;
)");
  std::ostringstream diag, emit;
  Session s(options(file), diag);
  ASSERT_TRUE(s.compile(emit)) << diag.str();
  EXPECT_NE(s.instance().why_compile_time("n").find("an array size at"), std::string::npos)
      << s.instance().why_compile_time("n");
  EXPECT_EQ(s.instance().why_compile_time("a"), "");
  s.set_parameter("n", 5);
  EXPECT_TRUE(s.needs_compile());
  s.options().t_end = 1;
  s.options().h = 1e-3;
  Rows r = run(s);
  EXPECT_FALSE(s.needs_compile());
  ASSERT_EQ(s.model()->output_names.size(), 5u);
  // x5(1) = e^{-10} (the integrator's error, not the compile, limits the agreement)
  EXPECT_NEAR(r.y.back()[4], std::exp(-10.0), 1e-6);
}

TEST(Session, MechanismParametersAtRunTimeAndByCompile) {
  // a tree: the distance and the mass change at run time; the start angle is assembled by the
  // compiler and needs a new compile
  const std::string file = std::string(MBS_SOURCE_DIR) + "/examples/mechanics/pendulum.mbs";
  std::ostringstream diag, emit;
  Session s(options(file), diag);
  ASSERT_TRUE(s.compile(emit)) << diag.str();
  EXPECT_EQ(s.instance().why_compile_time("d"), "");
  EXPECT_EQ(s.instance().why_compile_time("m"), "");
  EXPECT_NE(s.instance().why_compile_time("theta0").find("assembly"), std::string::npos);
  s.options().t_end = 0.5;
  s.options().h = 1e-3;
  s.set_parameter("d", 0.8);
  s.set_parameter("m", 3);
  s.set_parameter("theta0", 0.4);
  EXPECT_TRUE(s.needs_compile());
  Rows runtime = run(s);
  mbs::CompileOptions o = options(file);
  o.overrides = {{"d", 0.8}, {"m", 3}, {"theta0", 0.4}};
  Session fresh(o, diag);
  ASSERT_TRUE(fresh.compile(emit)) << diag.str();
  fresh.options() = s.options();
  expect_same(runtime, run(fresh), 1e-12);
}

TEST(Session, ConstrainedStartValuesNeedACompile) {
  const std::string file = write_temp("pend.mbs", R"(
model Pend
  parameter Real L = 1;
  Real x(start = 1), y(start = 0), lambda;
equation
  der(der(x)) = -2*x*lambda;
  der(der(y)) = -9.81 - 2*y*lambda;
  x^2 + y^2 = L^2;
end Pend;
)");
  std::ostringstream diag, emit;
  Session s(options(file), diag);
  ASSERT_TRUE(s.compile(emit)) << diag.str();
  EXPECT_NE(s.instance().why_compile_time("x").find("constraints"), std::string::npos);
  // L at run time: the start (1, 0) then violates the constraint, which the solver reports
  s.set_start("x", 0.6);
  s.set_start("y", -0.8);
  EXPECT_TRUE(s.needs_compile());
  s.options().t_end = 0.1;
  s.options().h = 1e-3;
  Rows r = run(s);
  ASSERT_FALSE(r.y.empty());
  EXPECT_EQ(r.y[0][static_cast<size_t>(r.column(*s.model(), "x"))], 0.6);
}

}  // namespace
