// The multibody examples (examples/mechanics/*.mbs), compiled and simulated, checked against
// references that do not come from this code: exact periods (elliptic integrals), closed-form
// loop kinematics, conservation laws computed here from the joint coordinates or the sensor
// outputs, a second formulation of the same system in plain equations, and the convergence order
// of the integrator.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <numbers>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/driver/Compile.h"
#include "runtime/solvers/Integrator.h"

namespace {

constexpr double kPi = std::numbers::pi;
// standard gravity, the World's default (Modelica.Constants.g_n, as the MSL's World): the
// examples that keep the default
constexpr double kG = 9.80665;
// the examples that state World(g = {0, 0, -9.81}) (slider_crank, spatial_four_bar, heavy_top)
constexpr double kG981 = 9.81;

std::string mech_example(const std::string& name) {
  return std::string(MBS_SOURCE_DIR) + "/examples/mechanics/" + name;
}

struct Compiled {
  mbs::CompileResult result;
  std::string diagnostics;  // warnings (and errors) as the user sees them
};

Compiled compile_file(const std::string& path, std::map<std::string, double> overrides = {}) {
  mbs::CompileOptions o;
  o.file = path;
  o.overrides = std::move(overrides);
  std::ostringstream emit, diag;
  Compiled c;
  c.result = mbs::compile(o, emit, diag);
  c.diagnostics = diag.str();
  EXPECT_TRUE(c.result.ok) << c.diagnostics;
  return c;
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
};

SimRun simulate(const mbs::rt::CompiledModel& m, double t_end, double h, double rho = 0.9,
                double rtol = 1e-8, double atol = 1e-10) {
  mbs::rt::SolverOptions o;
  o.t_end = t_end;
  o.h = h;
  o.rho_inf = rho;
  o.rtol = rtol;
  o.atol = atol;
  auto solver = mbs::rt::make_integrator(m, o);
  SimRun run;
  run.status = solver->run([&](double t, std::span<const double> out) {
    run.t.push_back(t);
    run.rows.emplace_back(out.begin(), out.end());
    return 0;
  });
  return run;
}

int column(const mbs::rt::CompiledModel& m, const std::string& name) {
  for (size_t i = 0; i < m.output_names.size(); ++i)
    if (m.output_names[i] == name) return static_cast<int>(i);
  ADD_FAILURE() << "no column " << name;
  return 0;
}

// angle difference wrapped to (-pi, pi]
double angle_diff(double a, double b) {
  return std::remainder(a - b, 2 * kPi);
}

// complete elliptic integral of the first kind K(k) = pi / (2 AGM(1, sqrt(1 - k^2)))
double elliptic_k(double k) {
  double a = 1, b = std::sqrt(1 - k * k);
  for (int i = 0; i < 40 && std::fabs(a - b) > 1e-16 * a; ++i) {
    double an = (a + b) / 2;
    b = std::sqrt(a * b);
    a = an;
  }
  return kPi / (2 * a);
}

// exact period of a compound pendulum, J about the pivot, released at rest from theta0
double pendulum_period(double J, double m, double d, double theta0) {
  return 4 * std::sqrt(J / (m * kG * d)) * elliptic_k(std::sin(theta0 / 2));
}

// times at which column c changes sign (linear interpolation between output points)
std::vector<double> sign_changes(const SimRun& run, int c) {
  std::vector<double> out;
  for (size_t i = 1; i < run.t.size(); ++i) {
    double a = run.rows[i - 1][c], b = run.rows[i][c];
    if ((a < 0 && b >= 0) || (a > 0 && b <= 0))
      out.push_back(run.t[i - 1] + (run.t[i] - run.t[i - 1]) * a / (a - b));
  }
  return out;
}

// A planar open chain of links from the world origin, each turned by its absolute angle about z;
// link i starts at the tip of link i-1. Local vectors are in the link's own frame (before the
// rotation). Returns kinetic + potential energy for gravity -g along world y.
struct PlanarLink {
  double m, izz;
  std::array<double, 2> cm, tip;
};
double planar_energy(const std::vector<PlanarLink>& links, const std::vector<double>& theta,
                     const std::vector<double>& omega, double gy) {
  double px = 0, py = 0, vx = 0, vy = 0, e = 0;
  for (size_t i = 0; i < links.size(); ++i) {
    double c = std::cos(theta[i]), s = std::sin(theta[i]), w = omega[i];
    auto rot = [&](std::array<double, 2> r) {
      return std::array<double, 4>{r[0] * c - r[1] * s, r[0] * s + r[1] * c,
                                   w * (-r[0] * s - r[1] * c), w * (r[0] * c - r[1] * s)};
    };
    auto cm = rot(links[i].cm), tip = rot(links[i].tip);
    double cvx = vx + cm[2], cvy = vy + cm[3];
    e += 0.5 * links[i].m * (cvx * cvx + cvy * cvy) + 0.5 * links[i].izz * w * w +
         links[i].m * gy * (py + cm[1]);
    px += tip[0];
    py += tip[1];
    vx += tip[2];
    vy += tip[3];
  }
  return e;
}

// ------------------------------------------------------------------------------------ pendulum

TEST(MechanicsExamples, RigidPendulumPeriodIsTheEllipticIntegralPeriod) {
  // J = Izz + m d^2 = 0.01 + 0.25. Released at rest, w changes sign every half period. At
  // theta0 = 1 the exact period is 1.5428175 s at g = 9.80665 (the small-angle formula gives
  // 1.4468 s, 6 % less); at 2.5 rad it is 2.3771365 s (the small-angle one is 39 % off).
  // Generalized-alpha's period error is O((omega h)^2): measured 2.1e-6 s (theta0 = 1) and 7.0e-7 s
  // (2.5) at h = 1e-3, 5.4e-7 and 1.7e-7 at h = 5e-4; linear interpolation of the zero crossing
  // adds less. The tolerance 1e-5 s is 6.5e-6 relative: a relative error of 2e-5 in J, m, g or d
  // would fail it. Halving h must shrink the error at least 2.5x (measured 4.0x).
  for (double theta0 : {1.0, 2.5}) {
    auto c = compile_file(mech_example("pendulum.mbs"), {{"theta0", theta0}});
    ASSERT_TRUE(c.result.model);
    const auto& m = *c.result.model;
    EXPECT_EQ(m.n_q, 1);
    EXPECT_EQ(m.n_z, 0);
    double T = pendulum_period(0.26, 1, 0.5, theta0);
    std::vector<double> err;
    for (double h : {1e-3, 5e-4}) {
      SimRun run = simulate(m, 2.5, h);
      ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished);
      auto z = sign_changes(run, column(m, "j.w"));
      ASSERT_GE(z.size(), 2u);
      EXPECT_NEAR(z[0], T / 2, 1e-5) << "theta0 " << theta0 << " h " << h;
      EXPECT_NEAR(z[1], T, 1e-5) << "theta0 " << theta0 << " h " << h;
      err.push_back(std::fabs(z[1] - T));
      // the swing is symmetric: the angle reaches -theta0
      double phi_min = 0;
      for (const auto& row : run.rows) phi_min = std::min(phi_min, row[column(m, "j.phi")]);
      EXPECT_NEAR(phi_min, -theta0, 1e-5);
    }
    EXPECT_LT(err[1], err[0] / 2.5) << "period error " << err[0] << " -> " << err[1];
  }
}

