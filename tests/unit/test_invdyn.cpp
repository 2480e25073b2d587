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
#include "invdyn_models.h"
#include "mech_test_util.h"
#include "runtime/invdyn/InverseDynamics.h"

using mbs::testutil::compile_for_inverse;
using mbs::testutil::inverse_output;
using mbs::testutil::kParallelogram;
using mbs::testutil::slider_x;
using mbs::testutil::SliderCrank;

namespace {

using mbs::rt::CompiledModel;

// A slider-crank driven at constant crank speed, crank and rod without mass: the crank torque is
// m x'' dx/dphi (virtual work), x = r cos(phi) + sqrt(l^2 - r^2 sin^2 phi).
const std::string kSliderCrank = [] {
  SliderCrank c("SliderCrankID", "pivot.phi = 1 + w0*time;");
  c.declarations = "  parameter Real w0 = 2;\n";
  return c.text();
}();

TEST(InverseDynamics, SliderCrankTorqueIsTheClosedForm) {
  auto m = compile_for_inverse("slider_crank", kSliderCrank);
  ASSERT_TRUE(m);
  mbs::rt::InverseDynamicsOptions o;
  mbs::rt::InverseDynamics id(m, o);
  const double r = 0.1, l = 0.3, w = 2, ms = 2;
  const int tau = inverse_output(id, "pivot.tau");
  const int fz = inverse_output(id, "pin.reaction_f[3]");
  const int fx = inverse_output(id, "slide.reaction_f[2]");
  mbs::rt::InverseSample s;
  double worst = 0;
  for (int k = 0; k <= 2000; ++k) {
    double t = k * 1e-3;
    ASSERT_TRUE(id.sample(t, s)) << id.message();
    const auto x = slider_x(r, l, 1 + w * t);
    ASSERT_TRUE(s.unique[tau]);
    worst = std::max(worst, std::fabs(s.value[tau] - ms * w * w * x.d2x * x.dx));
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
// axial forces is not determined by rigid-body mechanics, while the motor torque is
// (kParallelogram, invdyn_models.h).
TEST(InverseDynamics, RedundantParallelogramReportsOnlyWhatIsDetermined) {
  auto m = compile_for_inverse("parallelogram", kParallelogram);
  ASSERT_TRUE(m);
  mbs::rt::InverseDynamicsOptions o;
  mbs::rt::InverseDynamics id(m, o);
  const int tau = inverse_output(id, "jA.tau");
  const int axial_B = inverse_output(id, "jB.reaction_f[1]");
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

// The reconstruction works per closed-chain module: the manipulator's loops are solved apart,
// and a stop names the module (the slider-crank with a rod shorter than the crank leaves its
// workspace where sin(phi) = l / r).
TEST(InverseDynamics, ModulesAreSolvedApartAndAStopNamesTheModule) {
  auto hm =
      compile_for_inverse("modules_manipulator",
                          mbs::testutil::source_file("examples/mechanics/hybrid_manipulator.mbs"));
  ASSERT_TRUE(hm);
  mbs::rt::InverseDynamicsOptions o;
  mbs::rt::InverseDynamics id(hm, o);
  mbs::rt::InverseSample s;
  ASSERT_TRUE(id.sample(0.0, s)) << id.message();
  auto modules = id.modules();
  std::string names;
  size_t coords = 0;
  for (const auto& [name, c] : modules) {
    names += name + "\n";
    coords += c.size();
    EXPECT_FALSE(c.empty());
  }
  std::printf("modules:\n%s", names.c_str());
  EXPECT_EQ(coords, static_cast<size_t>(hm->n_q));
  // in solving order: the lift loop fixes the boom, the tilt loop sits on it, the side links on
  // both
  EXPECT_EQ(names,
            "the loop closed at 'liftPin'\nthe loop closed at 'tiltPin'\n"
            "the loop closed at 'sideLPin'\nthe loop closed at 'sideRPin'\n");

  auto sc = compile_for_inverse("modules_short_rod", [] {
    SliderCrank c("ShortRod", "pivot.phi = 1 + 2*time;");
    c.l = "0.095";
    c.slide_start = "0.1";
    return c.text();
  }());
  ASSERT_TRUE(sc);
  mbs::rt::InverseDynamics short_rod(sc, o);
  int k = 0;
  while (k <= 1000 && short_rod.sample(k * 1e-3, s)) ++k;
  EXPECT_EQ(k, 127);  // sin(1 + 2 t) = 0.95 at t = 0.1266
  EXPECT_NE(short_rod.message().find("t = 0.127"), std::string::npos) << short_rod.message();
  EXPECT_NE(short_rod.message().find("module of the loop closed at 'slide'"), std::string::npos)
      << short_rod.message();
}

// The redundant rows of the parallelogram (not solved by the compiled model) are checked at
// every sample through outputs <cut joint>.closure_check[k] and their first and second time
// derivatives closure_check_v[k], closure_check_a[k]: those must be the derivatives of the
// position residual along q(t) = q + t q' + t^2/2 q'' (central differences, at a state off the
// constraints so that the residuals are not zero), and zero along the reconstructed motion.
TEST(InverseDynamics, RedundantRowsAreCheckedAtVelocityAndAccelerationLevel) {
  auto m = compile_for_inverse("parallelogram_checks", kParallelogram);
  ASSERT_TRUE(m);
  std::vector<int> pos, vel, acc;
  for (size_t c = 0; c < m->output_names.size(); ++c) {
    const std::string& n = m->output_names[c];
    if (n.find(".closure_check[") != std::string::npos) pos.push_back(static_cast<int>(c));
    if (n.find(".closure_check_v[") != std::string::npos) vel.push_back(static_cast<int>(c));
    if (n.find(".closure_check_a[") != std::string::npos) acc.push_back(static_cast<int>(c));
  }
  ASSERT_FALSE(pos.empty());
  ASSERT_EQ(pos.size(), vel.size());
  ASSERT_EQ(pos.size(), acc.size());
  std::vector<double> v = m->v0, out(m->output_names.size());
  const size_t n = static_cast<size_t>(m->n_q);
  std::vector<double> q(n), qd(n), qdd(n);
  for (size_t j = 0; j < n; ++j) {
    q[j] = v[static_cast<size_t>(m->q_slot[j])] + 0.1 * static_cast<double>(j + 1);
    qd[j] = 0.7 - 0.3 * static_cast<double>(j);
    qdd[j] = -0.4 + 0.5 * static_cast<double>(j);
  }
  const double t0 = 0.3;
  auto residuals = [&](double dt) {
    for (size_t j = 0; j < n; ++j) {
      v[static_cast<size_t>(m->q_slot[j])] = q[j] + dt * qd[j] + 0.5 * dt * dt * qdd[j];
      v[static_cast<size_t>(m->qd_slot[j])] = qd[j] + dt * qdd[j];
      v[static_cast<size_t>(m->qdd_slot[j])] = qdd[j];
    }
    v[static_cast<size_t>(m->slot_time)] = t0 + dt;
    m->outputs(v.data(), out.data());
    return out;
  };
  const double h = 1e-4;
  auto plus = residuals(h), minus = residuals(-h), at = residuals(0.0);
  double largest = 0;
  for (size_t k = 0; k < pos.size(); ++k) {
    const size_t p = static_cast<size_t>(pos[k]);
    largest = std::max(largest, std::fabs(at[static_cast<size_t>(vel[k])]));
    EXPECT_NEAR(at[static_cast<size_t>(vel[k])], (plus[p] - minus[p]) / (2 * h), 1e-7);
    EXPECT_NEAR(at[static_cast<size_t>(acc[k])], (plus[p] - 2 * at[p] + minus[p]) / (h * h), 1e-5);
  }
  EXPECT_GT(largest, 0.1);  // off the constraints: the comparison is not 0 = 0
  // along the reconstructed motion every check is at rounding level
  mbs::rt::InverseDynamicsOptions o;
  mbs::rt::InverseDynamics id(m, o);
  mbs::rt::InverseSample s;
  for (int k = 0; k <= 100; ++k) {
    ASSERT_TRUE(id.sample(k * 1e-2, s)) << id.message();
    EXPECT_LT(s.velocity, 1e-12);
    EXPECT_LT(s.acceleration, 1e-11);
  }
}

}  // namespace

// ---- appended tests: a four-bar against virtual work, and forward-inverse consistency

namespace {

constexpr double kPi = 3.14159265358979323846;

// A planar four-bar, ground A-D = 2 along x, crank a = 1, coupler b = 2, rocker c = 1.5 (a
// Grashof crank-rocker: the crank turns fully). Crank and coupler have no mass; a point mass m on
// the middle of the rocker. The loop is closed at the rocker's ground pin d.
const char* kFourBarPointMass = R"(
model FourBarPointMass
  import Mechanics.*;
  parameter Real m = 2;
  World world(g = {0, -9.81, 0});
  Revolute a(prescribed = true);
  FixedTranslation crank(r = {1, 0, 0});
  Revolute b(phi(start = -1.0));
  FixedTranslation coupler(r = {2, 0, 0});
  Revolute c(phi(start = -1.5));
  FixedTranslation rocker(r = {1.5, 0, 0});
  Body mass(m = m, r_cm = {0.75, 0, 0}, I = zeros(3, 3));
  Revolute d;
  FixedTranslation ground(r = {2, 0, 0});
equation
  connect(world.frame, a.frame_a);
  connect(a.frame_b, crank.frame_a);
  connect(crank.frame_b, b.frame_a);
  connect(b.frame_b, coupler.frame_a);
  connect(coupler.frame_b, c.frame_a);
  connect(c.frame_b, rocker.frame_a);
  connect(c.frame_b, mass.frame_a);
  connect(world.frame, ground.frame_a);
  connect(ground.frame_b, d.frame_a);
  connect(rocker.frame_b, d.frame_b);
  a.phi = 1.2 + 2*time + 0.3*sin(3*time);
end FourBarPointMass;
)";

struct V2 {
  double x = 0, y = 0;
};
V2 operator+(V2 p, V2 q) {
  return {p.x + q.x, p.y + q.y};
}
V2 operator-(V2 p, V2 q) {
  return {p.x - q.x, p.y - q.y};
}
V2 operator*(double s, V2 p) {
  return {s * p.x, s * p.y};
}
double dot(V2 p, V2 q) {
  return p.x * q.x + p.y * q.y;
}
double cross(V2 p, V2 q) {
  return p.x * q.y - p.y * q.x;
}
V2 unit(double a) {
  return {std::cos(a), std::sin(a)};
}
V2 perp(double a) {
  return {-std::sin(a), std::cos(a)};
}

// The four-bar's loop by circle intersection, its rates by the differentiated closure
// B + b u(psi) = D + c u(theta) (psi: the coupler's absolute angle, theta: the rocker's, from D).
struct FourBarState {
  double phi, phid, phidd;  // crank
  double psi, psid, psidd;  // coupler, absolute
  double th, thd, thdd;     // rocker, absolute, D -> C
  V2 B, C;
};

FourBarState four_bar(double phi, double phid, double phidd, V2 near_C) {
  const double a = 1, bl = 2, cl = 1.5;
  const V2 D{2, 0};
  FourBarState s{};
  s.phi = phi;
  s.phid = phid;
  s.phidd = phidd;
  s.B = a * unit(phi);
  // C on the circle about B (radius b) and about D (radius c): the intersection nearer near_C
  V2 e = D - s.B;
  double dd = std::sqrt(dot(e, e));
  double along = (dd * dd + bl * bl - cl * cl) / (2 * dd);
  double h = std::sqrt(bl * bl - along * along);
  V2 u = (1 / dd) * e, n{-u.y, u.x};
  V2 c1 = s.B + along * u + h * n, c2 = s.B + along * u - h * n;
  s.C = dot(c1 - near_C, c1 - near_C) < dot(c2 - near_C, c2 - near_C) ? c1 : c2;
  s.psi = std::atan2(s.C.y - s.B.y, s.C.x - s.B.x);
  s.th = std::atan2(s.C.y - D.y, s.C.x - D.x);
  // velocity: a phid perp(phi) + b psid perp(psi) = c thd perp(th)
  // [b perp(psi), -c perp(th)] [psid; thd] = rhs
  auto solve = [&](V2 rhs, double& x1, double& x2) {
    V2 k1 = bl * perp(s.psi), k2 = -cl * perp(s.th);
    double det = cross(k1, k2);
    x1 = cross(rhs, k2) / det;
    x2 = cross(k1, rhs) / det;
  };
  solve(-(a * phid) * perp(phi), s.psid, s.thd);
  // acceleration: a (phidd perp(phi) - phid^2 u(phi)) + b (psidd perp - psid^2 u) = c (thdd perp
  // - thd^2 u)
  V2 rhs = -(a * phidd) * perp(phi) + (a * phid * phid) * unit(phi) +
           (bl * s.psid * s.psid) * unit(s.psi) - (cl * s.thd * s.thd) * unit(s.th);
  solve(rhs, s.psidd, s.thdd);
  return s;
}

}  // namespace

TEST(InverseDynamics, FourBarCrankTorqueIsTheVirtualWorkOfThePointMass) {
  auto m = compile_for_inverse("four_bar_point_mass", kFourBarPointMass);
  ASSERT_TRUE(m);
  mbs::rt::InverseDynamicsOptions o;
  mbs::rt::InverseDynamics id(m, o);
  const double ms = 2, g = 9.81, cl = 1.5;
  const V2 D{2, 0};
  const int tau = inverse_output(id, "a.tau");
  const int fx = inverse_output(id, "d.reaction_f[1]"), fy = inverse_output(id, "d.reaction_f[2]");
  const int fz = inverse_output(id, "d.reaction_f[3]");
  int jb = -1, jc = -1;
  for (int j = 0; j < m->n_q; ++j) {
    if (m->q[j].name == "b.phi") jb = j;
    if (m->q[j].name == "c.phi") jc = j;
  }
  ASSERT_GE(jb, 0);
  ASSERT_GE(jc, 0);
  mbs::rt::InverseSample s;
  V2 near_C{0, 0};
  double worst_tau = 0, worst_f = 0, worst_q = 0, tau_max = 0;
  for (int k = 0; k <= 3000; ++k) {
    double t = k * 1e-3;
    ASSERT_TRUE(id.sample(t, s)) << id.message();
    double phi = 1.2 + 2 * t + 0.3 * std::sin(3 * t), phid = 2 + 0.9 * std::cos(3 * t),
           phidd = -2.7 * std::sin(3 * t);
    if (k == 0) {  // the branch the model assembled to
      near_C = unit(phi) + 2.0 * unit(phi + s.q[jb]);
    }
    FourBarState fb = four_bar(phi, phid, phidd, near_C);
    near_C = fb.C;
    // the coordinates: b.phi = psi - phi, c.phi = theta + pi - psi (the rocker frame points
    // from C to D)
    worst_q = std::max(worst_q, std::fabs(std::remainder(s.q[jb] - (fb.psi - phi), 2 * kPi)));
    worst_q =
        std::max(worst_q, std::fabs(std::remainder(s.q[jc] - (fb.th + kPi - fb.psi), 2 * kPi)));
    // the point mass P = D + c/2 u(th): acceleration, and dP/dphi = (c/2) perp(th) dth/dphi
    V2 aP = (cl / 2) * (fb.thdd * perp(fb.th) - (fb.thd * fb.thd) * unit(fb.th));
    FourBarState unit_rate = four_bar(phi, 1.0, 0.0, fb.C);
    V2 dP = (cl / 2 * unit_rate.thd) * perp(fb.th);
    V2 inertia_minus_gravity = ms * (aP - V2{0, -g});
    double tau_vw = dot(inertia_minus_gravity, dP);
    ASSERT_TRUE(s.unique[tau]) << "t = " << t;
    worst_tau = std::max(worst_tau, std::fabs(s.value[tau] - tau_vw));
    tau_max = std::max(tau_max, std::fabs(tau_vw));
    // the ground pin's force on the rocker: the coupler is a two-force member, F_C = k (C - B)/b
    // on the rocker; the rocker's moment about D gives k, its force balance F_D
    V2 eBC = 0.5 * (fb.C - fb.B);
    V2 P = D + (cl / 2) * unit(fb.th);
    double kk = cross(P - D, inertia_minus_gravity) / cross(fb.C - D, eBC);
    V2 FD = inertia_minus_gravity - kk * eBC;
    ASSERT_TRUE(s.unique[fx] && s.unique[fy]) << "t = " << t;
    worst_f =
        std::max(worst_f, std::max(std::fabs(s.value[fx] - FD.x), std::fabs(s.value[fy] - FD.y)));
    // Gruebler in space: 6 * 3 moving links - 5 * 4 revolutes = -2 for a mechanism of mobility 1:
    // three redundant constraints, so the out-of-plane force at the pin is not determined
    EXPECT_EQ(s.nullity, 3) << "t = " << t;
    EXPECT_FALSE(s.unique[fz]) << "t = " << t;
    EXPECT_TRUE(s.rank_stable) << "t = " << t;
  }
  EXPECT_GT(tau_max, 1.0);  // the check is not trivially about zeros
  EXPECT_LT(worst_q, 1e-10);
  EXPECT_LT(worst_tau, 1e-8 * tau_max);
  EXPECT_LT(worst_f, 1e-7);
  std::printf("four-bar: worst |q| %.3g rad, |tau| %.3g N m (max %.3g), |F_D| %.3g N\n", worst_q,
              worst_tau, tau_max, worst_f);
}

#include <cstdio>
#include <span>

#include "runtime/solvers/Integrator.h"

namespace {

// The four-bar with mass on every link; `%JOINT%` and `%DRIVE%` are filled in for the inverse
// model (crank prescribed) and for the forward model (crank driven by a torque of time).
const char* kFourBarMasses = R"(
model FourBarMasses
  import Mechanics.*;
  World world(g = {0, -9.81, 0});
  Revolute a%JOINT%;
  FixedTranslation crank(r = {1, 0, 0});
  Body bCrank(m = 1, r_cm = {0.5, 0, 0}, I = diagonal({0.01, 0.1, 0.1}));
  Revolute b(phi(start = -1.0));
  FixedTranslation coupler(r = {2, 0, 0});
  Body bCoupler(m = 1.5, r_cm = {1, 0, 0.1}, I = diagonal({0.01, 0.5, 0.5}));
  Revolute c(phi(start = -1.5));
  FixedTranslation rocker(r = {1.5, 0, 0});
  Body bRocker(m = 2, r_cm = {0.75, 0.05, 0}, I = diagonal({0.01, 0.4, 0.4}));
  Revolute d;
  FixedTranslation ground(r = {2, 0, 0});
equation
  connect(world.frame, a.frame_a);
  connect(a.frame_b, crank.frame_a);
  connect(a.frame_b, bCrank.frame_a);
  connect(crank.frame_b, b.frame_a);
  connect(b.frame_b, coupler.frame_a);
  connect(b.frame_b, bCoupler.frame_a);
  connect(coupler.frame_b, c.frame_a);
  connect(c.frame_b, rocker.frame_a);
  connect(c.frame_b, bRocker.frame_a);
  connect(world.frame, ground.frame_a);
  connect(ground.frame_b, d.frame_a);
  connect(rocker.frame_b, d.frame_b);
  %DRIVE%;
end FourBarMasses;
)";

std::string fill_model(std::string text, const std::string& joint, const std::string& drive) {
  text.replace(text.find("%JOINT%"), 7, joint);
  text.replace(text.find("%DRIVE%"), 7, drive);
  return text;
}

std::string num(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return std::string("(") + buf + ")";
}

std::shared_ptr<const CompiledModel> compile_forward(const std::string& name,
                                                     const std::string& text) {
  // without inverse_dynamics: redundant rows removed, the crank is free
  return mbs::testutil::compile_source(name, text);
}

int model_column(const CompiledModel& m, const std::string& name) {
  return mbs::testutil::output_column(m, name);
}

struct ForwardRun {
  std::vector<double> t;
  std::vector<std::vector<double>> rows;
  mbs::rt::SolveStatus status = mbs::rt::SolveStatus::Failed;
};

ForwardRun simulate_forward(const CompiledModel& m, double t_end, double h) {
  mbs::rt::SolverOptions o;
  o.t_end = t_end;
  o.h = h;
  auto solver = mbs::rt::make_integrator(m, o);
  ForwardRun run;
  run.status = solver->run([&](double t, std::span<const double> out) {
    run.t.push_back(t);
    run.rows.emplace_back(out.begin(), out.end());
    return 0;
  });
  return run;
}

// The crank torque as a piecewise cubic Hermite polynomial of time through (t_k, tau_k, tau'_k):
// an if-chain, since the language has no table lookup.
std::string hermite_torque(const std::vector<double>& tk, const std::vector<double>& tau,
                           const std::vector<double>& dtau, double scale) {
  std::string e;
  const size_t n = tk.size() - 1;
  for (size_t k = 0; k < n; ++k) {
    double H = tk[k + 1] - tk[k];
    double p0 = scale * tau[k], m0 = scale * H * dtau[k], p1 = scale * tau[k + 1],
           m1 = scale * H * dtau[k + 1];
    double c0 = p0, c1 = m0, c2 = -3 * p0 - 2 * m0 + 3 * p1 - m1, c3 = 2 * p0 + m0 - 2 * p1 + m1;
    std::string s = "((time - " + num(tk[k]) + ")/" + num(H) + ")";
    std::string poly = num(c0) + " + " + s + "*(" + num(c1) + " + " + s + "*(" + num(c2) + " + " +
                       s + "*" + num(c3) + "))";
    if (k + 1 < n)
      e += (k == 0 ? "if time < " : " elseif time < ") + num(tk[k + 1]) + " then " + poly;
    else
      e += (n == 1 ? "" : " else ") + poly;
  }
  return e;
}

}  // namespace

// Inverse dynamics of a prescribed crank motion gives a torque history; the forward model, the
// same mechanism with the crank free and that torque applied, must follow the prescribed motion,
// and its two closure multipliers must be the inverse run's unique ones. A torque 1% off must
// not (the comparison can fail).
TEST(InverseDynamics, ForwardSimulationWithTheRecoveredTorqueFollowsThePrescribedMotion) {
  const std::string motion = "1.2 + 2*time + 0.3*sin(3*time)";
  auto mi = compile_for_inverse(
      "four_bar_inverse", fill_model(kFourBarMasses, "(prescribed = true)", "a.phi = " + motion));
  ASSERT_TRUE(mi);
  mbs::rt::InverseDynamicsOptions o;
  mbs::rt::InverseDynamics id(mi, o);
  const int tau = inverse_output(id, "a.tau");
  const int l1 = inverse_output(id, "d.lambda[1]"), l2 = inverse_output(id, "d.lambda[2]");
  const double T = 1.0, hs = 1e-4, H = 0.02;
  const int steps = static_cast<int>(std::lround(T / hs)), every = static_cast<int>(H / hs);
  std::vector<double> tau_s, lam1, lam2;
  mbs::rt::InverseSample s;
  for (int k = 0; k <= steps + 1; ++k) {  // one sample past T for the last derivative
    ASSERT_TRUE(id.sample(k * hs, s)) << id.message();
    ASSERT_TRUE(s.unique[tau] && s.unique[l1] && s.unique[l2]) << "t = " << k * hs;
    tau_s.push_back(s.value[tau]);
    lam1.push_back(s.value[l1]);
    lam2.push_back(s.value[l2]);
  }
  std::vector<double> tk, tauk, dtauk;
  for (int k = 0; k <= steps; k += every) {
    tk.push_back(k * hs);
    tauk.push_back(tau_s[k]);
    dtauk.push_back(k == 0 ? (-3 * tau_s[0] + 4 * tau_s[1] - tau_s[2]) / (2 * hs)
                           : (tau_s[k + 1] - tau_s[k - 1]) / (2 * hs));
  }
  const std::string start = "(phi(start = 1.2, fixed = true), w(start = 2.9, fixed = true))";
  auto run_forward = [&](const std::string& name, double scale) {
    auto mf = compile_forward(
        name,
        // noEvent: the spline is C1, and an event at each knot would restart generalized-alpha,
        // whose index-3 multipliers then oscillate for a few steps as after the start
        fill_model(kFourBarMasses, start,
                   "a.tau = noEvent(" + hermite_torque(tk, tauk, dtauk, scale) + ")"));
    EXPECT_TRUE(mf);
    ForwardRun r;
    if (!mf) return std::make_pair(r, std::shared_ptr<const CompiledModel>());
    r = simulate_forward(*mf, T, 1e-3);
    EXPECT_EQ(r.status, mbs::rt::SolveStatus::Finished);
    return std::make_pair(r, mf);
  };
  auto [run, mf] = run_forward("four_bar_forward", 1.0);
  ASSERT_TRUE(mf);
  ASSERT_GT(run.t.size(), 900u);
  const int cphi = model_column(*mf, "a.phi"), cw = model_column(*mf, "a.w");
  const int f1 = model_column(*mf, "d.lambda[1]"), f2 = model_column(*mf, "d.lambda[2]");
  double worst_phi = 0, worst_w = 0, worst_lam = 0, worst_lam0 = 0, lam_max = 0;
  for (size_t i = 0; i < run.t.size(); ++i) {
    double t = run.t[i];
    double phi = 1.2 + 2 * t + 0.3 * std::sin(3 * t), w = 2 + 0.9 * std::cos(3 * t);
    worst_phi = std::max(worst_phi, std::fabs(run.rows[i][cphi] - phi));
    worst_w = std::max(worst_w, std::fabs(run.rows[i][cw] - w));
    int k = static_cast<int>(std::lround(t / hs));
    double dl =
        std::max(std::fabs(run.rows[i][f1] - lam1[k]), std::fabs(run.rows[i][f2] - lam2[k]));
    // generalized-alpha's index-3 multipliers oscillate for a few steps after the start (damped
    // by rho_inf = 0.9): at t = 0 they are the consistent initial values, then compare once the
    // transient has died out
    if (i == 0) worst_lam0 = dl;
    if (t >= 0.2) worst_lam = std::max(worst_lam, dl);
    lam_max = std::max(lam_max, std::max(std::fabs(lam1[k]), std::fabs(lam2[k])));
  }
  EXPECT_NEAR(run.rows[0][cw], 2.9, 1e-12);
  EXPECT_LT(worst_phi, 1e-5);
  EXPECT_LT(worst_w, 1e-4);
  EXPECT_LT(worst_lam0, 1e-8 * lam_max);
  EXPECT_LT(worst_lam, 1e-4 * lam_max);
  // the control: 1% more torque drifts far away from the prescribed motion
  auto [off, mo] = run_forward("four_bar_forward_off", 1.01);
  ASSERT_TRUE(mo);
  double off_phi = 0;
  for (size_t i = 0; i < off.t.size(); ++i) {
    double t = off.t[i];
    off_phi =
        std::max(off_phi, std::fabs(off.rows[i][cphi] - (1.2 + 2 * t + 0.3 * std::sin(3 * t))));
  }
  EXPECT_GT(off_phi, 100 * worst_phi);
  EXPECT_GT(off_phi, 1e-3);
  std::printf(
      "forward-inverse: worst |phi| %.3g rad, |w| %.3g rad/s, |lambda| %.3g at t = 0, "
      "%.3g from t = 0.2 (max %.3g); 1%% torque: %.3g rad\n",
      worst_phi, worst_w, worst_lam0, worst_lam, lam_max, off_phi);
}
