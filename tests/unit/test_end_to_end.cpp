// End to end: .mbs source -> compiler -> JIT -> solver, checked against analytic solutions,
// conservation laws and a second formulation of the same model.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numbers>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/codegen/Jit.h"
#include "compiler/driver/Compile.h"
#include "runtime/solvers/Integrator.h"
#include "tests/unit/ir_test_util.h"

namespace {

std::string example(const std::string& name) {
  return std::string(MBS_SOURCE_DIR) + "/examples/" + name;
}

mbs::CompileResult compile_file(const std::string& path,
                                std::map<std::string, double> overrides = {}) {
  mbs::CompileOptions o;
  o.file = path;
  o.overrides = std::move(overrides);
  std::ostringstream emit, diag;
  auto r = mbs::compile(o, emit, diag);
  EXPECT_TRUE(r.ok) << diag.str();
  return r;
}

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = testing::TempDir() + std::to_string(getpid()) + "_" + name;
  std::ofstream(path) << text;
  return path;
}

struct SimRun {
  std::vector<double> t;
  std::vector<std::vector<double>> rows;
  mbs::rt::SolveStatus status;
  mbs::rt::Statistics stats;
};

SimRun simulate(const mbs::rt::CompiledModel& m, double t_end, double h, double rho = 0.9,
                mbs::rt::SolverKind kind = mbs::rt::SolverKind::GenAlpha) {
  mbs::rt::SolverOptions o;
  o.t_end = t_end;
  o.h = h;
  o.rho_inf = rho;
  o.solver = kind;
  auto solver = mbs::rt::make_integrator(m, o);
  SimRun run;
  run.status = solver->run([&](double t, std::span<const double> out) {
    run.t.push_back(t);
    run.rows.emplace_back(out.begin(), out.end());
    return 0;
  });
  run.stats = solver->statistics();
  return run;
}

int column(const mbs::rt::CompiledModel& m, const std::string& name) {
  for (size_t i = 0; i < m.output_names.size(); ++i)
    if (m.output_names[i] == name) return static_cast<int>(i);
  ADD_FAILURE() << "no column " << name;
  return 0;
}

// x(t) of m x'' + d x' + k x = 0, x(0) = x0, x'(0) = 0
double msd_exact(double t, double m, double d, double k, double x0) {
  double w = std::sqrt(k / m), zeta = d / (2 * std::sqrt(k * m));
  double wd = w * std::sqrt(1 - zeta * zeta);
  return std::exp(-zeta * w * t) * (x0 * std::cos(wd * t) + zeta * w * x0 / wd * std::sin(wd * t));
}

// A chain of 40,000 first-order equations, enough for its kernels to compute the equations of the
// for-loop by loops over tables (JitOptions::loop_min_outputs): x_1' = -x_1,
// x_i' = x_{i-1} - x_i, all x_i(0) = 1, has x_i(t) = e^-t sum_{k<i} t^k / k!, and RK4 at h = 0.01
// follows it to 1e-9 at t = 1, at the first elements and the last.
TEST(EndToEnd, ALongChainComputedByLoopKernelsFollowsItsClosedForm) {
  const int n = 40000;
  mbs::CompileOptions o;
  o.file = "ode_chain.mbs";
  o.source = "model OdeChain\n  parameter Integer n = " + std::to_string(n) +
             ";\n  Real x[n](each start = 1);\nequation\n  der(x[1]) = -x[1];\n"
             "  for i in 2:n loop\n    der(x[i]) = x[i-1] - x[i];\n  end for;\nend OdeChain;\n";
  o.cache_dir = "off";
  std::ostringstream emit, diag;
  mbs::CompileResult r = mbs::compile(o, emit, diag);
  ASSERT_TRUE(r.ok) << diag.str();
  size_t largest = 0;
  for (const auto& k : r.kernel_sizes) largest = std::max(largest, k.outputs);
  ASSERT_GE(largest, mbs::codegen::JitOptions{}.loop_min_outputs) << "no kernel takes loops";
  const SimRun run = simulate(*r.model, 1.0, 0.01, 0.9, mbs::rt::SolverKind::Rk4);
  ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished);
  const std::vector<double>& last = run.rows.back();
  const auto exact = [](int i, double t) {
    double sum = 0.0, term = 1.0;
    for (int k = 0; k < i; ++k) {
      sum += term;
      term *= t / (k + 1);
    }
    return std::exp(-t) * sum;
  };
  for (int i : {1, 2, 3, 10, n - 1, n}) {
    const int c = column(*r.model, "x[" + std::to_string(i) + "]");
    EXPECT_NEAR(last[static_cast<size_t>(c)], exact(i, 1.0), 1e-9) << "x[" << i << "]";
  }
}

