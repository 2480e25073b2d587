// Static equilibrium, linearisation, Matrix Market files and eigenmodes (runtime/analysis),
// checked against closed-form solutions of small .mbs models compiled here and against
// hand-built linear systems.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <complex>
#include <fstream>
#include <numbers>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/driver/Compile.h"
#include "runtime/analysis/Linearize.h"
#include "runtime/analysis/Modes.h"
#include "runtime/analysis/Static.h"
#include "runtime/io/MatrixMarket.h"

namespace {

using mbs::rt::CompiledModel;
using mbs::rt::SolveStatus;

std::string temp_path(const std::string& name) {
  return testing::TempDir() + std::to_string(getpid()) + "_" + name;
}

std::shared_ptr<const CompiledModel> compile_text(const std::string& name,
                                                  const std::string& text) {
  const std::string path = temp_path(name + ".mbs");
  std::ofstream(path) << text;
  mbs::CompileOptions o;
  o.file = path;
  std::ostringstream emit, diag;
  auto r = mbs::compile(o, emit, diag);
  EXPECT_TRUE(r.ok) << diag.str();
  EXPECT_TRUE(r.model) << diag.str();
  return r.model;
}

int q_index(const CompiledModel& m, const std::string& name) {
  for (size_t i = 0; i < m.q.size(); ++i)
    if (m.q[i].name == name) return static_cast<int>(i);
  ADD_FAILURE() << "no ODE2 coordinate " << name;
  return 0;
}

double q_value(const CompiledModel& m, const std::vector<double>& v, const std::string& name) {
  return v[m.q_slot[q_index(m, name)]];
}

struct StaticRun {
  mbs::rt::StaticResult result;
  std::vector<double> loads;
  std::vector<std::vector<double>> rows;
};

StaticRun run_static(const std::shared_ptr<const CompiledModel>& m, int load_steps,
                     int newton_max_iter = 25) {
  mbs::rt::SolverOptions o;
  o.load_steps = load_steps;
  o.newton_max_iter = newton_max_iter;
  StaticRun run;
  run.result = mbs::rt::solve_static(m, o, [&](double s, std::span<const double> out) {
    run.loads.push_back(s);
    run.rows.emplace_back(out.begin(), out.end());
    return 0;
  });
  return run;
}

// ---- 1. static equilibrium

constexpr const char* kHangingChain = R"(
model HangingChain "three masses hanging from three springs in series, x downwards"
  parameter Real m1 = 1.5;
  parameter Real m2 = 2.5;
  parameter Real m3 = 0.75;
  parameter Real k1 = 120;
  parameter Real k2 = 80;
  parameter Real k3 = 45;
  parameter Real g = 9.81;
  Real x1, x2, x3;
equation
  m1*der(der(x1)) = m1*g - k1*x1 + k2*(x2 - x1);
  m2*der(der(x2)) = m2*g - k2*(x2 - x1) + k3*(x3 - x2);
  m3*der(der(x3)) = m3*g - k3*(x3 - x2);
end HangingChain;
)";