TEST(MechanicsExamples, PointMassPendulumEqualsThePlainCartesianModel) {
  // examples/pendulum.mbs: a point mass on a massless rod in x, y with a multiplier and
  // x^2 + y^2 = L^2 (m = 1, L = 1, released at (1, 0)). The same pendulum as a Revolute and a
  // Body without inertia: x = d sin(phi), y = -d cos(phi). The two are different discretisations
  // (one coordinate against two plus a multiplier), so they agree to the integrator's O(h^2)
  // error: measured 7.0e-8 at h = 1e-4 over 1 s; bound 5e-7 (a relative error of 1e-5 in g or
  // L would exceed it). A wrong sign of gravity or of the angle would be off by O(1).
  // examples/pendulum.mbs states g = 9.81; set to the World's default standard gravity
  auto plain = compile_file(std::string(MBS_SOURCE_DIR) + "/examples/pendulum.mbs", {{"g", kG}});
  auto mech =
      compile_file(mech_example("pendulum.mbs"), {{"d", 1.0}, {"Izz", 0.0}, {"theta0", kPi / 2}});
  ASSERT_TRUE(plain.result.model && mech.result.model);
  SimRun a = simulate(*plain.result.model, 1.0, 1e-4);
  SimRun b = simulate(*mech.result.model, 1.0, 1e-4);
  ASSERT_EQ(a.status, mbs::rt::SolveStatus::Finished);
  ASSERT_EQ(b.status, mbs::rt::SolveStatus::Finished);
  ASSERT_EQ(a.t.size(), b.t.size());
  int cx = column(*plain.result.model, "x"), cy = column(*plain.result.model, "y");
  int cp = column(*mech.result.model, "j.phi");
  double worst = 0;
  for (size_t i = 0; i < a.t.size(); ++i) {
    double phi = b.rows[i][cp];
    worst = std::max(worst, std::fabs(a.rows[i][cx] - std::sin(phi)));
    worst = std::max(worst, std::fabs(a.rows[i][cy] + std::cos(phi)));
  }
  EXPECT_LT(worst, 5e-7);
}

TEST(MechanicsExamples, RigidPendulumEqualsAPlainModelWithInertiaAndTwoMultipliers) {
  // The compound pendulum (m = 1, d = 0.5, Izz = 0.01) in plain equations: the centre of mass
  // (x, y) and the body angle th, two pin multipliers, M q'' = f - G' lambda with the pin
  // constraints x = d sin th, y = -d cos th. The DAE pass eliminates x, y and the multipliers as
  // explicit auxiliaries, which leaves the same one-coordinate ODE as the Revolute: the two agree
  // to rounding (measured 6.7e-16 over 2 s at h = 1e-4); bound 1e-12, so any difference in the
  // mechanics' inertia, centre of mass or gravity term fails it.
  std::string path = write_temp("compound.mbs", R"(
model CompoundCartesian
  parameter Real m = 1, d = 0.5, Izz = 0.01, g = 9.80665, theta0 = 1;
  Real x(start = d*sin(theta0)), y(start = -d*cos(theta0)), th(start = theta0);
  Real l1, l2;
equation
  m*der(der(x)) = -l1;
  m*der(der(y)) = -m*g - l2;
  Izz*der(der(th)) = d*cos(th)*l1 + d*sin(th)*l2;
  x - d*sin(th) = 0;
  y + d*cos(th) = 0;
end CompoundCartesian;
)");
  auto plain = compile_file(path);
  auto mech = compile_file(mech_example("pendulum.mbs"));
  ASSERT_TRUE(plain.result.model && mech.result.model);
  SimRun a = simulate(*plain.result.model, 2.0, 1e-4);
  SimRun b = simulate(*mech.result.model, 2.0, 1e-4);
  ASSERT_EQ(a.status, mbs::rt::SolveStatus::Finished);
  ASSERT_EQ(b.status, mbs::rt::SolveStatus::Finished);
  ASSERT_EQ(a.t.size(), b.t.size());
  int cth = column(*plain.result.model, "th"), cp = column(*mech.result.model, "j.phi");
  double worst = 0;
  for (size_t i = 0; i < a.t.size(); ++i)
    worst = std::max(worst, std::fabs(a.rows[i][cth] - b.rows[i][cp]));
  EXPECT_LT(worst, 1e-12);
}

// ------------------------------------------------------------------------------ double pendulum