// The structure of a model reaches code generation at any size (FlatEquation::group ->
// KernelSpec::groups, JitOptions::loop_min_group): the equations of a for-equation and of an
// array of components, the variables and the parameters of arrays, are computed by loops over
// tables, so the code is the same at n = 1,000 and 2,000 (kernels far below loop_min_outputs);
// and the model follows its closed form: y_1' = -y_1, y_i' = y_{i-1} - y_i from 1 (as above),
// and each cell's x' = -k x, x(0) = 1, with its own k from an array modifier.
TEST(EndToEnd, ForEquationsAndComponentArraysCompileToLoopsAtAnySize) {
  const auto source = [](int n) {
    return "model Cell\n  parameter Real k = 2;\n  Real x(start = 1);\nequation\n  der(x) = -k*x;\n"
           "end Cell;\nmodel Arrays\n  parameter Integer n = " +
           std::to_string(n) +
           ";\n  Real y[n](each start = 1);\n  Cell c[n](k = {1 + 0.001*i for i in 1:n});\n"
           "equation\n  der(y[1]) = -y[1];\n  for i in 2:n loop\n    der(y[i]) = y[i-1] - y[i];\n"
           "  end for;\nend Arrays;\n";
  };
  const auto compile = [&](int n, std::string& ir) {
    mbs::CompileOptions o;
    o.file = "arrays.mbs";
    o.source = source(n);
    o.cache_dir = "off";
    o.emit = "ir";
    std::ostringstream emit, diag;
    mbs::CompileResult r = mbs::compile(o, emit, diag);
    EXPECT_TRUE(r.ok) << diag.str();
    ir = emit.str();
    for (const auto& k : r.kernel_sizes)
      EXPECT_LT(k.outputs, mbs::codegen::JitOptions{}.loop_min_outputs) << k.name;
    return r;
  };
  const auto instructions = mbs::testutil::ir_instructions;
  std::string ir_small, ir_large;
  const mbs::CompileResult small = compile(1000, ir_small);
  compile(2000, ir_large);
  ASSERT_TRUE(small.model);
  for (const char* loop :
       {"@residual.loop", "@newton_matrix.loop", "@outputs.loop", "@parameter_bindings.loop"})
    EXPECT_NE(ir_small.find(loop), std::string::npos) << loop;
  EXPECT_EQ(instructions(ir_large), instructions(ir_small));
  EXPECT_LT(instructions(ir_small), 1000u);  // straight-line code: several per equation
  const SimRun run = simulate(*small.model, 1.0, 0.01, 0.9, mbs::rt::SolverKind::Rk4);
  ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished);
  const std::vector<double>& last = run.rows.back();
  const double t = run.t.back();
  ASSERT_NEAR(t, 1.0, 1e-12);
  for (int i : {1, 2, 500, 1000}) {
    double sum = 0.0, term = 1.0;
    for (int k = 0; k < i; ++k) sum += term, term *= t / (k + 1);
    EXPECT_NEAR(last[column(*small.model, "y[" + std::to_string(i) + "]")], std::exp(-t) * sum,
                1e-9)
        << "y[" << i << "]";
    const double k = 1 + 0.001 * i;
    EXPECT_NEAR(last[column(*small.model, "c[" + std::to_string(i) + "].x")], std::exp(-k * t),
                1e-9)
        << "c[" << i << "].x";
  }
}

TEST(EndToEnd, MassSpringDamperMatchesAnalyticSolutionWithSecondOrderConvergence) {
  auto r = compile_file(example("mass_spring_damper.mbs"));
  ASSERT_TRUE(r.model);
  const auto& m = *r.model;
  EXPECT_EQ(m.n_q, 1);  // v = der(x) is an alias: one ODE2 coordinate
  EXPECT_EQ(m.n_y + m.n_z, 0);
  int cx = column(m, "x"), cv = column(m, "v");
  std::vector<double> errors;
  for (double h : {4e-3, 2e-3, 1e-3}) {
    SimRun run = simulate(m, 1.0, h);
    ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished);
    double err = 0;
    for (size_t i = 0; i < run.t.size(); ++i)
      err = std::max(err, std::fabs(run.rows[i][cx] - msd_exact(run.t[i], 1, 0.4, 100, 0.1)));
    // the velocity column is the derivative of x (an eliminated alias, computed from qd)
    double t1 = run.t.back(), dt = 1e-6;
    double v_exact =
        (msd_exact(t1 + dt, 1, 0.4, 100, 0.1) - msd_exact(t1 - dt, 1, 0.4, 100, 0.1)) / (2 * dt);
    EXPECT_NEAR(run.rows.back()[cv], v_exact, 20 * h * h * 100);
    errors.push_back(err);
  }
  EXPECT_LT(errors.back(), 1e-3);
  for (size_t i = 1; i < errors.size(); ++i) {
    double ratio = errors[i - 1] / errors[i];
    EXPECT_GT(ratio, 3.5) << "h-halving error ratio " << ratio;
    EXPECT_LT(ratio, 4.6) << "h-halving error ratio " << ratio;
  }
}

