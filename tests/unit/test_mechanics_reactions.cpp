// Joint reaction wrenches (--reactions, CutForceTorque) against Newton's laws, and a closed chain
// written as two explicit paths (LoopClosure) against the same chain closed at a joint.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <numbers>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/driver/Compile.h"
#include "mech_test_util.h"
#include "runtime/solvers/Integrator.h"

namespace {

using mbs::rt::CompiledModel;

std::shared_ptr<const CompiledModel> compile_text(const std::string& name, const std::string& text,
                                                  bool reactions,
                                                  std::map<std::string, double> set = {}) {
  mbs::CompileOptions o;
  o.reactions = reactions;
  o.overrides = std::move(set);
  return mbs::testutil::compile_source(name, text, o);
}

struct Run {
  std::vector<double> t;
  std::vector<std::vector<double>> rows;
};

Run simulate(const CompiledModel& m, double t_end, double h) {
  mbs::rt::SolverOptions o;
  o.t_end = t_end;
  o.h = h;
  auto solver = mbs::rt::make_integrator(m, o);
  Run run;
  auto st = solver->run([&](double t, std::span<const double> out) {
    run.t.push_back(t);
    run.rows.emplace_back(out.begin(), out.end());
    return 0;
  });
  EXPECT_EQ(st, mbs::rt::SolveStatus::Finished);
  return run;
}

int column(const CompiledModel& m, const std::string& name) {
  return mbs::testutil::output_column(m, name);
}

const char* kPendulum = R"(
model Pendulum
  import Mechanics.*;
  parameter Real phi0 = -1.5707963267948966;
  World world;
  Revolute pivot(phi(start = phi0, fixed = true));
  Body bob(m = 2, r_cm = {0.8, 0, 0}, I = zeros(3, 3));
  CutForceTorque cut(resolve = 3);
equation
  connect(world.frame, pivot.frame_a);
  connect(pivot.frame_b, cut.frame_a);
  connect(cut.frame_b, bob.frame_a);
end Pendulum;
)";

TEST(MechanicsReactions, HangingPendulumCarriesItsWeight) {
  auto m = compile_text("hanging", kPendulum, true);
  ASSERT_TRUE(m);
  auto run = simulate(*m, 0.2, 1e-3);
  const double W = 2 * 9.80665;  // the World's default: standard gravity
  for (const auto& row : run.rows) {
    // world -> pendulum through the pivot: the weight, upward; no torque about the pivot
    EXPECT_NEAR(row[column(*m, "pivot.reaction_f[1]")], 0.0, 1e-9);
    EXPECT_NEAR(row[column(*m, "pivot.reaction_f[2]")], W, 1e-9);
    EXPECT_NEAR(row[column(*m, "pivot.reaction_t[3]")], 0.0, 1e-9);
    // the same wrench through the sensor between joint and body (resolved in the world)
    EXPECT_NEAR(row[column(*m, "cut.f[2]")], W, 1e-9);
    EXPECT_NEAR(row[column(*m, "cut.t[3]")], 0.0, 1e-9);
  }
}

TEST(MechanicsReactions, SwingingPendulumReactionIsMassTimesAccelerationMinusWeight) {
  // released from horizontal: at t = 0, phi'' = g/L cos(0)... with phi0 = 0: a_cm = L phi'' e_y
  auto m = compile_text("swing", kPendulum, true, {{"phi0", 0.0}});
  ASSERT_TRUE(m);
  auto run = simulate(*m, 0.5, 1e-4);
  const double mass = 2, L = 0.8, g = 9.80665;
  double worst = 0;
  for (size_t k = 0; k < run.rows.size(); ++k) {
    const auto& row = run.rows[k];
    double phi = row[column(*m, "pivot.phi")], w = row[column(*m, "pivot.w")];
    double phidd = -g / L * std::cos(phi);  // point mass: exact equation of motion
    // a_cm = L phi'' (-sin, cos) - L w^2 (cos, sin); F = m a_cm - m g_vec, resolved in the world
    double ax = -L * phidd * std::sin(phi) - L * w * w * std::cos(phi);
    double ay = L * phidd * std::cos(phi) - L * w * w * std::sin(phi);
    worst = std::max(worst, std::fabs(row[column(*m, "pivot.reaction_f[1]")] - mass * ax));
    worst =
        std::max(worst, std::fabs(row[column(*m, "pivot.reaction_f[2]")] - (mass * ay + mass * g)));
  }
  // the solver's accelerations are first-order accurate in the step: 1e-4 gives a few mN
  EXPECT_LT(worst, 5e-2);
  EXPECT_GT(run.rows.size(), 4000u);
}

