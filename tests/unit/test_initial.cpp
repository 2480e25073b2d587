// Initial equations and free start values (docs/language.md, "Initial equations";
// compiler/dae/Initial.h). Every solved start is checked against something the solve does not
// compute: the closed form of an equilibrium or of a geometric condition, the static solver
// (rt::solve_static, Newton with load stepping on F(q, z) = 0: a second formulation of "at rest
// in equilibrium"), and the simulation itself, which must stay at rest when it starts in
// equilibrium.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "compiler/driver/Session.h"
#include "mech_test_util.h"
#include "runtime/analysis/Static.h"
#include "runtime/model/ModelImage.h"
#include "runtime/session/Instance.h"

namespace mbs {
namespace {

using testutil::output_column;

// The value of output `name` in the first row of a run (the start).
double start_of(const rt::CompiledModel& m, const testutil::Run& r, const std::string& name) {
  return r.rows.front()[static_cast<size_t>(output_column(m, name))];
}

rt::SolverOptions options(rt::SolverKind kind, double t_end, double h = 1e-3) {
  rt::SolverOptions o;
  o.solver = kind;
  o.t_end = t_end;
  o.h = h;
  return o;
}

const char* const kHanging = R"mbs(
model Hanging "a mass on a spring under gravity, starting at rest in its equilibrium"
  parameter Real m = 2, k = 100, g = 9.81;
  Real x(start = 0, fixed = false);
  Real v(start = 0);
equation
  v = der(x);
  m*der(v) = -k*x - m*g;
initial equation
  der(v) = 0;
end Hanging;
)mbs";

TEST(InitialEquations, MassOnASpringStartsInItsEquilibriumAndStaysThere) {
  auto m = testutil::compile_source("hanging", kHanging);
  ASSERT_TRUE(m);
  EXPECT_FALSE(m->start_compile_time.empty());
  for (rt::SolverKind kind : {rt::SolverKind::GenAlpha, rt::SolverKind::Newmark,
                              rt::SolverKind::Rk4, rt::SolverKind::Dopri5}) {
    SCOPED_TRACE(std::string(rt::solver_name(kind)));
    const testutil::Run r = testutil::simulate(*m, options(kind, 1.0));
    ASSERT_EQ(r.status, rt::SolveStatus::Finished);
    EXPECT_NEAR(start_of(*m, r, "x"), -2 * 9.81 / 100, 1e-14);
    // in equilibrium it stays at rest: any error of the start would make it oscillate
    for (const auto& row : r.rows) {
      EXPECT_NEAR(row[static_cast<size_t>(output_column(*m, "x"))], -2 * 9.81 / 100, 1e-12);
      EXPECT_NEAR(row[static_cast<size_t>(output_column(*m, "v"))], 0.0, 1e-12);
    }
  }
}

TEST(InitialEquations, TheSolvedStartsAreCompileTimeForTheSessionAndTheInstance) {
  const std::string file = testutil::temp_path("hanging_session.mbs");
  std::ofstream(file) << kHanging;
  CompileOptions o;
  o.file = file;
  std::ostringstream diag, emit;
  Session s(o, diag);
  ASSERT_TRUE(s.compile(emit)) << diag.str();
  // the parameters of the initial system and every start value need a compile
  rt::Instance probe(s.model());
  EXPECT_NE(probe.why_compile_time("k"), "");
  EXPECT_NE(probe.why_compile_time("x"), "");
  s.set_parameter("k", 200);
  EXPECT_TRUE(s.needs_compile());
  ASSERT_TRUE(s.compile(emit)) << diag.str();
  s.options().t_end = 0.01;
  std::vector<double> first;
  const SimulationRun run = s.simulate([&](double, std::span<const double> out) {
    if (first.empty()) first.assign(out.begin(), out.end());
    return 0;
  });
  ASSERT_EQ(run.status, rt::SolveStatus::Finished);
  EXPECT_NEAR(first[static_cast<size_t>(output_column(*s.model(), "x"))], -2 * 9.81 / 200, 1e-14);
  // the model image keeps the reason
  rt::CompiledModel back;
  ASSERT_EQ(rt::read_model_image(rt::write_model_image(*s.model()), back), "");
  EXPECT_EQ(back.start_compile_time, s.model()->start_compile_time);
}

TEST(InitialEquations, PendulumStartsWithItsBobAtAGivenHeight) {
  auto m = testutil::compile_source("tip", R"mbs(
model Tip "a pendulum released with its bob h0 above the lowest point"
  parameter Real L = 1.5, g = 9.81, h0 = 0.4;
  Real phi(start = 0.2, fixed = false) "from the downward vertical";
  Real w(start = 0);
equation
  w = der(phi);
  L*der(w) = -g*sin(phi);
initial equation
  L*(1 - cos(phi)) = h0;
end Tip;
)mbs");
  ASSERT_TRUE(m);
  const testutil::Run r = testutil::simulate(*m, options(rt::SolverKind::GenAlpha, 0.01));
  ASSERT_EQ(r.status, rt::SolveStatus::Finished);
  EXPECT_NEAR(start_of(*m, r, "phi"), std::acos(1 - 0.4 / 1.5), 1e-12);
}

TEST(InitialEquations, FirstOrderStatesStartInTheirSteadyState) {
  auto m = testutil::compile_source("steady", R"mbs(
model Steady "two tanks in series, starting in their steady state"
  parameter Real q = 2, a = 0.5, b = 0.25;
  Real h1(start = 1, fixed = false), h2(start = 1, fixed = false);
  Real out;
equation
  der(h1) = q - a*h1;
  der(h2) = a*h1 - b*h2;
  out = b*h2;
initial equation
  der(h1) = 0;
  der(h2) = 0;
end Steady;
)mbs");
  ASSERT_TRUE(m);
  const testutil::Run r = testutil::simulate(*m, options(rt::SolverKind::Dopri5, 2.0));
  ASSERT_EQ(r.status, rt::SolveStatus::Finished);
  EXPECT_NEAR(start_of(*m, r, "h1"), 2 / 0.5, 1e-12);
  EXPECT_NEAR(start_of(*m, r, "h2"), 2 / 0.25, 1e-12);
  EXPECT_NEAR(r.rows.back()[static_cast<size_t>(output_column(*m, "out"))], 2.0, 1e-10);
}

TEST(InitialEquations, ConstraintsDetermineFreePositionsAndVelocities) {
  // x and der(x) free: the constraint and its time derivative give them
  auto m = testutil::compile_source("cartesian", R"mbs(
model Cartesian "a point mass on a rod, x and its velocity free"
  parameter Real L = 2, g = 9.81;
  Real x(start = 1, fixed = false), y(start = -1.2);
  Real vx(start = 0, fixed = false), vy(start = 0.9);
  Real lambda;
equation
  der(x) = vx;
  der(y) = vy;
  der(vx) = -2*x*lambda;
  der(vy) = -g - 2*y*lambda;
  x^2 + y^2 = L^2;
end Cartesian;
)mbs");
  ASSERT_TRUE(m);
  const testutil::Run r = testutil::simulate(*m, options(rt::SolverKind::GenAlpha, 0.01));
  ASSERT_EQ(r.status, rt::SolveStatus::Finished);
  const double x0 = std::sqrt(4 - 1.44);
  EXPECT_NEAR(start_of(*m, r, "x"), x0, 1e-12);
  EXPECT_NEAR(start_of(*m, r, "vx"), 1.2 * 0.9 / x0, 1e-12);  // x vx + y vy = 0
}

TEST(InitialEquations, AMechanismStartsInTheEquilibriumTheStaticSolverFinds) {
  // examples/mechanics/sagging_arm.mbs: a two-link arm on sprung joints, at rest in equilibrium
  const std::string arm =
      clitest::slurp(std::string(MBS_SOURCE_DIR) + "/examples/mechanics/sagging_arm.mbs");
  auto m = testutil::compile_source("arm", arm);
  ASSERT_TRUE(m);
  const testutil::Run r = testutil::simulate(*m, options(rt::SolverKind::GenAlpha, 0.5));
  ASSERT_EQ(r.status, rt::SolveStatus::Finished);
  const double phi1 = start_of(*m, r, "j1.phi"), phi2 = start_of(*m, r, "j2.phi");
  EXPECT_LT(phi1, -0.05) << "the arm sags";

  EXPECT_NEAR(phi1, -0.316801, 5e-7) << "the example's header";
  EXPECT_NEAR(phi2, -0.124160, 5e-7) << "the example's header";
  // the same arm without the initial equations and free starts, solved by the static solver
  std::string plain = arm;
  const size_t section = plain.find("\ninitial equation\n");
  ASSERT_NE(section, std::string::npos);
  plain.erase(section, plain.find("\nend SaggingArm") - section);
  for (size_t at; (at = plain.find(", fixed = false")) != std::string::npos;)
    plain.erase(at, std::string(", fixed = false").size());
  auto s = testutil::compile_source("arm_plain", plain);
  ASSERT_TRUE(s);
  rt::SolverOptions so;
  const rt::StaticResult eq =
      rt::solve_static(s, so, [](double, std::span<const double>) { return 0; });
  ASSERT_EQ(eq.status, rt::SolveStatus::Finished);
  EXPECT_NEAR(phi1, eq.v[static_cast<size_t>(s->q_slot[0])], 1e-9);
  EXPECT_NEAR(phi2, eq.v[static_cast<size_t>(s->q_slot[1])], 1e-9);
  // and it stays at rest
  for (const auto& row : r.rows) {
    EXPECT_NEAR(row[static_cast<size_t>(output_column(*m, "j1.phi"))], phi1, 1e-9);
    EXPECT_NEAR(row[static_cast<size_t>(output_column(*m, "j2.phi"))], phi2, 1e-9);
  }
}

TEST(InitialEquations, ALongSprungChainStartsAtRest) {
  // 30 links on sprung joints that sag far from their horizontal start: the initial solve needs
  // its homotopy (the static solver's load stepping) to get there; at rest in equilibrium, the
  // simulation must stay where it starts
  auto m = testutil::compile_source("sprung_chain", R"mbs(
model SprungChain
  import Mechanics.*;
  parameter Integer N = 30;
  parameter Real L = 0.5;
  World world;
  Revolute j[N](each n = {0, 0, 1}, each c_phi = 200, each phi(start = 0, fixed = false));
  Body link[N](each m = 1, each r_cm = {L/2, 0, 0}, each I = diag({1e-3, 1e-3, 1e-3}));
  FixedTranslation tip[N](each r = {L, 0, 0});
equation
  connect(world.frame, j[1].frame_a);
  for i in 1:N loop
    connect(j[i].frame_b, link[i].frame_a);
    connect(j[i].frame_b, tip[i].frame_a);
  end for;
  for i in 1:N-1 loop
    connect(tip[i].frame_b, j[i+1].frame_a);
  end for;
initial equation
  for i in 1:N loop
    der(j[i].w) = 0;
  end for;
end SprungChain;
)mbs");
  ASSERT_TRUE(m);
  const testutil::Run r = testutil::simulate(*m, options(rt::SolverKind::GenAlpha, 0.05));
  ASSERT_EQ(r.status, rt::SolveStatus::Finished);
  double sag = 0, moved = 0;
  for (int i = 1; i <= 30; ++i) {
    const auto c = static_cast<size_t>(output_column(*m, "j[" + std::to_string(i) + "].phi"));
    sag = std::max(sag, std::fabs(r.rows.front()[c]));
    for (const auto& row : r.rows) moved = std::max(moved, std::fabs(row[c] - r.rows.front()[c]));
  }
  EXPECT_GT(sag, 0.3) << "the chain sags";
  EXPECT_LT(moved, 1e-8) << "and stays at rest";
}

TEST(InitialEquations, AFreeStartMovesToTheStateThatCarriesAnEliminatedVariable) {
  // x = p^3 + p is eliminated in favour of p: x's free start makes p's start free
  auto m = testutil::compile_source("carrier", R"mbs(
model C
  Real x(start = 1, fixed = false);
  Real p(start = 0.5);
equation
  der(x) = 1 - x;
  p^3 + p = x;
initial equation
  x = 0.25;
end C;
)mbs");
  ASSERT_TRUE(m);
  const testutil::Run r = testutil::simulate(*m, options(rt::SolverKind::GenAlpha, 0.01));
  ASSERT_EQ(r.status, rt::SolveStatus::Finished);
  const double p = start_of(*m, r, "p");
  EXPECT_NEAR(p * p * p + p, 0.25, 1e-14);
  EXPECT_NEAR(start_of(*m, r, "x"), 0.25, 1e-14);
}

TEST(InitialEquations, AFreeStartThatNothingDeterminesKeepsItsValueWithAWarning) {
  CompileOptions o;
  o.file = testutil::temp_path("undetermined.mbs");
  std::ofstream(o.file) << R"mbs(
model U
  Real x(start = 0.5, fixed = false);
  Real y(start = 2, fixed = false);
equation
  der(x) = -x;
  der(y) = x - y;
initial equation
  y = 1;
end U;
)mbs";
  std::ostringstream emit, diag;
  const CompileResult r = compile(o, emit, diag);
  ASSERT_TRUE(r.ok) << diag.str();
  EXPECT_NE(diag.str().find("the start value of 'x' is free"), std::string::npos) << diag.str();
  EXPECT_EQ(diag.str().find("'y'"), std::string::npos) << diag.str();
  EXPECT_EQ(r.model->v0[static_cast<size_t>(r.model->y_slot[0])], 0.5);
  EXPECT_NEAR(r.model->v0[static_cast<size_t>(r.model->y_slot[1])], 1.0, 1e-14);
}

}  // namespace
}  // namespace mbs