TEST(EndToEnd, PendulumKeepsTheConstraintTo1e10Over10Seconds) {
  auto r = compile_file(example("pendulum.mbs"));
  ASSERT_TRUE(r.model);
  const auto& m = *r.model;
  EXPECT_EQ(m.n_q, 2);
  EXPECT_EQ(m.n_z, 1);
  SimRun run = simulate(m, 10.0, 1e-3);
  ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished);
  ASSERT_EQ(run.t.size(), 10001u);
  int cx = column(m, "x"), cy = column(m, "y"), cl = column(m, "lambda");
  double worst = 0, y_min = 0;
  for (const auto& row : run.rows) {
    worst = std::max(worst, std::fabs(row[cx] * row[cx] + row[cy] * row[cy] - 1.0));
    y_min = std::min(y_min, row[cy]);
  }
  EXPECT_LT(worst, 1e-10);
  EXPECT_NEAR(y_min, -1.0, 1e-4);
  // at rest in the horizontal position the rod carries no force
  EXPECT_NEAR(run.rows[0][cl], 0.0, 1e-9);
  // energy conservation gives lambda = 3/2 m g at the lowest point (|2 y lambda| = 3 m g)
  double lambda_bottom = 0;
  for (const auto& row : run.rows)
    if (row[cy] < -0.99999) lambda_bottom = std::max(lambda_bottom, row[cl]);
  EXPECT_NEAR(lambda_bottom, 1.5 * 9.81, 0.05);
}

TEST(EndToEnd, FirstOrderPendulumIsTheSameModel) {
  auto a = compile_file(example("pendulum.mbs"));
  auto b = compile_file(example("pendulum_first_order.mbs"));
  ASSERT_TRUE(a.model && b.model);
  EXPECT_EQ(b.model->n_q, 2) << "der(x) = vx must make x an ODE2 coordinate";
  EXPECT_EQ(b.model->n_y, 0);
  SimRun ra = simulate(*a.model, 2.0, 1e-3), rb = simulate(*b.model, 2.0, 1e-3);
  ASSERT_EQ(ra.t.size(), rb.t.size());
  int ax = column(*a.model, "x"), bx = column(*b.model, "x"), bvx = column(*b.model, "vx");
  for (size_t i = 0; i < ra.t.size(); ++i) EXPECT_NEAR(ra.rows[i][ax], rb.rows[i][bx], 1e-9);
  // vx is der(x): compare with a central difference of x
  size_t i = 1000;
  double fd = (rb.rows[i + 1][bx] - rb.rows[i - 1][bx]) / 2e-3;
  EXPECT_NEAR(rb.rows[i][bvx], fd, 1e-4);
}

TEST(EndToEnd, VanDerPolGenAlphaAgreesWithRk4) {
  auto r = compile_file(example("van_der_pol.mbs"));
  ASSERT_TRUE(r.model);
  EXPECT_EQ(r.model->n_y, 2);
  SimRun ga = simulate(*r.model, 5.0, 1e-3);
  SimRun rk = simulate(*r.model, 5.0, 1e-3, 0.9, mbs::rt::SolverKind::Rk4);
  ASSERT_EQ(ga.status, mbs::rt::SolveStatus::Finished);
  ASSERT_EQ(rk.status, mbs::rt::SolveStatus::Finished);
  ASSERT_EQ(ga.t.size(), rk.t.size());
  double worst = 0;
  for (size_t i = 0; i < ga.t.size(); ++i)
    for (size_t j = 0; j < ga.rows[i].size(); ++j)
      worst = std::max(worst, std::fabs(ga.rows[i][j] - rk.rows[i][j]));
  EXPECT_LT(worst, 1e-5);  // trapezoidal rule error O(h^2) against RK4's O(h^4)
}