TEST(MechanicsExamples, DoublePendulumConservesEnergyWithSecondOrderError) {
  // Two uniform rods (m = 1, L = 1, I = m L^2 / 12) released horizontal at rest: E = 0 exactly.
  // The energy is computed here from the joint angles (absolute angles phi1, phi1 + phi2). With
  // rho_inf = 1 the method is the trapezoidal rule: no numerical dissipation, energy error O(h^2).
  // Measured over 2 s: 1.53e-3, 3.83e-4, 9.57e-5 J at h = 2e-3, 1e-3, 5e-4 (ratio 4.00) with a
  // Newton tolerance of 1e-12 (with the default 1e-8 the Newton error, not the step, dominates
  // below h = 1e-3). Bounds: < 5e-4 at h = 1e-3, ratios in [3.5, 4.5].
  auto c = compile_file(mech_example("double_pendulum.mbs"));
  ASSERT_TRUE(c.result.model);
  const auto& m = *c.result.model;
  EXPECT_EQ(m.n_q, 2);
  EXPECT_EQ(m.n_z, 0) << "an open chain has no constraints";
  int p1 = column(m, "j1.phi"), w1 = column(m, "j1.w"), p2 = column(m, "j2.phi"),
      w2 = column(m, "j2.w");
  std::vector<PlanarLink> rods = {{1, 1.0 / 12, {0, -0.5}, {0, -1}},
                                  {1, 1.0 / 12, {0, -0.5}, {0, -1}}};
  std::vector<double> drift;
  for (double h : {2e-3, 1e-3, 5e-4}) {
    SimRun run = simulate(m, 2.0, h, 1.0, 1e-12, 1e-14);
    ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished);
    double worst = 0, e0 = 0;
    for (size_t i = 0; i < run.t.size(); ++i) {
      const auto& r = run.rows[i];
      double e = planar_energy(rods, {r[p1], r[p1] + r[p2]}, {r[w1], r[w1] + r[w2]}, kG);
      if (i == 0) e0 = e;
      worst = std::max(worst, std::fabs(e - e0));
    }
    EXPECT_NEAR(e0, 0.0, 1e-12);
    drift.push_back(worst);
  }
  RecordProperty("energy_drift", std::to_string(drift[0]) + " " + std::to_string(drift[1]) + " " +
                                     std::to_string(drift[2]));
  EXPECT_LT(drift[1], 5e-4);
  for (size_t i = 1; i < drift.size(); ++i) {
    EXPECT_GT(drift[i - 1] / drift[i], 3.5) << drift[i - 1] << " -> " << drift[i];
    EXPECT_LT(drift[i - 1] / drift[i], 4.5) << drift[i - 1] << " -> " << drift[i];
  }
}

// --------------------------------------------------------------------------------- slider-crank

TEST(MechanicsExamples, SliderCrankFollowsTheExactKinematicsAndTheWorkOfTheMotor) {
  auto c = compile_file(mech_example("slider_crank.mbs"));
  ASSERT_TRUE(c.result.model);
  const auto& m = *c.result.model;
  // planar loop closed by a revolute in 3-D: 3 of its 5 rows are dependent, as in every planar
  // loop: a note shown only with -v, no warning on every compile of a correct model
  EXPECT_EQ(c.diagnostics.find("redundant"), std::string::npos) << c.diagnostics;
  EXPECT_NE(std::find(c.result.diagnostic_kinds.begin(), c.result.diagnostic_kinds.end(),
                      "mech_planar_loop"),
            c.result.diagnostic_kinds.end());
  {
    mbs::CompileOptions o;
    o.file = mech_example("slider_crank.mbs");
    o.verbose = true;
    std::ostringstream emit, diag;
    ASSERT_TRUE(mbs::compile(o, emit, diag).ok) << diag.str();
    EXPECT_NE(diag.str().find(": note: the loop closed by 'pin' moves in a plane: 3 of its 5 "
                              "closure rows, those out of the plane, are redundant"),
              std::string::npos)
        << diag.str();
  }
  const double r = 0.1, l = 0.3;
  int cphi = column(m, "crank.phi"), cw = column(m, "crank.w"), cs = column(m, "slider.s"),
      cv = column(m, "slider.v"), crp = column(m, "rod_joint.phi"), crw = column(m, "rod_joint.w");
  // kinetic energy: crank (m 1, Izz 1e-3, cm r/2), rod (m 1, Izz 7.5e-3, cm l/2, absolute angle
  // phi + rod_joint.phi), slider (m 1); gravity is normal to the plane, so no potential
  std::vector<PlanarLink> links = {{1, 1e-3, {r / 2, 0}, {r, 0}}, {1, 7.5e-3, {l / 2, 0}, {l, 0}}};
  auto kinetic = [&](const std::vector<double>& row) {
    return planar_energy(links, {row[cphi], row[cphi] + row[crp]}, {row[cw], row[cw] + row[crw]},
                         0.0) +
           0.5 * row[cv] * row[cv];
  };
  std::vector<double> energy_err, velocity_err;
  for (auto [rho, h] : {std::pair{0.9, 1e-3}, std::pair{1.0, 1e-3}, std::pair{1.0, 5e-4}}) {
    SimRun run = simulate(m, 1.0, h, rho);
    ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished);
    // the fixed start values are kept, the others assembled
    EXPECT_EQ(run.rows[0][cphi], 0.5);
    EXPECT_EQ(run.rows[0][cw], 2.0);
    // Position: s = r cos(phi) + sqrt(l^2 - r^2 sin^2 phi) at every step. The closure is
    // enforced at position level (index 3), so only the Newton tolerance limits it: measured
    // 2e-15.
    double worst_s = 0, worst_v = 0, worst_e = 0, work = 0, k0 = kinetic(run.rows[0]);
    for (const auto& row : run.rows) {
      double phi = row[cphi], sn = std::sin(phi), root = std::sqrt(l * l - r * r * sn * sn);
      worst_s = std::max(worst_s, std::fabs(row[cs] - (r * std::cos(phi) + root)));
      double ds = -r * sn * row[cw] - r * r * sn * std::cos(phi) * row[cw] / root;
      worst_v = std::max(worst_v, std::fabs(row[cv] - ds) / (1 + std::fabs(ds)));
      work = 0.5 * (row[cphi] - 0.5);  // the 0.5 N m motor
      worst_e = std::max(worst_e, std::fabs(kinetic(row) - k0 - work));
    }
    EXPECT_LT(worst_s, 1e-10) << "rho " << rho << " h " << h;
    EXPECT_GT(work, 8.0) << "the motor drives the crank round some three times";
    if (rho == 1.0) {
      energy_err.push_back(worst_e / work);
      velocity_err.push_back(worst_v);
    }
  }
  // Velocity and energy balance: index-3 generalized-alpha satisfies the velocity constraints
  // and the work-energy balance only to O(h^2). Measured (rho_inf = 1): slider velocity against
  // the derivative of the exact kinematics 2.73e-5, 6.83e-6 (relative to 1 + |ds/dt|), kinetic
  // energy gained minus the motor's work 7.8e-4, 1.96e-4 of the work (9.0 J) at h = 1e-3, 5e-4.
  EXPECT_LT(velocity_err[0], 5e-5);
  EXPECT_LT(energy_err[0], 1.2e-3);
  EXPECT_GT(velocity_err[0] / velocity_err[1], 3.5);
  EXPECT_LT(velocity_err[0] / velocity_err[1], 4.5);
  EXPECT_GT(energy_err[0] / energy_err[1], 3.5);
  EXPECT_LT(energy_err[0] / energy_err[1], 4.5);
}

