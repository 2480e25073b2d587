// The two formulations of the inverse-dynamics balance (docs/inverse-dynamics.md, "The balance"):
// the equations of motion of the tree coordinates (BalanceForm::Tree) and six Newton-Euler rows
// per body with every tree joint's wrench on reaction coordinates of its own
// (BalanceForm::Bodies, the seed's literal form). They are assembled differently (subtree
// recursion projected on partial velocities against a free-body balance with explicit joint
// wrenches), so agreement on which outputs are determined, on their values and on the nullity is
// a check of each against the other; each joint kind's reaction basis is exercised.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "invdyn_models.h"
#include "mech_test_util.h"
#include "runtime/invdyn/InverseDynamics.h"

namespace {

using mbs::rt::BalanceForm;
using mbs::rt::CompiledModel;
using mbs::rt::InverseDynamics;
using mbs::rt::InverseDynamicsOptions;
using mbs::rt::InverseSample;
using mbs::testutil::compile_for_inverse;
using mbs::testutil::inverse_output;
using mbs::testutil::source_file;

std::string replace(std::string text, const std::string& from, const std::string& to) {
  size_t p = text.find(from);
  EXPECT_NE(p, std::string::npos) << from;
  if (p != std::string::npos) text.replace(p, from.size(), to);
  return text;
}

struct Comparison {
  int samples = 0;
  int unique_outputs = 0;  // determined in the last sample
  int not_determined = 0;  // not determined in the last sample
  int nullity_tree = 0, nullity_bodies = 0, rank_bodies = 0;
  double worst = 0;  // largest difference of a determined output, relative to its largest value
};

// Samples t0, t0 + h, ..., t_end with both forms: the same outputs, determined in the same
// samples, with the same values (relative to each output's largest magnitude over the run).
Comparison compare_forms(const std::shared_ptr<const CompiledModel>& m, double t_end, double h) {
  Comparison c;
  InverseDynamicsOptions ot, ob;
  ob.balance = BalanceForm::Bodies;
  InverseDynamics tree(m, ot), bodies(m, ob);
  EXPECT_EQ(tree.outputs().size(), bodies.outputs().size());
  if (tree.outputs().size() != bodies.outputs().size()) return c;
  for (size_t i = 0; i < tree.outputs().size(); ++i)
    EXPECT_EQ(tree.outputs()[i].name, bodies.outputs()[i].name);
  const size_t n = tree.outputs().size();
  std::vector<double> scale(n, 0.0);
  std::vector<std::vector<double>> vt, vb;
  InverseSample st, sb;
  const double t0 = m->v0[static_cast<size_t>(m->slot_time)];
  const int steps = static_cast<int>(std::lround((t_end - t0) / h));
  for (int k = 0; k <= steps; ++k) {
    const double t = t0 + k * h;
    EXPECT_TRUE(tree.sample(t, st)) << tree.message();
    EXPECT_TRUE(bodies.sample(t, sb)) << bodies.message();
    if (::testing::Test::HasFailure()) return c;
    EXPECT_TRUE(st.rank_stable && sb.rank_stable) << "t = " << t;
    EXPECT_LT(sb.balance, 1e-9) << "t = " << t;
    c.nullity_tree = st.nullity;
    c.nullity_bodies = sb.nullity;
    c.rank_bodies = sb.rank;
    EXPECT_EQ(st.nullity, sb.nullity) << "t = " << t;
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(st.unique[i], sb.unique[i])
          << tree.outputs()[i].name << " at t = " << t << ": tree " << st.value[i] << ", bodies "
          << sb.value[i];
      if (st.unique[i]) scale[i] = std::max(scale[i], std::fabs(st.value[i]));
    }
    vt.push_back(st.value);
    vb.push_back(sb.value);
    ++c.samples;
  }
  // an output that is zero in exact arithmetic (the axial torque of a passive revolute: exactly
  // 0 on the body-wise reaction basis, rounding of the subtree's 30 kN loads in the recursion)
  // is compared relative to a hundredth of the largest load of the run
  const double largest = *std::max_element(scale.begin(), scale.end());
  for (size_t k = 0; k < vt.size(); ++k)
    for (size_t i = 0; i < n; ++i) {
      if (!(std::isfinite(vt[k][i]) && std::isfinite(vb[k][i]))) continue;
      double d = std::fabs(vt[k][i] - vb[k][i]) / (scale[i] + 1e-2 * largest);
      if (d > c.worst) c.worst = d;
      EXPECT_LT(d, 1e-8) << tree.outputs()[i].name << " at sample " << k << ": tree " << vt[k][i]
                         << ", bodies " << vb[k][i];
    }
  for (size_t i = 0; i < n; ++i) (st.unique[i] ? c.unique_outputs : c.not_determined) += 1;
  std::printf(
      "%d samples, %d determined and %d not at the last, nullity %d, worst difference %.3g\n",
      c.samples, c.unique_outputs, c.not_determined, c.nullity_bodies, c.worst);
  return c;
}