TEST(EndToEnd, ComponentChainMatchesModalSolution) {
  // undamped: x1 = x0/2 (cos w1 t + cos w2 t), x2 = x0/2 (cos w1 t - cos w2 t)
  std::string path = example("oscillator_chain.mbs");
  auto r = compile_file(path, {{"damper.d", 0.0}});
  ASSERT_TRUE(r.model);
  const auto& m = *r.model;
  EXPECT_EQ(m.n_q, 2) << "connection equations must reduce the chain to two coordinates";
  EXPECT_EQ(m.n_z, 0);
  SimRun run = simulate(m, 1.0, 5e-4, 1.0);
  ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished);
  int c1 = column(m, "m1.s"), c2 = column(m, "m2.s");
  double w1 = 10, w2 = 10 * std::sqrt(3.0), worst = 0;
  for (size_t i = 0; i < run.t.size(); ++i) {
    double t = run.t[i];
    worst =
        std::max(worst, std::fabs(run.rows[i][c1] - 0.05 * (std::cos(w1 * t) + std::cos(w2 * t))));
    worst =
        std::max(worst, std::fabs(run.rows[i][c2] - 0.05 * (std::cos(w1 * t) - std::cos(w2 * t))));
  }
  EXPECT_LT(worst, 2e-4);
}

TEST(EndToEnd, HigherDerivativesAreReducedToSecondOrder) {
  // x''' = -x with x(0) = 1, x'(0) = -1/2, x''(0) = -1/2 ... use a solution e^{-t}: x = x' ... keep
  // it simple: x''' = 0 with x(0)=1, x'(0)=2, x''(0)=3 gives x = 1 + 2 t + 3/2 t^2.
  std::string path = write_temp("third.mbs", R"(
model Third
  Real x(start = 1);
  Real v(start = 2);
  Real a(start = 3);
equation
  v = der(x);
  a = der(v);
  der(der(der(x))) = 0;
end Third;
)");
  auto r = compile_file(path);
  ASSERT_TRUE(r.model);
  SimRun run = simulate(*r.model, 1.0, 1e-3);
  ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished);
  int cx = column(*r.model, "x");
  EXPECT_NEAR(run.rows.back()[cx], 1 + 2 + 1.5, 1e-6);
}

TEST(EndToEnd, ParameterOverridesChangeTheResult) {
  auto r = compile_file(example("mass_spring_damper.mbs"), {{"k", 400.0}, {"d", 0.0}});
  ASSERT_TRUE(r.model);
  SimRun run = simulate(*r.model, 0.5, 1e-4, 1.0);
  int cx = column(*r.model, "x");
  // w = 20 rad/s: x = 0.1 cos(20 t)
  for (size_t i = 0; i < run.t.size(); i += 500)
    EXPECT_NEAR(run.rows[i][cx], 0.1 * std::cos(20 * run.t[i]), 1e-5);
}

TEST(EndToEnd, ArrayEquationsAndForLoops) {
  // der(x) = -A x with A = diag(k): x_i = x0_i exp(-k_i t); y[i] from a for loop
  std::string path = write_temp("arrays.mbs", R"(
model Arrays
  parameter Integer n = 3;
  parameter Real k[n] = {1, 2, 4};
  parameter Real A[n, n] = diagonal(k);
  Real x[n](start = {1, 2, 3});
  Real y[n];
  Real s;
equation
  der(x) = -A*x;
  for i in 1:n loop
    y[i] = i*x[i];
  end for;
  s = sum(y) + x*x + size(A, 1);
end Arrays;
)");
  auto r = compile_file(path);
  ASSERT_TRUE(r.model);
  EXPECT_EQ(r.model->n_y, 3);
  SimRun run = simulate(*r.model, 1.0, 1e-3);
  ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished);
  double k[3] = {1, 2, 4}, x0[3] = {1, 2, 3}, x[3], t = run.t.back();
  for (int i = 0; i < 3; ++i) {
    x[i] = x0[i] * std::exp(-k[i] * t);
    EXPECT_NEAR(run.rows.back()[column(*r.model, "x[" + std::to_string(i + 1) + "]")], x[i], 1e-6);
    EXPECT_NEAR(run.rows.back()[column(*r.model, "y[" + std::to_string(i + 1) + "]")],
                (i + 1) * x[i], 3e-6);
  }
  double s_exact = x[0] + 2 * x[1] + 3 * x[2] + x[0] * x[0] + x[1] * x[1] + x[2] * x[2] + 3;
  EXPECT_NEAR(run.rows.back()[column(*r.model, "s")], s_exact, 1e-5);
}