// ------------------------------------------------------------------------------------- four-bar

TEST(MechanicsExamples, FourBarMatchesTheCircleIntersection) {
  // Crank a = 0.2 at A = 0, coupler b = 0.5, rocker c = 0.4 at D = (0.5, 0). B = a (cos phi,
  // sin phi); C is the upper intersection of the circles |C - B| = b, |C - D| = c. The rocker
  // angle is atan2(C - D), the coupler angle atan2(C - B) = jA.phi + jB.phi. Index-3
  // constraints hold to the Newton tolerance: measured 5.5e-14; bound 1e-10.
  auto c = compile_file(mech_example("four_bar.mbs"));
  ASSERT_TRUE(c.result.model);
  const auto& m = *c.result.model;
  // a planar loop: its three redundant rows are a note shown with -v only, no warning
  EXPECT_EQ(c.diagnostics.find("redundant"), std::string::npos) << c.diagnostics;
  EXPECT_NE(std::find(c.result.diagnostic_kinds.begin(), c.result.diagnostic_kinds.end(),
                      "mech_planar_loop"),
            c.result.diagnostic_kinds.end());
  SimRun run = simulate(m, 2.0, 1e-3);
  ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished);
  const double a = 0.2, b = 0.5, cc = 0.4, d = 0.5;
  int ca = column(m, "jA.phi"), cb = column(m, "jB.phi"), cd = column(m, "jD.phi");
  double worst_rocker = 0, worst_coupler = 0;
  for (const auto& row : run.rows) {
    double bx = a * std::cos(row[ca]), by = a * std::sin(row[ca]);
    double dx = d - bx, dy = -by, e = std::hypot(dx, dy);
    double along = (b * b - cc * cc + e * e) / (2 * e), across = std::sqrt(b * b - along * along);
    double px = bx + along * dx / e, py = by + along * dy / e;
    double c1x = px - across * dy / e, c1y = py + across * dx / e;
    double c2x = px + across * dy / e, c2y = py - across * dx / e;
    double cx = c1y > c2y ? c1x : c2x, cy = c1y > c2y ? c1y : c2y;
    worst_rocker = std::max(worst_rocker, std::fabs(angle_diff(row[cd], std::atan2(cy, cx - d))));
    worst_coupler = std::max(
        worst_coupler, std::fabs(angle_diff(row[ca] + row[cb], std::atan2(cy - by, cx - bx))));
  }
  EXPECT_LT(worst_rocker, 1e-10);
  EXPECT_LT(worst_coupler, 1e-10);
  EXPECT_GT(run.rows.back()[ca], 2 * kPi) << "the Grashof crank turns round";

  // Energy of the three uniform rods (m = 1, Izz = L^2/12), computed here from the joint angles:
  // crank and coupler as a chain from A, the rocker from D (the offset of D along x changes
  // neither velocity nor height). Conserved up to the O(h^2) dissipation of rho_inf = 0.9:
  // measured 3.48e-4, 8.71e-5 J over 2 s at h = 1e-3, 5e-4 (ratio 4.0). (rho_inf = 1 is not
  // used: on index-3 constraints it is the trapezoidal rule's weak instability, and the Newton
  // iteration diverges at t = 1.80 s; see the report.)
  int wa = column(m, "jA.w"), wb = column(m, "jB.w"), wd = column(m, "jD.w");
  std::vector<PlanarLink> crank_coupler = {{1, a * a / 12, {a / 2, 0}, {a, 0}},
                                           {1, b * b / 12, {b / 2, 0}, {b, 0}}};
  std::vector<PlanarLink> rocker = {{1, cc * cc / 12, {cc / 2, 0}, {cc, 0}}};
  auto energy = [&](const std::vector<double>& row) {
    return planar_energy(crank_coupler, {row[ca], row[ca] + row[cb]}, {row[wa], row[wa] + row[wb]},
                         kG) +
           planar_energy(rocker, {row[cd]}, {row[wd]}, kG);
  };
  std::vector<double> drift;
  for (double h : {1e-3, 5e-4}) {
    SimRun r2 = h == 1e-3 ? run : simulate(m, 2.0, h);
    ASSERT_EQ(r2.status, mbs::rt::SolveStatus::Finished);
    double e0 = energy(r2.rows[0]), worst = 0;
    for (const auto& row : r2.rows) worst = std::max(worst, std::fabs(energy(row) - e0));
    drift.push_back(worst);
  }
  EXPECT_LT(drift[0], 5e-4);
  EXPECT_GT(drift[0] / drift[1], 3.5) << drift[0] << " -> " << drift[1];
  EXPECT_LT(drift[0] / drift[1], 4.5) << drift[0] << " -> " << drift[1];
}