// The slider-crank of test_invdyn.cpp with masses on every link: out-of-plane reactions not
// determined (nullity 3), in-plane ones and the crank torque determined.
const std::string kSliderCrank = [] {
  mbs::testutil::SliderCrank c("SliderCrankBodies", "pivot.phi = 1 + 2*time + 0.2*sin(5*time);");
  c.crank = "m = 0.4, r_cm = {0.05, 0, 0}, I = diagonal({1e-4, 4e-4, 4e-4})";
  c.rod = "m = 0.8, r_cm = {0.15, 0.01, 0}, I = diagonal({1e-4, 6e-3, 6e-3})";
  c.slider = "m = 2, I = diagonal({1e-3, 1e-3, 1e-3})";
  return c.text();
}();

TEST(InverseDynamicsBodies, SliderCrankGivesTheTreeAnswers) {
  auto m = compile_for_inverse("bodies_slider_crank", kSliderCrank);
  ASSERT_TRUE(m);
  // three moving bodies: 18 rows; 4 joints x 5 reaction coordinates + the crank torque = 21
  // unknowns, 15 of them the tree joints' reaction coordinates
  EXPECT_EQ(m->body_row_names.size(), 18u);
  EXPECT_EQ(m->body_reaction_names.size(), 15u);
  Comparison c = compare_forms(m, 1.0, 1e-2);
  EXPECT_EQ(c.samples, 101);
  EXPECT_EQ(c.nullity_bodies, 3);
  EXPECT_EQ(c.rank_bodies, 18);
  EXPECT_GT(c.unique_outputs, 0);
  EXPECT_GT(c.not_determined, 0);
}

// The redundant parallelogram (three cranks on one coupler, invdyn_models.h): the cranks' axial
// forces are not determined in either form.
TEST(InverseDynamicsBodies, RedundantParallelogramGivesTheTreeAnswers) {
  auto m = compile_for_inverse("bodies_parallelogram", mbs::testutil::kParallelogram);
  ASSERT_TRUE(m);
  Comparison c = compare_forms(m, 1.0, 1e-2);
  EXPECT_EQ(c.samples, 101);
  // 4 bodies, 6 one-coordinate joints: 24 rows, 30 reaction coordinates + 1 effort; the
  // mobility is 1, so 6*4 - 5*6 - 1 = -7: a nullspace of 7
  EXPECT_EQ(c.nullity_bodies, 7);
  EXPECT_GT(c.not_determined, 0);
}

// The spatial RSUR four-bar of the examples with its crank prescribed: a Universal joint in the
// tree (reactions: three forces and the torque about n_a x n_b) and a cut Spherical joint.
TEST(InverseDynamicsBodies, SpatialFourBarWithUniversalAndSphericalGivesTheTreeAnswers) {
  std::string text = source_file("examples/mechanics/spatial_four_bar.mbs");
  text = replace(text, "phi(start = 0, fixed = true), w(start = 8, fixed = true)",
                 "prescribed = true, phi(start = 0)");
  text = replace(text, "end SpatialFourBar;", "  crank.phi = 8*time;\nend SpatialFourBar;");
  auto m = compile_for_inverse("bodies_spatial_four_bar", text);
  ASSERT_TRUE(m);
  Comparison c = compare_forms(m, 0.5, 5e-3);
  EXPECT_EQ(c.samples, 101);
  // a spatial loop without redundancy: everything is determined (6*3 = 5+5+4+3+1 unknowns)
  EXPECT_EQ(c.nullity_bodies, 0);
  EXPECT_EQ(c.not_determined, 0);
}

// An open chain of a Cylindrical, a Planar, a Universal and a Prismatic joint, every coordinate
// prescribed: every effort and every reaction is determined, and the body-wise joint wrenches
// (each kind's own reaction basis) must equal the subtree recursion's.
const char* kJointZoo = R"(
model JointZoo
  import Mechanics.*;
  World world(g = {0.5, -9.81, 0.3});
  Cylindrical cyl(n = {0, 0, 1}, prescribed = true);
  Body b1(m = 2, r_cm = {0.1, 0.05, 0.2}, I = diagonal({0.02, 0.03, 0.04}));
  FixedTranslation t1(r = {0.3, 0, 0.1});
  Planar pl(n = {0, 1, 0}, n_x = {1, 0, 0}, prescribed = true);
  Body b2(m = 1.5, r_cm = {0.05, 0.1, 0}, I = diagonal({0.01, 0.02, 0.015}));
  FixedRotation t2(n = {1, 1, 0}, angle = 0.4, r = {0.2, 0.1, 0});
  Universal u(n_a = {1, 0, 0}, n_b = {0, 1, 0}, prescribed = true);
  Body b3(m = 1, r_cm = {0, 0, -0.2}, I = diagonal({0.01, 0.01, 0.002}));
  FixedTranslation t3(r = {0, 0, -0.4});
  Prismatic pr(n = {0.6, 0, 0.8}, prescribed = true);
  Body b4(m = 0.7, r_cm = {0.02, 0, 0}, I = diagonal({0.001, 0.002, 0.002}));
  LineForce spring(f = 50*(spring.L - 0.5));