TEST(EndToEnd, ConnectorsInsideAndOutsideAHierarchy) {
  // A subsystem of two springs in series with its own (outside) flanges: the stiffness seen
  // from outside is c/2, so the mass oscillates at sqrt(c / (2 m)).
  std::string path = write_temp("series.mbs", R"(
model SeriesSprings
  import Translational.*;
  parameter Real c = 100;
  Flange flange_a, flange_b;
  Spring s1(c = c), s2(c = c);
equation
  connect(flange_a, s1.flange_a);
  connect(s1.flange_b, s2.flange_a);
  connect(s2.flange_b, flange_b);
end SeriesSprings;

model Top
  Translational.Fixed wall;
  SeriesSprings pair(c = 200);
  Translational.Mass m(m = 1, s(start = 0.1));
equation
  connect(wall.flange, pair.flange_a);
  connect(pair.flange_b, m.flange_a);
end Top;
)");
  auto r = compile_file(path);
  ASSERT_TRUE(r.model);
  const auto& m = *r.model;
  SimRun run = simulate(m, 1.0, 5e-4, 1.0);
  ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished);
  int cs = column(m, "m.s");
  double w = std::sqrt(200.0 / 2.0 / 1.0), worst = 0;
  for (size_t i = 0; i < run.t.size(); ++i)
    worst = std::max(worst, std::fabs(run.rows[i][cs] - 0.1 * std::cos(w * run.t[i])));
  EXPECT_LT(worst, 2e-4);
  // the force through the pair equals the spring force c/2 * s on the mass
  int cf = column(m, "m.flange_a.f");
  for (size_t i = 0; i < run.t.size(); i += 100)
    EXPECT_NEAR(run.rows[i][cf], -100.0 * run.rows[i][cs], 1e-6);
}

TEST(EndToEnd, RcCircuitFromTheLanguageReference) {
  std::string path = write_temp("rc.mbs", R"(
connector Pin
  Real v;
  flow Real i;
end Pin;
model Resistor
  parameter Real R = 1;
  Pin p, n;
equation
  p.v - n.v = R*p.i;
  p.i + n.i = 0;
end Resistor;
model Capacitor
  parameter Real C = 1;
  Pin p, n;
  Real u(start = 1);
equation
  u = p.v - n.v;
  C*der(u) = p.i;
  p.i + n.i = 0;
end Capacitor;
model Ground
  Pin p;
equation
  p.v = 0;
end Ground;
model RCCircuit
  Resistor r(R = 2);
  Capacitor c(C = 0.5);
  Ground gnd;
equation
  connect(c.p, r.p);
  connect(r.n, c.n);
  connect(c.n, gnd.p);
end RCCircuit;
)");
  auto r = compile_file(path);
  ASSERT_TRUE(r.model);
  SimRun run = simulate(*r.model, 2.0, 1e-3);
  ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished);
  // u = exp(-t / (R C)) = exp(-t)
  EXPECT_NEAR(run.rows.back()[column(*r.model, "c.u")], std::exp(-2.0), 1e-6);
}

TEST(EndToEnd, ExplicitMethodsFactorAConstantMassMatrixOnce) {
  auto r = compile_file(example("mass_spring_damper.mbs"));
  ASSERT_TRUE(r.model);
  EXPECT_TRUE(r.model->constant_leading_matrix);
  SimRun run = simulate(*r.model, 1.0, 1e-3, 0.9, mbs::rt::SolverKind::Rk44);
  ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished);
  EXPECT_EQ(run.stats.factorizations, 1);
  EXPECT_NEAR(run.rows.back()[column(*r.model, "x")], msd_exact(1.0, 1, 0.4, 100, 0.1), 1e-9);
  // the pendulum's leading matrix depends on x and y (the multiplier column)
  auto p = compile_file(example("pendulum.mbs"));
  ASSERT_TRUE(p.model);
  EXPECT_FALSE(p.model->constant_leading_matrix);
}

}  // namespace