TEST(MechanicsExamples, SpatialFourBarMatchesTheClosedFormRockerAngle) {
  // RSUR: B = a (cos phi, sin phi, 0), C = D + (0, -c cos psi, -c sin psi); |C - B| = b gives
  // P cos psi + Q sin psi = R with P = -2 c (Dy - By), Q = -2 c Dz,
  // R = b^2 - (Dx - Bx)^2 - (Dy - By)^2 - Dz^2 - c^2; psi = atan2(Q, P) +- acos(R / |(P, Q)|)
  // (the branch nearest the simulated one). Measured 1.8e-15; bound 1e-10. A spatial loop closed
  // by a spherical joint has no redundant rows: no warning.
  auto c = compile_file(mech_example("spatial_four_bar.mbs"));
  ASSERT_TRUE(c.result.model);
  const auto& m = *c.result.model;
  EXPECT_EQ(c.diagnostics.find("redundant"), std::string::npos) << c.diagnostics;
  SimRun run = simulate(m, 2.0, 1e-3);
  ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished);
  const double a = 0.1, b = 0.31, cc = 0.2, D[3] = {0.05, 0.2, 0.3};
  int cphi = column(m, "crank.phi"), cpsi = column(m, "rocker.phi");
  double worst = 0;
  for (const auto& row : run.rows) {
    double bx = a * std::cos(row[cphi]), by = a * std::sin(row[cphi]);
    double ex = D[0] - bx, ey = D[1] - by, ez = D[2];
    double P = -2 * cc * ey, Q = -2 * cc * ez, R = b * b - ex * ex - ey * ey - ez * ez - cc * cc;
    double base = std::atan2(Q, P), spread = std::acos(R / std::hypot(P, Q));
    double e1 = std::fabs(angle_diff(row[cpsi], base + spread));
    double e2 = std::fabs(angle_diff(row[cpsi], base - spread));
    worst = std::max(worst, std::min(e1, e2));
  }
  EXPECT_LT(worst, 1e-10);
  EXPECT_GT(run.rows.back()[cphi], 2 * kPi) << "the crank turns round";

  // Forward kinematics through the universal joint, written here: the coupler's orientation is
  // Rx(psi + phi_a) Ry(phi_b) (n_a = x of the rocker frame, n_b = y of the frame turned by
  // phi_a), its angular velocity (psi' + w_a) x + w_b Rx(psi + phi_a) y. Its far end
  // C + R (0, 0, -b) must be the crank tip B (measured 2.6e-15; bound 1e-10), and the energy of
  // the three bodies (masses 0.5, inertias of the example, gravity -z) is conserved up to the
  // O(h^2) dissipation of rho_inf = 0.9: measured 1.16e-5, 2.89e-6 J over 2 s at h = 1e-3, 5e-4.
  using V = std::array<double, 3>;
  using Mx = std::array<V, 3>;
  auto rx = [](double t) {
    return Mx{V{1, 0, 0}, V{0, std::cos(t), -std::sin(t)}, V{0, std::sin(t), std::cos(t)}};
  };
  auto ry = [](double t) {
    return Mx{V{std::cos(t), 0, std::sin(t)}, V{0, 1, 0}, V{-std::sin(t), 0, std::cos(t)}};
  };
  auto mul = [](const Mx& A, const Mx& B) {
    Mx C{};
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 3; ++k) C[i][j] += A[i][k] * B[k][j];
    return C;
  };
  auto app = [](const Mx& A, const V& v) {
    return V{A[0][0] * v[0] + A[0][1] * v[1] + A[0][2] * v[2],
             A[1][0] * v[0] + A[1][1] * v[1] + A[1][2] * v[2],
             A[2][0] * v[0] + A[2][1] * v[1] + A[2][2] * v[2]};
  };
  auto cross = [](const V& u, const V& v) {
    return V{u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
  };
  auto dot = [](const V& u, const V& v) { return u[0] * v[0] + u[1] * v[1] + u[2] * v[2]; };
  int cw = column(m, "crank.w"), cpw = column(m, "rocker.w"), cua = column(m, "u.phi_a"),
      cuwa = column(m, "u.w_a"), cub = column(m, "u.phi_b"), cuwb = column(m, "u.w_b");
  double worst_tip = 0;
  auto energy = [&](const std::vector<double>& row) {
    double w = row[cw], psi = row[cpsi], wpsi = row[cpw];
    double e = 0.5 * 0.5 * (a / 2 * w) * (a / 2 * w) + 0.5 * 5e-4 * w * w;  // crank
    V rr = app(rx(psi), V{0, -cc / 2, 0}), vr = cross(V{wpsi, 0, 0}, rr);
    e += 0.5 * 0.5 * dot(vr, vr) + 0.5 * 2e-3 * wpsi * wpsi +
         0.5 * kG981 * (D[2] + rr[2]);  // rocker
    V cd = app(rx(psi), V{0, -cc, 0}), vc = cross(V{wpsi, 0, 0}, cd);
    Mx R = mul(rx(psi + row[cua]), ry(row[cub]));
    V yb = app(rx(psi + row[cua]), V{0, 1, 0});
    V om{wpsi + row[cuwa] + row[cuwb] * yb[0], row[cuwb] * yb[1], row[cuwb] * yb[2]};
    V rc = app(R, V{0, 0, -b / 2}), w_rc = cross(om, rc);
    V vcm{vc[0] + w_rc[0], vc[1] + w_rc[1], vc[2] + w_rc[2]};
    V om_body{dot(V{R[0][0], R[1][0], R[2][0]}, om), dot(V{R[0][1], R[1][1], R[2][1]}, om),
              dot(V{R[0][2], R[1][2], R[2][2]}, om)};
    e += 0.5 * 0.5 * dot(vcm, vcm) +
         0.5 * (4e-3 * om_body[0] * om_body[0] + 4e-3 * om_body[1] * om_body[1] +
                1e-5 * om_body[2] * om_body[2]) +
         0.5 * kG981 * (D[2] + cd[2] + rc[2]);  // coupler
    V tip = app(R, V{0, 0, -b});
    V far{D[0] + cd[0] + tip[0], D[1] + cd[1] + tip[1], D[2] + cd[2] + tip[2]};
    worst_tip = std::max({worst_tip, std::fabs(far[0] - a * std::cos(row[cphi])),
                          std::fabs(far[1] - a * std::sin(row[cphi])), std::fabs(far[2])});
    return e;
  };
  std::vector<double> drift;
  for (double h : {1e-3, 5e-4}) {
    SimRun r2 = h == 1e-3 ? run : simulate(m, 2.0, h);
    ASSERT_EQ(r2.status, mbs::rt::SolveStatus::Finished);
    double e0 = energy(r2.rows[0]), worst_e = 0;
    for (const auto& row : r2.rows) worst_e = std::max(worst_e, std::fabs(energy(row) - e0));
    drift.push_back(worst_e);
  }
  EXPECT_LT(worst_tip, 1e-10);
  EXPECT_LT(drift[0], 3e-5);
  EXPECT_GT(drift[0] / drift[1], 3.5) << drift[0] << " -> " << drift[1];
  EXPECT_LT(drift[0] / drift[1], 4.5) << drift[0] << " -> " << drift[1];
}