TEST(Static, HangingSpringChainDeflectsByTheAnalyticAmount) {
  auto m = compile_text("chain", kHangingChain);
  ASSERT_TRUE(m);
  const int n = 10;
  auto run = run_static(m, n);
  ASSERT_EQ(run.result.status, SolveStatus::Finished)
      << (run.result.failure ? run.result.failure->message : "");
  const double g = 9.81, m1 = 1.5, m2 = 2.5, m3 = 0.75, k1 = 120, k2 = 80, k3 = 45;
  // Each spring carries the weight of everything below it.
  const double x1 = (m1 + m2 + m3) * g / k1;
  const double x2 = x1 + (m2 + m3) * g / k2;
  const double x3 = x2 + m3 * g / k3;
  const auto& v = run.result.v;
  EXPECT_NEAR(q_value(*m, v, "x1"), x1, 1e-12 * x1);
  EXPECT_NEAR(q_value(*m, v, "x2"), x2, 1e-12 * x2);
  EXPECT_NEAR(q_value(*m, v, "x3"), x3, 1e-12 * x3);
  // One observer call per load step at s = k/n; a linear model deflects in proportion to s.
  ASSERT_EQ(run.loads.size(), static_cast<size_t>(n));
  for (int k = 1; k <= n; ++k) EXPECT_DOUBLE_EQ(run.loads[k - 1], static_cast<double>(k) / n);
  EXPECT_EQ(run.result.statistics.steps, n);
  EXPECT_EQ(run.result.statistics.rejected_steps, 0);
  int col3 = -1;
  for (size_t i = 0; i < m->output_names.size(); ++i)
    if (m->output_names[i] == "x3") col3 = static_cast<int>(i);
  ASSERT_GE(col3, 0);
  EXPECT_NEAR(run.rows[4][col3], 0.5 * x3, 1e-12 * x3);
  EXPECT_NEAR(run.rows.back()[col3], x3, 1e-12 * x3);
  // Linear: Newton converges in one update (plus the confirming iteration) per load step.
  EXPECT_LE(run.result.statistics.newton_iterations, 2 * n);
  // Velocities and accelerations are zero in the static state.
  EXPECT_EQ(v[m->qd_slot[0]], 0.0);
  EXPECT_EQ(v[m->qdd_slot[0]], 0.0);
}

TEST(Static, PendulumUnderHorizontalForceReachesAtanOfForceOverWeight) {
  auto m = compile_text("forced_pendulum", R"(
model ForcedPendulum "pendulum in its angle, constant horizontal force at the bob"
  parameter Real m = 2;
  parameter Real L = 1.5;
  parameter Real g = 9.81;
  parameter Real F = 30;
  Real phi;
equation
  m*L^2*der(der(phi)) = -m*g*L*sin(phi) + F*L*cos(phi);
end ForcedPendulum;
)");
  ASSERT_TRUE(m);
  auto run = run_static(m, 10);
  ASSERT_EQ(run.result.status, SolveStatus::Finished)
      << (run.result.failure ? run.result.failure->message : "");
  EXPECT_NEAR(q_value(*m, run.result.v, "phi"), std::atan(30.0 / (2 * 9.81)), 1e-12);
  // The homotopy ramps the residual at the start, F(phi = 0) = -F L, not the force itself (whose
  // moment F L cos(phi) depends on phi): at load factor s the equilibrium solves
  // m g sin(phi) - F cos(phi) + (1 - s) F = 0. Its root by bisection at s = 0.3:
  auto h = [](double phi) { return 2 * 9.81 * std::sin(phi) - 30 * std::cos(phi) + 0.7 * 30; };
  double lo = 0, hi = 1.5;
  for (int i = 0; i < 200; ++i) (h(0.5 * (lo + hi)) < 0 ? lo : hi) = 0.5 * (lo + hi);
  ASSERT_EQ(run.rows.size(), 10u);
  EXPECT_NEAR(run.rows[2][0], 0.5 * (lo + hi), 1e-12);
}

// Cartesian pendulum with a multiplier: the static solution also determines the rod force.
constexpr const char* kCartesianPendulum = R"(
model CartesianPendulum
  parameter Real m = 1.25;
  parameter Real L = 0.8;
  parameter Real g = 9.81;
  parameter Real F = 0;
  Real x(start = 0.8*sin(0.4)), y(start = -0.8*cos(0.4));
  Real lambda(start = 1);
equation
  m*der(der(x)) = F - 2*x*lambda;
  m*der(der(y)) = -m*g - 2*y*lambda;
  x^2 + y^2 = L^2;
end CartesianPendulum;
)";

TEST(Static, CartesianPendulumFindsBottomAndRodForce) {
  auto m = compile_text("cart_pendulum", kCartesianPendulum);
  ASSERT_TRUE(m);
  auto run = run_static(m, 5);
  ASSERT_EQ(run.result.status, SolveStatus::Finished)
      << (run.result.failure ? run.result.failure->message : "");
  const auto& v = run.result.v;
  const double m_ = 1.25, L = 0.8, g = 9.81;
  EXPECT_NEAR(q_value(*m, v, "x"), 0.0, 1e-12);
  EXPECT_NEAR(q_value(*m, v, "y"), -L, 1e-12);
  EXPECT_NEAR(v[m->z_slot[0]], m_ * g / (2 * L), 1e-10);
}