namespace {

// Regression: `extends Lib.Class` in a top-level class recursed without end while looking up
// `Lib` through the class's own bases.
TEST(EndToEnd, ExtendsADottedLibraryClass) {
  std::string path = write_temp("extends_dotted.mbs", R"(
model S2
  extends Translational.Mass(m = 2);
end S2;
model T
  S2 a;
  Translational.Fixed f;
  Translational.Spring s(c = 10);
equation
  connect(f.flange, s.flange_a);
  connect(s.flange_b, a.flange_a);
end T;
)");
  auto r = compile_file(path);
  ASSERT_TRUE(r.model);
  EXPECT_EQ(r.model->n_q, 1);
}

// The unit and description of every output column come from the variable's own declaration: an
// eliminated alias or explicit variable keeps its own, an array element has its array's.
TEST(EndToEnd, OutputsCarryTheirDeclaredUnits) {
  std::string path = write_temp("units.mbs", R"(
model U
  parameter Real k(unit = "N/m") = 4 "stiffness";
  Real x(start = 1, unit = "m") "position";
  Real v(unit = "m/s") "velocity";
  Real a(unit = "m") "an alias of x";
  Real mm(unit = "mm") "x in millimetres";
  Real e(unit = "J") "energy";
  Real p[2](unit = "m");
  Real q[2](each unit = "m");
  Real plain;
equation
  v = der(x);
  der(v) = -k*x;
  a = x;
  mm = 1000*x;
  e = (v^2 + k*x^2)/2;
  p = {x, 2*x};
  q = p;
  plain = x;
end U;
)");
  auto r = compile_file(path);
  ASSERT_TRUE(r.model);
  const auto& m = *r.model;
  ASSERT_EQ(m.output_unit.size(), m.output_names.size());
  ASSERT_EQ(m.output_description.size(), m.output_names.size());
  auto unit = [&](const std::string& name) { return m.output_unit[column(m, name)]; };
  EXPECT_EQ(unit("x"), "m");
  EXPECT_EQ(unit("v"), "m/s");
  EXPECT_EQ(unit("a"), "m");
  EXPECT_EQ(unit("mm"), "mm");  // its own, not x's
  EXPECT_EQ(unit("e"), "J");
  EXPECT_EQ(unit("p[1]"), "m");
  EXPECT_EQ(unit("p[2]"), "m");
  EXPECT_EQ(unit("q[2]"), "m");
  EXPECT_EQ(unit("plain"), "");  // an alias of x without a unit of its own
  EXPECT_EQ(m.output_description[column(m, "a")], "an alias of x");
  EXPECT_EQ(m.output_description[column(m, "plain")], "");
  // a, mm, e and plain are eliminated: the units do not depend on being an unknown
  using Kind = mbs::rt::OutputSource::Kind;
  EXPECT_EQ(m.output_source[column(m, "a")].kind, Kind::Alias);
  EXPECT_EQ(m.output_source[column(m, "mm")].kind, Kind::Alias);
  EXPECT_EQ(m.output_source[column(m, "e")].kind, Kind::Explicit);
  EXPECT_EQ(m.output_source[column(m, "plain")].kind, Kind::Alias);
  EXPECT_EQ(m.parameter_unit[0], "N/m");
}

// The standard library declares its units as attributes, so a mechanism's columns have them;
// so do the joint wrenches the multibody lowering adds (--reactions).
TEST(EndToEnd, MechanismOutputsHaveTheLibrarysUnits) {
  mbs::CompileOptions o;
  o.file = example("mechanics/slider_crank.mbs");
  o.reactions = true;
  std::ostringstream emit, diag;
  auto r = mbs::compile(o, emit, diag);
  ASSERT_TRUE(r.model) << diag.str();
  const auto& m = *r.model;
  ASSERT_EQ(m.output_unit.size(), m.output_names.size());
  auto unit = [&](const std::string& name) { return m.output_unit[column(m, name)]; };
  EXPECT_EQ(unit("crank.phi"), "rad");
  EXPECT_EQ(unit("crank.w"), "rad/s");
  EXPECT_EQ(unit("crank.tau"), "N.m");
  EXPECT_EQ(unit("slider.s"), "m");
  EXPECT_EQ(unit("slider.v"), "m/s");
  EXPECT_EQ(unit("slider.reaction_f[2]"), "N");
  EXPECT_EQ(unit("slider.reaction_t[3]"), "N.m");
  EXPECT_EQ(m.output_description[column(m, "crank.phi")], "rotation angle");
  size_t mass = 0;
  while (mass < m.parameters.size() && m.parameters[mass].name != "slider_body.m") ++mass;
  ASSERT_LT(mass, m.parameter_unit.size());
  EXPECT_EQ(m.parameter_unit[mass], "kg");
}

}  // namespace

// ---------------------------------------------------------------- comprehensions and reductions

// The value of column `name` in the last row of a run.
double last(const mbs::rt::CompiledModel& m, const SimRun& run, const std::string& name) {
  return run.rows.back()[column(m, name)];
}