// ------------------------------------------------------------------------------------ heavy top

TEST(MechanicsExamples, HeavyTopConservesEnergyAndVerticalMomentumAtSecondOrder) {
  // From the FrameSensor: R (columns = body axes in world) and w (world). With Ip the inertia
  // about the pivot (I + m (|r|^2 E - r r')), E = 1/2 w' R Ip R' w + m g (R r_cm)_z and
  // L_z = (R Ip R' w)_z. Gravity exerts no torque about z and the pivot force no torque about
  // the pivot, so both are constants of the motion; rho_inf = 0.9 dissipates a little, O(h^2).
  // Measured over 2 s (max deviation from the start): energy 2.44e-4, 6.10e-5, 1.52e-5 J and
  // L_z 2.12e-6, 5.28e-7, 1.32e-7 at h = 1e-3, 5e-4, 2.5e-4 (ratios 4.0).
  // The largest tilt is the turning point of the effective potential of the symmetric top,
  // (L_z - L3 u)^2 / (2 I1' (1 - u^2)) + m g l u = m g l cos(theta0), u = cos(theta), with
  // L3 = I3 * spin, I1' = I1 + m l^2: theta_max = 2.3040653 rad; simulated 2.3040719 at h = 1e-3,
  // error falling 4x per halving.
  auto c = compile_file(mech_example("heavy_top.mbs"));
  ASSERT_TRUE(c.result.model);
  const auto& m = *c.result.model;
  const double mass = 1, rz = 0.1, I1 = 0.005, I3 = 0.002, tilt = 0.3, spin = 50;
  double Ip[3][3] = {{I1 + mass * rz * rz, 0, 0}, {0, I1 + mass * rz * rz, 0}, {0, 0, I3}};
  int cR[3][3], cw[3], cQ[4], cdQ[4];
  for (int i = 0; i < 4; ++i) {
    cQ[i] = column(m, "pivot.Q[" + std::to_string(i + 1) + "]");
    cdQ[i] = column(m, "pivot.dQ[" + std::to_string(i + 1) + "]");
  }
  for (int i = 0; i < 3; ++i) {
    cw[i] = column(m, "s.w[" + std::to_string(i + 1) + "]");
    for (int j = 0; j < 3; ++j)
      cR[i][j] = column(m, "s.R[" + std::to_string(i + 1) + "," + std::to_string(j + 1) + "]");
  }
  // reference turning point by bisection on u in (-1, cos(tilt))
  double L3 = I3 * spin, Lz0 = L3 * std::cos(tilt), I1p = I1 + mass * rz * rz;
  auto f = [&](double u) {
    return (Lz0 - L3 * u) * (Lz0 - L3 * u) / (2 * I1p * (1 - u * u)) + mass * kG981 * rz * u -
           mass * kG981 * rz * std::cos(tilt);
  };
  double lo = -1 + 1e-9, hi = std::cos(tilt) - 1e-6;
  ASSERT_GT(f(lo), 0);
  ASSERT_LT(f(hi), 0);
  for (int i = 0; i < 200; ++i) (f((lo + hi) / 2) > 0 ? lo : hi) = (lo + hi) / 2;
  const double theta_max = std::acos(lo);

  std::vector<double> de, dl, dt;
  for (double h : {1e-3, 5e-4, 2.5e-4}) {
    SimRun run = simulate(m, 2.0, h);
    ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished);
    double e0 = 0, l0 = 0, worst_e = 0, worst_l = 0, max_tilt = 0, worst_sensor = 0, worst_norm = 0;
    for (size_t k = 0; k < run.t.size(); ++k) {
      const auto& row = run.rows[k];
      double R[3][3], w[3], J[3][3] = {}, Jw[3] = {};
      for (int i = 0; i < 3; ++i) {
        w[i] = row[cw[i]];
        for (int j = 0; j < 3; ++j) R[i][j] = row[cR[i][j]];
      }
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
          for (int p = 0; p < 3; ++p)
            for (int q = 0; q < 3; ++q) J[i][j] += R[i][p] * Ip[p][q] * R[j][q];
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) Jw[i] += J[i][j] * w[j];
      double e = 0.5 * (w[0] * Jw[0] + w[1] * Jw[1] + w[2] * Jw[2]) + mass * kG981 * R[2][2] * rz;
      double lz = Jw[2];
      if (k == 0) {
        e0 = e;
        l0 = lz;
        EXPECT_NEAR(std::acos(R[2][2]), tilt, 1e-12);
        EXPECT_NEAR(w[0] * R[0][2] + w[1] * R[1][2] + w[2] * R[2][2], spin, 1e-9);
        EXPECT_NEAR(lz, Lz0, 1e-12);
      }
      worst_e = std::max(worst_e, std::fabs(e - e0));
      worst_l = std::max(worst_l, std::fabs(lz - l0));
      max_tilt = std::max(max_tilt, std::acos(std::clamp(R[2][2], -1.0, 1.0)));
      // the sensor against the joint's quaternion {w, x, y, z}: R(Q) by the textbook formula,
      // w = 2 vec(dQ Q*) = 2 (q0 dq - dq0 q - dq x q), and |Q| = 1 (measured 4.3e-14, 4.4e-16)
      double q[4], dq[4];
      for (int i = 0; i < 4; ++i) {
        q[i] = row[cQ[i]];
        dq[i] = row[cdQ[i]];
      }
      double RQ[3][3] = {{1 - 2 * (q[2] * q[2] + q[3] * q[3]), 2 * (q[1] * q[2] - q[0] * q[3]),
                          2 * (q[1] * q[3] + q[0] * q[2])},
                         {2 * (q[1] * q[2] + q[0] * q[3]), 1 - 2 * (q[1] * q[1] + q[3] * q[3]),
                          2 * (q[2] * q[3] - q[0] * q[1])},
                         {2 * (q[1] * q[3] - q[0] * q[2]), 2 * (q[2] * q[3] + q[0] * q[1]),
                          1 - 2 * (q[1] * q[1] + q[2] * q[2])}};
      double wq[3] = {2 * (q[0] * dq[1] - dq[0] * q[1] - (dq[2] * q[3] - dq[3] * q[2])),
                      2 * (q[0] * dq[2] - dq[0] * q[2] - (dq[3] * q[1] - dq[1] * q[3])),
                      2 * (q[0] * dq[3] - dq[0] * q[3] - (dq[1] * q[2] - dq[2] * q[1]))};
      for (int i = 0; i < 3; ++i) {
        worst_sensor = std::max(worst_sensor, std::fabs(w[i] - wq[i]));
        for (int j = 0; j < 3; ++j)
          worst_sensor = std::max(worst_sensor, std::fabs(R[i][j] - RQ[i][j]));
      }
      worst_norm = std::max(worst_norm,
                            std::fabs(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3] - 1));
    }
    EXPECT_LT(worst_sensor, 1e-9) << "h " << h;
    EXPECT_LT(worst_norm, 1e-10) << "h " << h;
    de.push_back(worst_e);
    dl.push_back(worst_l);
    dt.push_back(std::fabs(max_tilt - theta_max));
  }
  RecordProperty("energy_drift",
                 std::to_string(de[0]) + " " + std::to_string(de[1]) + " " + std::to_string(de[2]));
  RecordProperty("lz_drift",
                 std::to_string(dl[0]) + " " + std::to_string(dl[1]) + " " + std::to_string(dl[2]));
  EXPECT_LT(de[0], 5e-4);
  EXPECT_LT(dl[0], 5e-6);
  EXPECT_LT(dt[0], 2e-5);
  for (size_t i = 1; i < de.size(); ++i) {
    EXPECT_GT(de[i - 1] / de[i], 3.5) << de[i - 1] << " -> " << de[i];
    EXPECT_LT(de[i - 1] / de[i], 4.5) << de[i - 1] << " -> " << de[i];
    EXPECT_GT(dl[i - 1] / dl[i], 3.5) << dl[i - 1] << " -> " << dl[i];
    EXPECT_LT(dl[i - 1] / dl[i], 4.5) << dl[i - 1] << " -> " << dl[i];
    EXPECT_GT(dt[i - 1] / dt[i], 3.0) << dt[i - 1] << " -> " << dt[i];
  }
}