const char* kSliderCrank = R"(
model SliderCrank
  import Mechanics.*;
  parameter Real r = 0.1;
  parameter Real l = 0.3;
  World world(g = {0, -9.81, 0});
  Revolute pivot(n = {0, 0, 1}, phi(start = 0, fixed = true), w(start = 10, fixed = true));
  Body crank(m = 0.5, r_cm = {r/2, 0, 0}, I = diag({1e-4, 5e-4, 5e-4}));
  FixedTranslation arm(r = {r, 0, 0});
  Revolute pin(n = {0, 0, 1});
  Body rod(m = 1, r_cm = {l/2, 0, 0}, I = diag({1e-4, 8e-3, 8e-3}));
  FixedTranslation rodEnd(r = {l, 0, 0});
  Revolute wrist(n = {0, 0, 1});
  Prismatic slide(n = {1, 0, 0}, s(start = 0.35));
  Body slider(m = 2);
equation
  connect(world.frame, pivot.frame_a);   connect(pivot.frame_b, crank.frame_a);
  connect(crank.frame_a, arm.frame_a);   connect(arm.frame_b, pin.frame_a);
  connect(pin.frame_b, rod.frame_a);     connect(rod.frame_a, rodEnd.frame_a);
  connect(rodEnd.frame_b, wrist.frame_a);
  connect(world.frame, slide.frame_a);   connect(slide.frame_b, slider.frame_a);
  connect(wrist.frame_b, slider.frame_a);
  pivot.tau = 0.5;
end SliderCrank;
)";

// The slider's Newton balance: the wrist's force (a tree joint: from the recursion) plus the
// slide's force (the cut joint: from its multipliers) plus its weight is its mass times its
// acceleration (the finite difference of its velocity). Index-3 accelerations are first-order
// accurate, so the residual must shrink about tenfold with the step.
double slider_balance_residual(double h) {
  auto m = compile_text("slider_balance", kSliderCrank, true);
  if (!m) return 1e9;
  auto run = simulate(*m, 0.4, h);
  double worst = 0;
  for (size_t k = 1; k + 1 < run.rows.size(); ++k) {
    const auto& x = run.rows[k];
    double th = x[column(*m, "pivot.phi")] + x[column(*m, "pin.phi")];
    double fa = x[column(*m, "wrist.reaction_f[1]")], fb = x[column(*m, "wrist.reaction_f[2]")];
    double Fx = std::cos(th) * fa - std::sin(th) * fb + x[column(*m, "slide.reaction_f[1]")];
    double Fy = std::sin(th) * fa + std::cos(th) * fb + x[column(*m, "slide.reaction_f[2]")];
    double a = (run.rows[k + 1][column(*m, "slide.v")] - run.rows[k - 1][column(*m, "slide.v")]) /
               (run.t[k + 1] - run.t[k - 1]);
    worst = std::max({worst, std::fabs(Fx - 2 * a), std::fabs(Fy - 2 * 9.81)});
    // the pivot passes the motor torque about its axis, the passive joints pass none (to the
    // accuracy of the Newton iteration, whose equations of motion are these projections)
    EXPECT_NEAR(x[column(*m, "pivot.reaction_t[3]")], 0.5, 1e-5);
    EXPECT_NEAR(x[column(*m, "pin.reaction_t[3]")], 0.0, 1e-5);
    EXPECT_NEAR(x[column(*m, "wrist.reaction_t[3]")], 0.0, 1e-5);
  }
  return worst;
}

TEST(MechanicsReactions, SliderBalanceOfTreeAndCutJointForces) {
  double coarse = slider_balance_residual(1e-3), fine = slider_balance_residual(1e-4);
  EXPECT_LT(fine, 0.1);
  EXPECT_GT(coarse / fine, 5.0) << coarse << " " << fine;
}