equation
  connect(world.frame, cyl.frame_a);   connect(cyl.frame_b, b1.frame_a);
  connect(cyl.frame_b, t1.frame_a);    connect(t1.frame_b, pl.frame_a);
  connect(pl.frame_b, b2.frame_a);     connect(pl.frame_b, t2.frame_a);
  connect(t2.frame_b, u.frame_a);      connect(u.frame_b, b3.frame_a);
  connect(u.frame_b, t3.frame_a);      connect(t3.frame_b, pr.frame_a);
  connect(pr.frame_b, b4.frame_a);
  connect(world.frame, spring.frame_a); connect(b4.frame_a, spring.frame_b);
  cyl.s = 0.1*sin(time);        cyl.phi = 0.5*time;
  pl.x = 0.2*cos(2*time);       pl.y = 0.1*time^2;        pl.phi = 0.3*sin(3*time);
  u.phi_a = 0.4*sin(time);      u.phi_b = 0.2 + 0.1*time;
  pr.s = 0.1 + 0.05*sin(4*time);
end JointZoo;
)";

TEST(InverseDynamicsBodies, EveryJointKindsReactionBasisGivesTheRecursionsWrench) {
  auto m = compile_for_inverse("bodies_joint_zoo", kJointZoo);
  ASSERT_TRUE(m);
  // reaction coordinates: cylindrical 4, planar 3, universal 4, prismatic 5
  EXPECT_EQ(m->body_reaction_names.size(), 16u);
  Comparison c = compare_forms(m, 1.0, 1e-2);
  EXPECT_EQ(c.samples, 101);
  EXPECT_EQ(c.nullity_bodies, 0);
  EXPECT_EQ(c.not_determined, 0);
  // efforts (2 + 3 + 2 + 1) and 6 wrench components of 4 joints
  EXPECT_EQ(c.unique_outputs, 8 + 24);
}

// Outputs of the user's choice: a CutForceTorque sensor resolved in the world and a variable of
// the model computed from an effort (the crank power) are analysed like the joint wrenches. The
// slider (m = 2, on a passive track along x) gets its x acceleration from the rod alone:
// sensor.f[1] = m x'' with x = r cos(phi) + sqrt(l^2 - r^2 sin^2 phi), phi = 1 + 2t; the power
// is tau * 2.
const std::string kChosenOutputs = [] {
  mbs::testutil::SliderCrank c("ChosenOutputs",
                               "pivot.phi = 1 + 2*time;\n  P = pivot.tau*der(pivot.phi);");
  c.sensor = true;
  c.declarations = "  Real P \"crank power\";\n";
  return c.text();
}();

TEST(InverseDynamicsBodies, SensorsAndModelVariablesOfTheUsersChoiceAreOutputs) {
  auto m = compile_for_inverse("bodies_chosen_outputs", kChosenOutputs);
  ASSERT_TRUE(m);
  InverseDynamicsOptions o;
  InverseDynamics id(m, o);
  const int fx = inverse_output(id, "sensor.f[1]"), P = inverse_output(id, "P"),
            tau = inverse_output(id, "pivot.tau");
  const double r = 0.1, l = 0.3, ms = 2, w = 2;
  InverseSample s;
  double worst = 0;
  for (int k = 0; k <= 100; ++k) {
    const double t = k * 1e-2;
    ASSERT_TRUE(id.sample(t, s)) << id.message();
    ASSERT_TRUE(s.unique[fx] && s.unique[P] && s.unique[tau]) << "t = " << t;
    const double d2x = mbs::testutil::slider_x(r, l, 1 + w * t).d2x;
    worst = std::max(worst, std::fabs(s.value[fx] - ms * d2x * w * w));
    EXPECT_NEAR(s.value[P], w * s.value[tau], 1e-12);
  }
  EXPECT_LT(worst, 1e-10);
  Comparison c = compare_forms(m, 1.0, 1e-2);
  EXPECT_EQ(c.samples, 101);
}

// The example manipulator (14 bodies, four loops, redundant side links): the seed's count, 84
// equations and 97 unknowns with nullity 13, and the same answers as the default form.
TEST(InverseDynamicsBodies, HybridManipulatorGivesTheTreeAnswers) {
  std::string text = source_file("examples/mechanics/hybrid_manipulator.mbs");
  auto m = compile_for_inverse("bodies_hybrid_manipulator", text);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->body_row_names.size(), 84u);
  EXPECT_EQ(m->body_reaction_names.size(),
            70u);  // 14 tree joints x 5; + 7 efforts + 20 multipliers
  EXPECT_EQ(m->n_z, 27);
  Comparison c = compare_forms(m, 30.0, 0.5);
  EXPECT_EQ(c.samples, 61);
  EXPECT_EQ(c.nullity_bodies, 13);
  EXPECT_EQ(c.nullity_tree, 13);
  EXPECT_GT(c.not_determined, 0);
}

}  // namespace