// -------------------------------------------------------------------------------- parallelogram

TEST(MechanicsExamples, ParallelogramReportsRedundantRowsAndTranslatesTheCoupler) {
  // Three equal cranks, one coupler: 4 tree coordinates, 1 degree of freedom, so of the 4
  // in-plane closure rows of the two loops only 3 are independent; the other 7 rows (6 out of
  // plane and one in plane of the second loop) are removed with a warning each loop.
  auto c = compile_file(mech_example("parallelogram.mbs"));
  ASSERT_TRUE(c.result.model);
  const auto& m = *c.result.model;
  // the first loop's three are those of any planar loop (a note with -v), the second's four are
  // not (a warning)
  EXPECT_EQ(c.diagnostics.find("'jC'"), std::string::npos) << c.diagnostics;
  EXPECT_NE(c.diagnostics.find("warning: 4 of the 5 closure rows of the loop closed by 'jF' are "
                               "redundant at the initial configuration and were removed"),
            std::string::npos)
      << c.diagnostics;
  EXPECT_EQ(m.n_z, 3) << "one multiplier per kept closure row";
  SimRun run = simulate(m, 2.0, 1e-3);
  ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished);
  int ca = column(m, "jA.phi"), cb = column(m, "jB.phi"), cd = column(m, "jD.phi"),
      ce = column(m, "jE.phi");
  double worst = 0, phi_min = 0;
  for (const auto& row : run.rows) {
    worst = std::max(worst, std::fabs(row[ca] + row[cb]));  // coupler parallel to the ground
    worst = std::max(worst, std::fabs(row[cd] - row[ca]));
    worst = std::max(worst, std::fabs(row[ce] - row[ca]));
    phi_min = std::min(phi_min, row[ca]);
  }
  EXPECT_LT(worst, 1e-10);
  // The coupler translates, so the linkage is one compound pendulum: J = 3 m_c a^2 / 3 + M a^2,
  // m g d = (3 m_c / 2 + M) g a, amplitude pi/2 - 0.5 about -pi/2. Exact period 1.0955306 s;
  // measured 1.0955337 (3e-6); bound 2e-5.
  const double a = 0.3, mc = 0.5, M = 1;
  double T = pendulum_period(mc * a * a + M * a * a, 1.0, (1.5 * mc + M) * a, kPi / 2 - 0.5);
  auto z = sign_changes(run, column(m, "jA.w"));
  ASSERT_GE(z.size(), 2u);
  EXPECT_NEAR(z[1], T, 2e-5);
  EXPECT_NEAR(phi_min, -kPi + 0.5, 1e-5);
}