TEST(EndToEnd, ComprehensionsAndReductionsAgainstHandComputedValues) {
  std::string path = write_temp("comprehensions.mbs", R"(
model Comprehensions
  parameter Integer n = 5;
  parameter Real w[n] = {i^2 for i in 1:n};
  parameter Real T[3, 2] = {10*i + j for i in 1:2, j in 1:3} "one dimension per iterator";
  parameter Real N[2, 3] = {{10*i + j for j in 1:3} for i in 1:2};
  parameter Real odd[3] = {i for i in 5:-2:1};
  Real x(start = 1);
  parameter Real big[2] = {i for i in 1:n if i > 3} "a filter, an mbs extension";
  Real s, p, mx, mn, sq, t12, t31, n23, o3, empty, fs, b2;
equation
  der(x) = -x;
  s = sum(w);
  p = product(i for i in 1:n);
  mx = max(w[i] - 4*i for i in 1:n);
  mn = min(w[i] - 4*i for i in 1:n) + 0*x;
  sq = sum(v^2 for v in {1, 2, 5}) + sum(x for i in 1:n);
  t12 = T[1, 2];
  t31 = T[3, 1];
  n23 = N[2, 3];
  o3 = odd[3];
  empty = sum(i for i in 1:0) + product(i for i in 1:0);
  fs = sum(w[i] for i in 1:n if i <> 3) + sum(100 for i in 1:n, j in 1:n if i == j);
  b2 = big[2];
end Comprehensions;
)");
  auto r = compile_file(path);
  ASSERT_TRUE(r.model);
  const auto& m = *r.model;
  SimRun run = simulate(m, 1.0, 1e-3);
  ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished);
  EXPECT_EQ(last(m, run, "s"), 55.0);  // 1 + 4 + 9 + 16 + 25
  EXPECT_EQ(last(m, run, "p"), 120.0);
  EXPECT_EQ(last(m, run, "mx"), 5.0);  // {-3, -4, -3, 0, 5}
  EXPECT_EQ(last(m, run, "mn"), -4.0);
  EXPECT_NEAR(last(m, run, "sq"), 30.0 + 5 * std::exp(-1.0), 1e-6);
  // Modelica: {e for i in A, j in B} is {{e for i in A} for j in B}, so T[j, i] = 10 i + j
  EXPECT_EQ(last(m, run, "t12"), 21.0);
  EXPECT_EQ(last(m, run, "t31"), 13.0);
  EXPECT_EQ(last(m, run, "n23"), 23.0);
  EXPECT_EQ(last(m, run, "o3"), 1.0);
  EXPECT_EQ(last(m, run, "empty"), 1.0);
  EXPECT_EQ(last(m, run, "fs"), 55.0 - 9 + 500);
  EXPECT_EQ(last(m, run, "b2"), 5.0);
  // n bounds ranges, so a new value needs a new compile
  bool n_compile_time = false;
  for (size_t i = 0; i < m.parameters.size(); ++i)
    if (m.parameters[i].name == "n" && i < m.parameter_compile_time.size())
      n_compile_time = !m.parameter_compile_time[i].empty();
  EXPECT_TRUE(n_compile_time);
}