// A hardening spring x + x^3 = F: Newton from x = 0 with the full load F = 1000 overshoots to
// x = 1000 and then needs ~15 iterations; with at most 8 per load step, one load step fails and
// the load increment has to be reduced.
constexpr const char* kCubicSpring = R"(
model CubicSpring
  parameter Real k = 1;
  parameter Real k3 = 1;
  parameter Real F = 1000;
  Real x;
equation
  der(der(x)) = F - k*x - k3*x^3;
end CubicSpring;
)";

double cubic_root(double f) {  // x + x^3 = f by bisection (independent of Newton)
  double lo = 0, hi = f;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (mid + mid * mid * mid < f ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

TEST(Static, HardeningSpringNeedsLoadStepReductionAndReachesTheRoot) {
  auto m = compile_text("cubic", kCubicSpring);
  ASSERT_TRUE(m);
  const double x_exact = cubic_root(1000.0);
  {
    // With enough Newton iterations a single load step works (no reduction).
    auto run = run_static(m, 1, 50);
    ASSERT_EQ(run.result.status, SolveStatus::Finished);
    EXPECT_EQ(run.result.statistics.rejected_steps, 0);
    EXPECT_EQ(run.result.statistics.steps, 1);
    EXPECT_GT(run.result.statistics.newton_iterations, 8);
    EXPECT_NEAR(q_value(*m, run.result.v, "x"), x_exact, 1e-12 * x_exact);
  }
  auto run = run_static(m, 1, 8);
  ASSERT_EQ(run.result.status, SolveStatus::Finished)
      << (run.result.failure ? run.result.failure->message : "");
  EXPECT_NEAR(q_value(*m, run.result.v, "x"), x_exact, 1e-12 * x_exact);
  EXPECT_GT(run.result.statistics.rejected_steps, 0);
  EXPECT_GT(run.result.statistics.steps, 1);
  EXPECT_LT(run.result.statistics.h_smallest, 1.0);
  ASSERT_EQ(run.loads.size(), 1u);  // the reduced substeps are not output
  EXPECT_EQ(run.loads[0], 1.0);
}

TEST(Static, NoEquilibriumBeyondALimitPointGivesAFailureRecord) {
  // A softening spring k x / (1 + x^2) carries at most k/2 (at x = 1): under F = 10.5 the load
  // factor cannot pass s = 5 / 10.5 = 0.476.
  auto m = compile_text("softening", R"(
model SofteningSpring
  parameter Real k = 10;
  parameter Real F = 10.5;
  Real x;
equation
  der(der(x)) = F - k*x/(1 + x^2);
end SofteningSpring;
)");
  ASSERT_TRUE(m);
  auto run = run_static(m, 10);
  ASSERT_EQ(run.result.status, SolveStatus::Failed);
  ASSERT_TRUE(run.result.failure);
  const auto& f = *run.result.failure;
  EXPECT_GE(f.t, 0.4);
  EXPECT_LE(f.t, 5 / 10.5);
  EXPECT_EQ(f.halvings, mbs::rt::kMaxLoadHalvings);
  EXPECT_EQ(f.equation, 0);
  EXPECT_EQ(f.unknown, 0);
  EXPECT_NE(f.message.find("load step from s = "), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("softening.mbs:"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("'x'"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("help: "), std::string::npos) << f.message;
  // Load steps up to 0.4 converged and were output; v is the last converged state.
  ASSERT_EQ(run.loads.size(), 4u);
  EXPECT_DOUBLE_EQ(run.loads.back(), 0.4);
  EXPECT_EQ(run.result.statistics.rejected_steps, mbs::rt::kMaxLoadHalvings + 1);
}

TEST(Static, FreeMassIsASingularJacobianAtOnce) {
  auto m = compile_text("free", R"(
model FreeMass
  parameter Real F = 1;
  Real x;
equation
  der(der(x)) = F;
end FreeMass;
)");
  ASSERT_TRUE(m);
  auto run = run_static(m, 10);
  ASSERT_EQ(run.result.status, SolveStatus::Failed);
  EXPECT_EQ(run.result.failure->kind, mbs::rt::FailureKind::SingularMatrix);
  EXPECT_EQ(run.result.statistics.rejected_steps, 1);  // no pointless halvings
  EXPECT_NE(run.result.failure->message.find("smaller load increment cannot help"),
            std::string::npos);
}

// ---- 2./3. eigenvalues

TEST(Modes, DampedOscillatorHasTheAnalyticEigenvalue) {
  const double mass = 2.0, d = 0.6, k = 50.0;
  auto m = compile_text("msd", R"(
model Msd
  parameter Real m = 2;
  parameter Real d = 0.6;
  parameter Real k = 50;
  Real x(start = 0.1);
equation
  m*der(der(x)) + d*der(x) + k*x = 0;
end Msd;
)");
  ASSERT_TRUE(m);
  const auto sys = mbs::rt::linearize(*m, m->v0);
  std::string err;
  const auto modes = mbs::rt::eigenmodes(sys, &err);
  ASSERT_TRUE(err.empty()) << err;
  ASSERT_EQ(modes.size(), 1u);
  const double re = -d / (2 * mass), im = std::sqrt(k / mass - re * re);
  EXPECT_NEAR(modes[0].lambda.real(), re, 1e-13);
  EXPECT_NEAR(modes[0].lambda.imag(), im, 1e-13 * im);
  EXPECT_NEAR(modes[0].frequency_hz, im / (2 * std::numbers::pi), 1e-13);
  EXPECT_NEAR(modes[0].damping_ratio, d / (2 * std::sqrt(k * mass)), 1e-13);
  const std::string table = mbs::rt::format_modes(modes);
  EXPECT_NE(table.find("damping ratio"), std::string::npos) << table;
}

// Hand-built systems: no compiler involved.
mbs::rt::LinearSystem second_order(const Eigen::MatrixXd& M, const Eigen::MatrixXd& D,
                                   const Eigen::MatrixXd& K) {
  mbs::rt::LinearSystem s;
  s.n_q = static_cast<int32_t>(M.cols());
  s.M = M, s.D = D, s.K = K;
  s.B.resize(M.rows(), 0);
  s.E.resize(M.rows(), 0);
  s.A.resize(M.rows(), 0);
  s.G.resize(0, M.cols());
  s.eq_level.assign(static_cast<size_t>(M.rows()), mbs::rt::EquationLevel::Dynamic);
  for (Eigen::Index i = 0; i < M.rows(); ++i) s.row_names.push_back("eq");
  return s;
}

TEST(Modes, TwoMassChainHasTheAnalyticFrequenciesSorted) {
  const double k = 40.0;
  Eigen::MatrixXd M = Eigen::MatrixXd::Identity(2, 2), K(2, 2);
  K << 2 * k, -k, -k, k;
  const auto modes = mbs::rt::eigenmodes(second_order(M, Eigen::MatrixXd::Zero(2, 2), K), nullptr);
  ASSERT_EQ(modes.size(), 2u);
  const double w1 = std::sqrt(k * (3 - std::sqrt(5.0)) / 2),
               w2 = std::sqrt(k * (3 + std::sqrt(5.0)) / 2);
  EXPECT_NEAR(modes[0].frequency_hz, w1 / (2 * std::numbers::pi), 1e-13);
  EXPECT_NEAR(modes[1].frequency_hz, w2 / (2 * std::numbers::pi), 1e-13);
  EXPECT_NEAR(modes[0].damping_ratio, 0.0, 1e-13);
}

TEST(Modes, OverdampedOscillatorHasTwoRealModes) {
  // lambda^2 + 10 lambda + 9 = 0: lambda = -1, -9.
  Eigen::MatrixXd M(1, 1), D(1, 1), K(1, 1);
  M << 1, D << 10, K << 9;
  const auto modes = mbs::rt::eigenmodes(second_order(M, D, K), nullptr);
  ASSERT_EQ(modes.size(), 2u);
  EXPECT_NEAR(modes[0].lambda.real(), -1.0, 1e-13);
  EXPECT_NEAR(modes[1].lambda.real(), -9.0, 1e-13);
  EXPECT_EQ(modes[0].lambda.imag(), 0.0);
  EXPECT_EQ(modes[0].frequency_hz, 0.0);
  EXPECT_NEAR(modes[0].damping_ratio, 1.0, 1e-15);
}

TEST(Modes, SingularMassMatrixDropsInfiniteEigenvalues) {
  // Second mass massless: x2 follows x1 statically, one finite mode with k_eff = k k / (k + k).
  const double k = 10.0;
  Eigen::MatrixXd M = Eigen::MatrixXd::Zero(2, 2), K(2, 2);
  M(0, 0) = 1.0;
  K << 2 * k, -k, -k, 2 * k;  // x2 between two springs to ground and to x1
  const auto modes = mbs::rt::eigenmodes(second_order(M, Eigen::MatrixXd::Zero(2, 2), K), nullptr);
  ASSERT_EQ(modes.size(), 1u);
  const double k_eff = 2 * k - k * k / (2 * k);
  EXPECT_NEAR(modes[0].lambda.imag(), std::sqrt(k_eff), 1e-12);
}

TEST(Modes, ConstrainedPendulumHasOneModeAtSqrtGOverL) {
  auto m = compile_text("cart_pendulum_modes", kCartesianPendulum);
  ASSERT_TRUE(m);
  const double mass = 1.25, L = 0.8, g = 9.81;
  std::vector<double> v = m->v0;
  v[m->q_slot[q_index(*m, "x")]] = 0.0;
  v[m->q_slot[q_index(*m, "y")]] = -L;
  v[m->z_slot[0]] = mass * g / (2 * L);
  const auto sys = mbs::rt::linearize(*m, v);
  ASSERT_EQ(sys.G.rows(), 1);
  EXPECT_DOUBLE_EQ(sys.G(0, q_index(*m, "y")), -2 * L);
  std::string err;
  const auto modes = mbs::rt::eigenmodes(sys, &err);
  ASSERT_TRUE(err.empty()) << err;
  ASSERT_EQ(modes.size(), 1u);
  const double f = std::sqrt(g / L) / (2 * std::numbers::pi);
  EXPECT_NEAR(modes[0].frequency_hz, f, 1e-13 * f);
  EXPECT_NEAR(modes[0].lambda.real(), 0.0, 1e-12);
  // The same from the static solver's equilibrium (which also finds lambda).
  auto run = run_static(m, 2);
  ASSERT_EQ(run.result.status, SolveStatus::Finished);
  const auto modes2 = mbs::rt::eigenmodes(mbs::rt::linearize(*m, run.result.v), &err);
  ASSERT_EQ(modes2.size(), 1u) << err;
  EXPECT_NEAR(modes2[0].frequency_hz, f, 1e-10 * f);
}

TEST(Modes, FirstOrderModelIsAClearError) {
  auto m = compile_text("first_order", R"(
model Decay
  Real y(start = 1);
equation
  der(y) = -y;
end Decay;
)");
  ASSERT_TRUE(m);
  std::string err;
  const auto modes = mbs::rt::eigenmodes(mbs::rt::linearize(*m, m->v0), &err);
  EXPECT_TRUE(modes.empty());
  EXPECT_NE(err.find("first-order"), std::string::npos) << err;
}

// ---- 4. linear system files

TEST(MatrixMarket, ValuesReadBackExactly) {
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(3, 4);
  a(0, 0) = 0.1;
  a(2, 0) = -1.0 / 3.0;
  a(1, 1) = 1e-310;  // subnormal
  a(0, 3) = 1.7976931348623157e308;
  a(2, 3) = std::nextafter(1.0, 2.0);
  a(1, 2) = -0.0 + 123456789.123456789;
  const std::string path = temp_path("a.mtx");
  mbs::rt::write_matrix_market(path, a, "a test\nsecond line");
  const Eigen::MatrixXd b = mbs::rt::read_matrix_market(path);
  ASSERT_EQ(b.rows(), 3);
  ASSERT_EQ(b.cols(), 4);
  for (Eigen::Index j = 0; j < 4; ++j)
    for (Eigen::Index i = 0; i < 3; ++i) EXPECT_EQ(b(i, j), a(i, j)) << i << "," << j;
  std::ifstream f(path);
  std::string header, c1, c2, size;
  std::getline(f, header), std::getline(f, c1), std::getline(f, c2), std::getline(f, size);
  EXPECT_EQ(header, "%%MatrixMarket matrix coordinate real general");
  EXPECT_EQ(c1, "% a test");
  EXPECT_EQ(size, "3 4 6");
  // Malformed files are reported.
  std::ofstream(temp_path("bad.mtx"))
      << "%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1\n";
  EXPECT_THROW(mbs::rt::read_matrix_market(temp_path("bad.mtx")), std::runtime_error);
}

TEST(Linearize, TwoMassChainGivesTheAnalyticMandK) {
  auto m = compile_text("chain2", R"(
model Chain2
  parameter Real m1 = 1.5;
  parameter Real m2 = 0.25;
  parameter Real k1 = 300;
  parameter Real k2 = 70;
  parameter Real d2 = 0.5;
  Real x1, x2;
equation
  m1*der(der(x1)) = -k1*x1 + k2*(x2 - x1);
  m2*der(der(x2)) = -k2*(x2 - x1) - d2*der(x2);
end Chain2;
)");
  ASSERT_TRUE(m);
  const auto s = mbs::rt::linearize(*m, m->v0);
  const int i1 = q_index(*m, "x1"), i2 = q_index(*m, "x2");
  // Residual = lhs - rhs; the equations are rows in model order.
  Eigen::MatrixXd M = Eigen::MatrixXd::Zero(2, 2), K(2, 2), D = Eigen::MatrixXd::Zero(2, 2);
  M(0, i1) = 1.5, M(1, i2) = 0.25;
  K(0, i1) = 300 + 70, K(0, i2) = -70, K(1, i1) = -70, K(1, i2) = 70;
  D(1, i2) = 0.5;
  EXPECT_EQ(s.M, M);
  EXPECT_EQ(s.K, K);
  EXPECT_EQ(s.D, D);
  EXPECT_EQ(s.G.rows(), 0);
  std::vector<std::string> written;
  const std::string prefix = temp_path("chain2");
  mbs::rt::write_linear_system(s, prefix, &written);
  ASSERT_GE(written.size(), 5u);
  EXPECT_EQ(written[0], prefix + "_M.mtx");
  EXPECT_EQ(mbs::rt::read_matrix_market(prefix + "_M.mtx"), M);
  EXPECT_EQ(mbs::rt::read_matrix_market(prefix + "_K.mtx"), K);
  EXPECT_EQ(mbs::rt::read_matrix_market(prefix + "_D.mtx"), D);
  EXPECT_EQ(mbs::rt::read_matrix_market(prefix + "_G.mtx").rows(), 0);
  std::ifstream names(prefix + "_names.txt");
  std::stringstream text;
  text << names.rdbuf();
  EXPECT_NE(text.str().find("# q (2)"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("\nx1\n"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("chain2.mbs:"), std::string::npos) << text.str();
}

TEST(Linearize, PendulumConstraintJacobianAndMultiplierColumn) {
  auto m = compile_text("cart_pendulum_lin", kCartesianPendulum);
  ASSERT_TRUE(m);
  std::vector<double> v = m->v0;
  const int ix = q_index(*m, "x"), iy = q_index(*m, "y");
  v[m->q_slot[ix]] = 0.3, v[m->q_slot[iy]] = -0.4, v[m->z_slot[0]] = 2.0;
  const auto s = mbs::rt::linearize(*m, v);
  ASSERT_EQ(s.constraint_rows.size(), 1u);
  EXPECT_EQ(s.G(0, ix), 0.6);
  EXPECT_EQ(s.G(0, iy), -0.8);
  EXPECT_EQ(s.B(0, 0), 0.6);   // d(m x'' - F + 2 x lambda)/d lambda
  EXPECT_EQ(s.K(0, ix), 4.0);  // 2 lambda
  EXPECT_EQ(s.M(0, ix), 1.25);
}

}  // namespace