// ---------------------------------------------------------------------------------------- chain

TEST(MechanicsExamples, ChainOfNLinksRunsAndConservesEnergy) {
  // Links m = 1, Izz = 1e-3 (about the centre of mass), L = 0.5, centre at L/2, released
  // horizontal and straight: E(0) = 0. Energy from the joint angles (absolute angle = sum of the
  // relative ones) with rho_inf = 1 (no numerical dissipation), over 1 s. Measured at
  // h = 1e-3, 5e-4, 2.5e-4: N = 1: 7.9e-6, 2.0e-6, 4.9e-7 J; N = 3: 1.7e-3, 4.3e-4, 1.1e-4 J;
  // N = 10 (the tip whips fast): 2.1e-2, 5.3e-3, 1.3e-3 J. Checked: second-order ratios in
  // [3.5, 4.5] for every N.
  for (int n : {1, 3, 10}) {
    auto c = compile_file(mech_example("chain.mbs"), {{"N", static_cast<double>(n)}});
    ASSERT_TRUE(c.result.model) << "N = " << n;
    const auto& m = *c.result.model;
    EXPECT_EQ(m.n_q, n);
    std::vector<int> cp, cw;
    for (int i = 1; i <= n; ++i) {
      cp.push_back(column(m, "j[" + std::to_string(i) + "].phi"));
      cw.push_back(column(m, "j[" + std::to_string(i) + "].w"));
    }
    std::vector<PlanarLink> links(static_cast<size_t>(n), PlanarLink{1, 1e-3, {0.25, 0}, {0.5, 0}});
    std::vector<double> drift;
    for (double h : {1e-3, 5e-4, 2.5e-4}) {
      SimRun run = simulate(m, 1.0, h, 1.0, 1e-12, 1e-14);
      ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished) << "N = " << n << " h = " << h;
      double e0 = 0, worst = 0;
      for (size_t k = 0; k < run.t.size(); ++k) {
        std::vector<double> th, om;
        double a = 0, w = 0;
        for (int i = 0; i < n; ++i) {
          a += run.rows[k][cp[i]];
          w += run.rows[k][cw[i]];
          th.push_back(a);
          om.push_back(w);
        }
        double e = planar_energy(links, th, om, kG);
        if (k == 0) e0 = e;
        worst = std::max(worst, std::fabs(e - e0));
      }
      EXPECT_NEAR(e0, 0.0, 1e-12);
      // the chain really moves: the first link falls below the horizontal
      EXPECT_LT(run.rows.back()[cp[0]], -0.5) << "N = " << n;
      drift.push_back(worst);
    }
    for (size_t i = 1; i < drift.size(); ++i) {
      EXPECT_GT(drift[i - 1] / drift[i], 3.5)
          << "N = " << n << ": " << drift[i - 1] << " -> " << drift[i];
      EXPECT_LT(drift[i - 1] / drift[i], 4.5)
          << "N = " << n << ": " << drift[i - 1] << " -> " << drift[i];
    }
  }
}

TEST(MechanicsExamples, ChainOfOneLinkIsTheRigidPendulum) {
  // pendulum.mbs measures phi from the downward vertical, chain.mbs from world x: with d = L/2,
  // Izz = 1e-3 and theta0 = pi/2, phi_pendulum = phi_chain + pi/2 (same equations, so to
  // rounding: measured 5.6e-14 over 2 s; bound 1e-12).
  auto chain = compile_file(mech_example("chain.mbs"), {{"N", 1.0}});
  auto pend =
      compile_file(mech_example("pendulum.mbs"), {{"d", 0.25}, {"Izz", 1e-3}, {"theta0", kPi / 2}});
  ASSERT_TRUE(chain.result.model && pend.result.model);
  SimRun a = simulate(*chain.result.model, 2.0, 1e-3), b = simulate(*pend.result.model, 2.0, 1e-3);
  ASSERT_EQ(a.status, mbs::rt::SolveStatus::Finished);
  ASSERT_EQ(b.status, mbs::rt::SolveStatus::Finished);
  ASSERT_EQ(a.t.size(), b.t.size());
  int ca = column(*chain.result.model, "j[1].phi"), cb = column(*pend.result.model, "j.phi");
  int wa = column(*chain.result.model, "j[1].w"), wb = column(*pend.result.model, "j.w");
  double worst = 0;
  for (size_t i = 0; i < a.t.size(); ++i) {
    worst = std::max(worst, std::fabs(a.rows[i][ca] + kPi / 2 - b.rows[i][cb]));
    worst = std::max(worst, std::fabs(a.rows[i][wa] - b.rows[i][wb]));
  }
  EXPECT_LT(worst, 1e-12);
}

// ------------------------------------------------------------------------------------- examples

TEST(MechanicsExamples, EveryExampleRunsWithTheCommandLineCompiler) {
  for (const char* name :
       {"pendulum", "double_pendulum", "slider_crank", "four_bar", "spatial_four_bar", "heavy_top",
        "parallelogram", "chain", "msl_bodies", "sagging_arm", "heavy_top_lie_group"}) {
    std::string out = testing::TempDir() + std::to_string(getpid()) + "_" + name + ".csv";
    std::string cmd = std::string(MBS_MBSC_PATH) + " " + mech_example(std::string(name) + ".mbs") +
                      " --simulate --t-end 0.5 --output " + out + " 2>/dev/null";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream f(out);
    int lines = 0;
    for (std::string line; std::getline(f, line);) ++lines;
    EXPECT_EQ(lines, 502) << name << ": header + 501 rows";
  }
}

}  // namespace