// A planar four-bar, once closed automatically at its revolute c, once written as two paths
// from the world that share their end frame, closed by a LoopClosure (path 1 the reference).
const char* kFourBarCut = R"(
model FourBarCut
  import Mechanics.*;
  World world;
  Revolute a(phi(start = 1.2, fixed = true), w(start = 1, fixed = true));
  FixedTranslation crank(r = {1, 0, 0});
  Revolute b(phi(start = -1.0));
  FixedTranslation coupler(r = {2, 0, 0});
  Revolute c(cut = true);
  FixedTranslation rocker(r = {1.5, 0, 0});
  Revolute d(phi(start = 2.0));
  FixedTranslation ground(r = {2, 0, 0});
  Body m1(m = 1, r_cm = {0.5, 0, 0});
  Body m2(m = 1, r_cm = {1, 0, 0});
  Body m3(m = 1, r_cm = {0.75, 0, 0});
equation
  connect(world.frame, a.frame_a);
  connect(a.frame_b, crank.frame_a);
  connect(a.frame_b, m1.frame_a);
  connect(crank.frame_b, b.frame_a);
  connect(b.frame_b, coupler.frame_a);
  connect(b.frame_b, m2.frame_a);
  connect(coupler.frame_b, c.frame_a);
  connect(world.frame, ground.frame_a);
  connect(ground.frame_b, d.frame_a);
  connect(d.frame_b, rocker.frame_a);
  connect(d.frame_b, m3.frame_a);
  connect(rocker.frame_b, c.frame_b);
end FourBarCut;
)";

const char* kFourBarPaths = R"(
model FourBarPaths
  import Mechanics.*;
  World world;
  // path 1 (reference): a, crank, b, coupler, c
  Revolute a(phi(start = 1.2, fixed = true), w(start = 1, fixed = true));
  FixedTranslation crank(r = {1, 0, 0});
  Revolute b(phi(start = -1.0));
  FixedTranslation coupler(r = {2, 0, 0});
  Revolute c;
  // path 2: ground, d, rocker
  FixedTranslation ground(r = {2, 0, 0});
  Revolute d(phi(start = 2.0));
  FixedTranslation rocker(r = {1.5, 0, 0});
  LoopClosure closure;
  Body m1(m = 1, r_cm = {0.5, 0, 0});
  Body m2(m = 1, r_cm = {1, 0, 0});
  Body m3(m = 1, r_cm = {0.75, 0, 0});
equation
  connect(world.frame, a.frame_a);
  connect(a.frame_b, crank.frame_a);
  connect(a.frame_b, m1.frame_a);
  connect(crank.frame_b, b.frame_a);
  connect(b.frame_b, coupler.frame_a);
  connect(b.frame_b, m2.frame_a);
  connect(coupler.frame_b, c.frame_a);
  connect(world.frame, ground.frame_a);
  connect(ground.frame_b, d.frame_a);
  connect(d.frame_b, rocker.frame_a);
  connect(d.frame_b, m3.frame_a);
  connect(c.frame_b, closure.frame_a);
  connect(rocker.frame_b, closure.frame_b);
end FourBarPaths;
)";

TEST(MechanicsReactions, ExplicitPathsAndACutJointGiveTheSameMotion) {
  auto cut = compile_text("fourbar_cut", kFourBarCut, false);
  auto paths = compile_text("fourbar_paths", kFourBarPaths, false);
  ASSERT_TRUE(cut && paths);
  auto a = simulate(*cut, 2.0, 1e-3), b = simulate(*paths, 2.0, 1e-3);
  ASSERT_EQ(a.rows.size(), b.rows.size());
  // the closure of the explicit paths has one more coordinate (c.phi is a tree coordinate there)
  // and three independent rows instead of two; the motion of the shared coordinates agrees
  for (const char* q : {"a.phi", "b.phi", "d.phi"}) {
    double worst = 0;
    for (size_t k = 0; k < a.rows.size(); ++k)
      worst = std::max(worst, std::fabs(a.rows[k][column(*cut, q)] - b.rows[k][column(*paths, q)]));
    EXPECT_LT(worst, 1e-6) << q;
  }
}

}  // namespace