// A chain of masses between two walls written with comprehensions and reductions, and the same
// chain written element by element: the same equations, so the same numbers bit for bit.
TEST(EndToEnd, ChainWithComprehensionsEqualsTheChainWrittenOut) {
  std::string compact = write_temp("chain_compact.mbs", R"(
model Chain
  parameter Integer n = 4;
  parameter Real k = 100, m = 1, d = 0.5;
  parameter Real c[n] = {1, 2, 3, 4};
  Real x[n](start = {0.5*i for i in 1:n});
  Real v[n];
  Real E "energy";
  Real g "a weighted sum";
equation
  der(x) = v;
  m*der(v) = {-k*(x[i] - (if i > 1 then x[i - 1] else 0))
              + (if i < size(x, 1) then k*(x[i + 1] - x[i]) else 0) - d*v[i] for i in 1:n};
  E = sum(0.5*m*v[i]^2 for i in 1:n) + 0.5*k*x[1]^2 + sum(0.5*k*(x[i] - x[i - 1])^2 for i in 2:n);
  g = sum(c[i]*x[i] for i in 1:n);
end Chain;
)");
  std::string written = write_temp("chain_written.mbs", R"(
model Chain
  parameter Integer n = 4;
  parameter Real k = 100, m = 1, d = 0.5;
  parameter Real c[n] = {1, 2, 3, 4};
  Real x[n](start = {0.5, 1, 1.5, 2});
  Real v[n];
  Real E "energy";
  Real g "a weighted sum";
equation
  der(x) = v;
  m*der(v[1]) = -k*x[1] + k*(x[2] - x[1]) - d*v[1];
  m*der(v[2]) = -k*(x[2] - x[1]) + k*(x[3] - x[2]) - d*v[2];
  m*der(v[3]) = -k*(x[3] - x[2]) + k*(x[4] - x[3]) - d*v[3];
  m*der(v[4]) = -k*(x[4] - x[3]) - d*v[4];
  E = 0.5*m*v[1]^2 + 0.5*m*v[2]^2 + 0.5*m*v[3]^2 + 0.5*m*v[4]^2 + 0.5*k*x[1]^2
      + 0.5*k*(x[2] - x[1])^2 + 0.5*k*(x[3] - x[2])^2 + 0.5*k*(x[4] - x[3])^2;
  g = c[1]*x[1] + c[2]*x[2] + c[3]*x[3] + c[4]*x[4];
end Chain;
)");
  auto a = compile_file(compact);
  auto b = compile_file(written);
  ASSERT_TRUE(a.model);
  ASSERT_TRUE(b.model);
  ASSERT_EQ(a.model->output_names, b.model->output_names);
  SimRun ra = simulate(*a.model, 2.0, 1e-3);
  SimRun rb = simulate(*b.model, 2.0, 1e-3);
  ASSERT_EQ(ra.status, mbs::rt::SolveStatus::Finished);
  ASSERT_EQ(rb.status, mbs::rt::SolveStatus::Finished);
  ASSERT_EQ(ra.rows.size(), rb.rows.size());
  for (size_t i = 0; i < ra.rows.size(); ++i) ASSERT_EQ(ra.rows[i], rb.rows[i]) << "row " << i;
  // and the run is not trivial: the energy decays through the dampers
  double e0 = ra.rows.front()[column(*a.model, "E")], e1 = ra.rows.back()[column(*a.model, "E")];
  EXPECT_NEAR(e0, 0.5 * 100 * (0.25 + 3 * 0.25), 1e-12);
  EXPECT_LT(e1, 0.9 * e0);
  EXPECT_EQ(ra.rows.front()[column(*a.model, "g")], 0.5 + 2 + 4.5 + 8);
}

TEST(EndToEnd, HypotValueAndDerivative) {
  // x = exp(-t), y = t: hypot(x, y) = sqrt(x^2 + y^2), d/dt = (x x' + y y')/hypot = (t - x^2)/h
  std::string path = write_temp("hypot.mbs", R"(
model Hypot
  Real x(start = 1), y(start = 0);
  Real h, hd;
equation
  der(x) = -x;
  der(y) = 1;
  h = hypot(x, y);
  hd = der(hypot(x, y));
end Hypot;
)");
  auto r = compile_file(path);
  ASSERT_TRUE(r.model);
  SimRun run = simulate(*r.model, 1.0, 1e-3);
  ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished);
  const auto& m = *r.model;
  for (size_t i = 0; i < run.t.size(); i += 100) {
    double t = run.t[i], x = run.rows[i][column(m, "x")], y = run.rows[i][column(m, "y")];
    EXPECT_NEAR(y, t, 1e-9);
    double h = std::hypot(x, y);
    EXPECT_NEAR(run.rows[i][column(m, "h")], h, 1e-14);
    EXPECT_NEAR(run.rows[i][column(m, "hd")], (t - x * x) / h, 1e-8) << "t = " << t;
  }
  EXPECT_NEAR(run.rows.back()[column(m, "h")], std::hypot(std::exp(-1.0), 1.0), 1e-6);
}

// Nested reductions multiply their ranges; the flattener bounds the total work instead of
// running for hours on sum(sum(... for j in 1:10^6) for i in 1:10^6).
TEST(EndToEnd, NestedReductionsAreBoundedByTheInstanceLimit) {
  std::string path = write_temp("nested_reductions.mbs", R"(
model Nested
  Real y;
equation
  y = sum(sum(i*j for j in 1:1000) for i in 1:1000);
end Nested;
)");
  mbs::CompileOptions o;
  o.file = path;
  o.max_instances = 1000;
  std::ostringstream emit, diag;
  auto r = mbs::compile(o, emit, diag);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(diag.str().find("evaluating comprehensions and reductions more than 10000 times"),
            std::string::npos)
      << diag.str();
  o.max_instances = 2'000'000;
  std::ostringstream emit2, diag2;
  auto ok = mbs::compile(o, emit2, diag2);
  EXPECT_TRUE(ok.ok) << diag2.str();
}
