// Inverse dynamics (runtime/invdyn) against closed forms, finite differences and the uniqueness
// structure of redundant closed chains.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/driver/Compile.h"
#include "runtime/invdyn/InverseDynamics.h"

namespace {

using mbs::rt::CompiledModel;

std::shared_ptr<const CompiledModel> compile_for_inverse(const std::string& name,
                                                         const std::string& text) {
  std::string path = testing::TempDir() + std::to_string(getpid()) + "_" + name + ".mbs";
  std::ofstream(path) << text;
  mbs::CompileOptions o;
  o.file = path;
  o.inverse_dynamics = true;
  std::ostringstream emit, diag;
  auto r = mbs::compile(o, emit, diag);
  EXPECT_TRUE(r.ok) << diag.str();
  return r.model;
}

int output_index(const mbs::rt::InverseDynamics& id, const std::string& name) {
  for (size_t i = 0; i < id.outputs().size(); ++i)
    if (id.outputs()[i].name == name) return static_cast<int>(i);
  ADD_FAILURE() << "no output " << name;
  return 0;
}

// A slider-crank driven at constant crank speed, crank and rod without mass: the crank torque is
// m x'' dx/dphi (virtual work), x = r cos(phi) + sqrt(l^2 - r^2 sin^2 phi).
const char* kSliderCrank = R"(
model SliderCrankID
  import Mechanics.*;
  parameter Real r = 0.1;
  parameter Real l = 0.3;
  parameter Real w0 = 2;
  World world(g = {0, -9.81, 0});
  Revolute pivot(prescribed = true, phi(start = 1));
  Body crank(m = 0, r_cm = {r/2, 0, 0}, I = zeros(3, 3));
  FixedTranslation arm(r = {r, 0, 0});
  Revolute pin(phi(start = -1.2));
  Body rod(m = 0, r_cm = {l/2, 0, 0}, I = zeros(3, 3));
  FixedTranslation rodEnd(r = {l, 0, 0});
  Revolute wrist;
  Prismatic slide(n = {1, 0, 0}, s(start = 0.35));
  Body slider(m = 2, I = zeros(3, 3));
equation
  connect(world.frame, pivot.frame_a);   connect(pivot.frame_b, crank.frame_a);
  connect(crank.frame_a, arm.frame_a);   connect(arm.frame_b, pin.frame_a);
  connect(pin.frame_b, rod.frame_a);     connect(rod.frame_a, rodEnd.frame_a);
  connect(rodEnd.frame_b, wrist.frame_a);
  connect(world.frame, slide.frame_a);   connect(slide.frame_b, slider.frame_a);
  connect(wrist.frame_b, slider.frame_a);
  pivot.phi = 1 + w0*time;
end SliderCrankID;
)";

TEST(InverseDynamics, SliderCrankTorqueIsTheClosedForm) {
  auto m = compile_for_inverse("slider_crank", kSliderCrank);
  ASSERT_TRUE(m);
  mbs::rt::InverseDynamicsOptions o;
  mbs::rt::InverseDynamics id(m, o);
  const double r = 0.1, l = 0.3, w = 2, ms = 2;
  const int tau = output_index(id, "pivot.tau");
  const int fz = output_index(id, "pin.reaction_f[3]");
  const int fx = output_index(id, "slide.reaction_f[2]");
  mbs::rt::InverseSample s;
  double worst = 0;
  for (int k = 0; k <= 2000; ++k) {
    double t = k * 1e-3;
    ASSERT_TRUE(id.sample(t, s)) << id.message();
    double phi = 1 + w * t, sn = std::sin(phi), c = std::cos(phi);
    double D = std::sqrt(l * l - r * r * sn * sn);
    double x1 = -r * sn - r * r * sn * c / D;
    double x2 =
        -r * c - r * r * (c * c - sn * sn) / D - std::pow(r, 4) * sn * sn * c * c / std::pow(D, 3);
    ASSERT_TRUE(s.unique[tau]);
    worst = std::max(worst, std::fabs(s.value[tau] - ms * w * w * x2 * x1));
    // a planar closed loop: out-of-plane reactions are statically indeterminate
    EXPECT_FALSE(s.unique[fz]);
    EXPECT_TRUE(std::isnan(s.value[fz]));
    // the track's normal force is determined (in the plane)
    EXPECT_TRUE(s.unique[fx]);
    EXPECT_LT(s.closure, 1e-10);
  }
  EXPECT_LT(worst, 1e-9);
}