namespace mbs {
namespace {

// --project-start-velocities (CompileOptions::project_start_velocities)
CompileResult compile_projected(const std::string& name, const std::string& text,
                                bool project = true) {
  CompileOptions o;
  o.file = testutil::temp_path(name + ".mbs");
  o.project_start_velocities = project;
  std::ofstream(o.file) << text;
  std::ostringstream emit, diag;
  CompileResult r = compile(o, emit, diag);
  r.diagnostic_kinds.push_back(diag.str());  // the text, last
  return r;
}

const char* const kRod = R"mbs(
model Rod "a point mass on a rod (mass 2 along x, 3 along y) with a velocity partly along it"
  parameter Real L = 1;
  Real x(start = 0.6), y(start = -0.8);
  Real vx(start = 1), vy(start = 0.5);
  Real lambda;
equation
  der(x) = vx;
  der(y) = vy;
  2*der(vx) = -2*x*lambda;
  3*der(vy) = -3*9.81 - 2*y*lambda;
  x^2 + y^2 = L^2;
end Rod;
)mbs";

TEST(StartVelocityProjection, IsTheMassWeightedProjectionOnTheConstraint) {
  const CompileResult r = compile_projected("rod", kRod);
  ASSERT_TRUE(r.ok) << r.diagnostic_kinds.back();
  EXPECT_NE(r.diagnostic_kinds.back().find("der(x) 1 -> 0.847458"), std::string::npos)
      << r.diagnostic_kinds.back();
  // closed form: v = v0 - M^-1 G^T (G M^-1 G^T)^-1 G v0, G = [2x, 2y], M = diag(2, 3)
  const double x = 0.6, y = -0.8, g1 = 2 * x, g2 = 2 * y, vx0 = 1, vy0 = 0.5;
  const double mu = (g1 * vx0 + g2 * vy0) / (g1 * g1 / 2 + g2 * g2 / 3);
  const rt::CompiledModel& m = *r.model;
  EXPECT_NEAR(m.v0[static_cast<size_t>(m.qd_slot[0])], vx0 - g1 / 2 * mu, 1e-14);
  EXPECT_NEAR(m.v0[static_cast<size_t>(m.qd_slot[1])], vy0 - g2 / 3 * mu, 1e-14);
  // without the option the same start is refused
  const CompileResult refused = compile_projected("rod_refused", kRod, false);
  EXPECT_FALSE(refused.ok);
  EXPECT_NE(refused.diagnostic_kinds.back().find("--project-start-velocities"), std::string::npos);
}

TEST(StartVelocityProjection, KeepsTheVelocitiesDeclaredFixed) {
  // vy fixed: only vx can change, and x vx + y vy = 0 gives it
  std::string text = kRod;
  text.replace(text.find("vy(start = 0.5)"), 15, "vy(start = 0.5, fixed = true)");
  const CompileResult r = compile_projected("rod_fixed", text);
  ASSERT_TRUE(r.ok) << r.diagnostic_kinds.back();
  const rt::CompiledModel& m = *r.model;
  EXPECT_EQ(m.v0[static_cast<size_t>(m.qd_slot[1])], 0.5);
  EXPECT_NEAR(m.v0[static_cast<size_t>(m.qd_slot[0])], 0.8 * 0.5 / 0.6, 1e-14);
  // both fixed: nothing can move, an error that says so
  text.replace(text.find("vx(start = 1)"), 13, "vx(start = 1, fixed = true)");
  const CompileResult both = compile_projected("rod_both", text);
  EXPECT_FALSE(both.ok);
  EXPECT_NE(both.diagnostic_kinds.back().find("with the velocities declared fixed = true kept"),
            std::string::npos)
      << both.diagnostic_kinds.back();
}

TEST(StartVelocityProjection, AFourBarGetsTheVelocitiesItsAssemblyGives) {
  // one degree of freedom: with the crank's speed fixed, the other velocities are unique, so
  // the mass-weighted projection must agree with the start assembly's minimum-norm change
  const std::string text =
      clitest::slurp(std::string(MBS_SOURCE_DIR) + "/examples/mechanics/four_bar.mbs");
  const CompileResult projected = compile_projected("four_bar_projected", text);
  const CompileResult assembled = compile_projected("four_bar_assembled", text, false);
  ASSERT_TRUE(projected.ok) << projected.diagnostic_kinds.back();
  ASSERT_TRUE(assembled.ok) << assembled.diagnostic_kinds.back();
  EXPECT_NE(projected.diagnostic_kinds.back().find("start velocities violate"), std::string::npos);
  const rt::CompiledModel &p = *projected.model, &a = *assembled.model;
  ASSERT_EQ(p.n_q, a.n_q);
  double moved = 0;
  for (int32_t j = 0; j < p.n_q; ++j) {
    const auto s = static_cast<size_t>(p.qd_slot[j]);
    EXPECT_NEAR(p.v0[s], a.v0[static_cast<size_t>(a.qd_slot[j])], 1e-12) << p.q[j].name;
    moved = std::max(moved, std::fabs(p.v0[s]));
  }
  EXPECT_GT(moved, 1.0) << "the velocities are not all zero";
}

}  // namespace
}  // namespace mbs