TEST(InverseDynamics, PassiveVelocitiesAndAccelerationsAreDerivativesOfThePositions) {
  auto m = compile_for_inverse("slider_crank_fd", kSliderCrank);
  ASSERT_TRUE(m);
  mbs::rt::InverseDynamicsOptions o;
  const double h = 1e-4;
  mbs::rt::InverseDynamics id2(m, o);
  std::vector<mbs::rt::InverseSample> r;
  for (int k = 0; k <= 10000; ++k) {
    mbs::rt::InverseSample x;
    ASSERT_TRUE(id2.sample(k * h, x)) << id2.message();
    if (k >= 4999 && k <= 5001) r.push_back(x);
  }
  ASSERT_EQ(r.size(), 3u);
  for (int j = 0; j < m->n_q; ++j) {
    double v = (r[2].q[j] - r[0].q[j]) / (2 * h);
    double a = (r[2].qd[j] - r[0].qd[j]) / (2 * h);
    double a2 = (r[2].q[j] - 2 * r[1].q[j] + r[0].q[j]) / (h * h);
    EXPECT_NEAR(r[1].qd[j], v, 1e-6) << m->q[j].name;
    EXPECT_NEAR(r[1].qdd[j], a, 1e-5) << m->q[j].name;
    EXPECT_NEAR(r[1].qdd[j], a2, 1e-3) << m->q[j].name;
  }
}

// A parallelogram (two equal cranks joined by a coupler) with a third equal crank in the middle:
// the third crank's loop is redundant, so how the coupler's load is shared between the cranks'
// axial forces is not determined by rigid-body mechanics, while the motor torque is.
const char* kParallelogram = R"(
model ParallelogramID
  import Mechanics.*;
  World world(g = {0, -9.81, 0});
  Revolute jA(prescribed = true, phi(start = 1.0));
  FixedTranslation crankA(r = {1, 0, 0});
  Body bA(m = 1, r_cm = {0.5, 0, 0}, I = zeros(3, 3));
  Revolute cA(phi(start = -1.0));
  FixedTranslation coupler(r = {2, 0, 0});
  Body bC(m = 3, r_cm = {1, 0, 0});
  FixedTranslation ground(r = {2, 0, 0});
  Revolute jB(phi(start = 1.0));
  FixedTranslation crankB(r = {1, 0, 0});
  Body bB(m = 1, r_cm = {0.5, 0, 0}, I = zeros(3, 3));
  Revolute cB(cut = true);
  FixedTranslation ground2(r = {1, 0, 0});
  Revolute jM(phi(start = 1.0));
  FixedTranslation crankM(r = {1, 0, 0});
  Body bM(m = 1, r_cm = {0.5, 0, 0}, I = zeros(3, 3));
  FixedTranslation mid(r = {1, 0, 0});
  Revolute cM(cut = true);
equation
  connect(world.frame, jA.frame_a);
  connect(jA.frame_b, crankA.frame_a);
  connect(jA.frame_b, bA.frame_a);
  connect(crankA.frame_b, cA.frame_a);
  connect(cA.frame_b, coupler.frame_a);
  connect(cA.frame_b, bC.frame_a);
  connect(world.frame, ground.frame_a);
  connect(ground.frame_b, jB.frame_a);
  connect(jB.frame_b, crankB.frame_a);
  connect(jB.frame_b, bB.frame_a);
  connect(crankB.frame_b, cB.frame_a);
  connect(coupler.frame_b, cB.frame_b);
  connect(world.frame, ground2.frame_a);
  connect(ground2.frame_b, jM.frame_a);
  connect(jM.frame_b, crankM.frame_a);
  connect(jM.frame_b, bM.frame_a);
  connect(crankM.frame_b, cM.frame_a);
  connect(cA.frame_b, mid.frame_a);
  connect(mid.frame_b, cM.frame_b);
  jA.phi = 1.0 + 0.3*sin(2*time);
end ParallelogramID;
)";

TEST(InverseDynamics, RedundantParallelogramReportsOnlyWhatIsDetermined) {
  auto m = compile_for_inverse("parallelogram", kParallelogram);
  ASSERT_TRUE(m);
  mbs::rt::InverseDynamicsOptions o;
  mbs::rt::InverseDynamics id(m, o);
  const int tau = output_index(id, "jA.tau");
  const int axial_B = output_index(id, "jB.reaction_f[1]");
  mbs::rt::InverseSample s;
  double worst = 0;
  for (int k = 0; k <= 1000; ++k) {
    double t = k * 1e-3;
    ASSERT_TRUE(id.sample(t, s)) << id.message();
    EXPECT_GE(s.nullity, 1);
    EXPECT_TRUE(s.rank_stable);
    ASSERT_TRUE(s.unique[tau]);
    // every crank turns by phi and the coupler translates on a circle of radius 1: by virtual
    // power tau = J phi'' + G cos(phi), J = 3 * 1 * 0.5^2 (the cranks' point masses) + 3 * 1^2
    // (the coupler), G = g (3 * 1 * 0.5 + 3 * 1)
    double phi = 1.0 + 0.3 * std::sin(2 * t), phid = 0.6 * std::cos(2 * t),
           phidd = -1.2 * std::sin(2 * t);
    (void)phid;
    double J = 3 * 1 * 0.25 + 3 * 1.0, G = 9.81 * (3 * 1 * 0.5 + 3 * 1.0);
    worst = std::max(worst, std::fabs(s.value[tau] - (J * phidd + G * std::cos(phi))));
    // the cranks' axial forces share the coupler's load in a way rigid mechanics cannot tell
    EXPECT_FALSE(s.unique[axial_B]);
  }
  EXPECT_LT(worst, 1e-8);
}

}  // namespace
