// Rotations integrated as a Lie group: Spherical and FreeMotion with lie_group = true
// (docs/mechanics.md, "Rotations as a Lie group"). The rotation vector theta of a chart about a
// reference rotation and the angular velocity w of the child frame are the states; after every
// step the solvers move the chart to the current rotation (rt::RotationCharts). Checked against
// an independent integration of the same rigid bodies written here (Euler's equations and the
// quaternion kinematics, classic RK4 at a step 100 times smaller), against the conservation
// laws (energy, the vertical and the body-axis angular momentum of the symmetric top, the world
// angular momentum of a torque-free body), against the exact flight of the centre of mass, and
// against the order of the explicit methods, which the chart's moving must keep.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/driver/Compile.h"
#include "runtime/fmi/Variables.h"
#include "runtime/model/ModelImage.h"
#include "runtime/model/RotationCharts.h"
#include "runtime/solvers/Integrator.h"
#include "tests/unit/cli_test_util.h"
#include "tests/unit/mech_test_util.h"

namespace {

using Vec3 = std::array<double, 3>;
using Mat3 = std::array<std::array<double, 3>, 3>;
using Quat = std::array<double, 4>;

std::string source(const std::string& rel) {
  return std::string(MBS_SOURCE_DIR) + "/" + rel;
}

struct Compiled {
  mbs::CompileResult result;
  std::string diagnostics;
};

Compiled compile_file(const std::string& path, const std::string& cache_dir = "off") {
  mbs::CompileOptions o;
  o.file = path;
  o.cache_dir = cache_dir;
  std::ostringstream emit, diag;
  Compiled c;
  c.result = mbs::compile(o, emit, diag);
  c.diagnostics = diag.str();
  return c;
}

Compiled compile_text(const std::string& name, const std::string& text,
                      const std::string& cache_dir = "off") {
  const std::string path = mbs::testutil::temp_path(name + ".mbs");
  std::ofstream(path) << text;
  return compile_file(path, cache_dir);
}

mbs::rt::SolverKind kind(const std::string& name) {
  using K = mbs::rt::SolverKind;
  static const std::map<std::string, K> kinds = {
      {"gen-alpha", K::GenAlpha}, {"newmark", K::Newmark},   {"trapezoidal", K::Trapezoidal},
      {"euler", K::Euler},        {"midpoint", K::Midpoint}, {"rk4", K::Rk44},
      {"ode23", K::Ode23},        {"dopri5", K::Dopri5}};
  return kinds.at(name);
}

using SimRun = mbs::testutil::Run;  // (Run would name testing::Test::Run in a TEST)
const auto column = mbs::testutil::output_column;

SimRun simulate(const mbs::rt::CompiledModel& m, const std::string& solver, double t_end, double h,
                double rtol = 1e-8, double atol = 1e-10) {
  mbs::rt::SolverOptions o;
  o.solver = kind(solver);
  o.t_end = t_end;
  o.h = h;
  o.rtol = rtol;
  o.atol = atol;
  return mbs::testutil::simulate(m, o);
}

// ---- the independent reference: a rigid body about a fixed point (or its centre of mass),
// Euler's equations Ip dw/dt = tau(R) - w x Ip w in the body frame and dq/dt = q (0, w) / 2,
// classic RK4 with the quaternion normalised after each step

Mat3 rotation(const Quat& q) {
  return {{{1 - 2 * (q[2] * q[2] + q[3] * q[3]), 2 * (q[1] * q[2] - q[0] * q[3]),
            2 * (q[1] * q[3] + q[0] * q[2])},
           {2 * (q[1] * q[2] + q[0] * q[3]), 1 - 2 * (q[1] * q[1] + q[3] * q[3]),
            2 * (q[2] * q[3] - q[0] * q[1])},
           {2 * (q[1] * q[3] - q[0] * q[2]), 2 * (q[2] * q[3] + q[0] * q[1]),
            1 - 2 * (q[1] * q[1] + q[2] * q[2])}}};
}

Vec3 mul(const Mat3& A, const Vec3& x) {
  Vec3 y{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) y[i] += A[i][j] * x[j];
  return y;
}

Vec3 mul_t(const Mat3& A, const Vec3& x) {
  Vec3 y{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) y[i] += A[j][i] * x[j];
  return y;
}

Vec3 cross(const Vec3& a, const Vec3& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}

Vec3 solve3(const Mat3& A, const Vec3& b) {  // Cramer's rule
  auto det = [](const Mat3& M) {
    return M[0][0] * (M[1][1] * M[2][2] - M[1][2] * M[2][1]) -
           M[0][1] * (M[1][0] * M[2][2] - M[1][2] * M[2][0]) +
           M[0][2] * (M[1][0] * M[2][1] - M[1][1] * M[2][0]);
  };
  const double d = det(A);
  Vec3 x{};
  for (int k = 0; k < 3; ++k) {
    Mat3 M = A;
    for (int i = 0; i < 3; ++i) M[i][k] = b[i];
    x[k] = det(M) / d;
  }
  return x;
}

struct RigidState {
  Quat q;
  Vec3 w;  // body frame
};

// torque(R) about the fixed point, body frame
RigidState reference(RigidState s, const Mat3& Ip, const std::function<Vec3(const Mat3&)>& torque,
                     double t_end, double h) {
  auto f = [&](const RigidState& x) {
    RigidState d;
    const Vec3 Iw = mul(Ip, x.w);
    const Vec3 tau = torque(rotation(x.q));
    const Vec3 wxIw = cross(x.w, Iw);
    d.w = solve3(Ip, {tau[0] - wxIw[0], tau[1] - wxIw[1], tau[2] - wxIw[2]});
    const Quat& q = x.q;
    const Vec3& w = x.w;
    d.q = {0.5 * (-q[1] * w[0] - q[2] * w[1] - q[3] * w[2]),
           0.5 * (q[0] * w[0] + q[2] * w[2] - q[3] * w[1]),
           0.5 * (q[0] * w[1] + q[3] * w[0] - q[1] * w[2]),
           0.5 * (q[0] * w[2] + q[1] * w[1] - q[2] * w[0])};
    return d;
  };
  auto axpy = [](const RigidState& x, double a, const RigidState& d) {
    RigidState y;
    for (int i = 0; i < 4; ++i) y.q[i] = x.q[i] + a * d.q[i];
    for (int i = 0; i < 3; ++i) y.w[i] = x.w[i] + a * d.w[i];
    return y;
  };
  const auto n = static_cast<long>(std::llround(t_end / h));
  for (long k = 0; k < n; ++k) {
    RigidState k1 = f(s), k2 = f(axpy(s, h / 2, k1)), k3 = f(axpy(s, h / 2, k2)),
               k4 = f(axpy(s, h, k3));
    for (int i = 0; i < 4; ++i) s.q[i] += h / 6 * (k1.q[i] + 2 * k2.q[i] + 2 * k3.q[i] + k4.q[i]);
    for (int i = 0; i < 3; ++i) s.w[i] += h / 6 * (k1.w[i] + 2 * k2.w[i] + 2 * k3.w[i] + k4.w[i]);
    const double norm =
        std::sqrt(s.q[0] * s.q[0] + s.q[1] * s.q[1] + s.q[2] * s.q[2] + s.q[3] * s.q[3]);
    for (double& x : s.q) x /= norm;
  }
  return s;
}

// ---- the heavy top (examples/mechanics/heavy_top_lie_group.mbs)

constexpr double kMass = 1, kL = 0.1, kI1 = 0.005, kI3 = 0.002, kTilt = 0.3, kSpin = 50, kG = 9.81;
const Mat3 kTopIp = {{{kI1 + kMass * kL * kL, 0, 0}, {0, kI1 + kMass* kL* kL, 0}, {0, 0, kI3}}};

Vec3 top_torque(const Mat3& R) {  // r_cm x (R^T m g), g = (0, 0, -g)
  return cross({0, 0, kL}, mul_t(R, {0, 0, -kMass * kG}));
}

RigidState top_start() {
  return {{std::cos(kTilt / 2), std::sin(kTilt / 2), 0, 0}, {0, 0, kSpin}};
}

struct TopColumns {
  int R[3][3], w[3], Q[4], theta[3], wb[3];
  explicit TopColumns(const mbs::rt::CompiledModel& m) {
    for (int i = 0; i < 3; ++i) {
      w[i] = column(m, "s.w[" + std::to_string(i + 1) + "]");
      theta[i] = column(m, "pivot.theta[" + std::to_string(i + 1) + "]");
      wb[i] = column(m, "pivot.w[" + std::to_string(i + 1) + "]");
      for (int j = 0; j < 3; ++j)
        R[i][j] = column(m, "s.R[" + std::to_string(i + 1) + "," + std::to_string(j + 1) + "]");
    }
    for (int i = 0; i < 4; ++i) Q[i] = column(m, "pivot.Q[" + std::to_string(i + 1) + "]");
  }
};

Mat3 matrix_at(const std::vector<double>& row, const int (&c)[3][3]) {
  Mat3 R;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) R[i][j] = row[c[i][j]];
  return R;
}

Vec3 vector_at(const std::vector<double>& row, const int (&c)[3]) {
  return {row[c[0]], row[c[1]], row[c[2]]};
}

// max |R - R_ref| and |w - w_ref| / w_scale
double deviation(const Mat3& R, const Vec3& w, const Mat3& R_ref, const Vec3& w_ref,
                 double w_scale) {
  double d = 0;
  for (int i = 0; i < 3; ++i) {
    d = std::max(d, std::fabs(w[i] - w_ref[i]) / w_scale);
    for (int j = 0; j < 3; ++j) d = std::max(d, std::fabs(R[i][j] - R_ref[i][j]));
  }
  return d;
}

// the top's rotation and world angular velocity in a row against a reference state
double deviation(const std::vector<double>& row, const TopColumns& c, const RigidState& ref) {
  const Mat3 R = rotation(ref.q);
  return deviation(matrix_at(row, c.R), vector_at(row, c.w), R, mul(R, ref.w), kSpin);
}

const mbs::rt::CompiledModel& heavy_top() {
  static Compiled c = compile_file(source("examples/mechanics/heavy_top_lie_group.mbs"));
  EXPECT_TRUE(c.result.ok) << c.diagnostics;
  return *c.result.model;
}

TEST(LieGroup, TheHeavyTopHasNoConstraintAndOneChart) {
  const auto& m = heavy_top();
  EXPECT_EQ(m.n_q, 0);
  EXPECT_EQ(m.n_z, 0);
  EXPECT_EQ(m.n_y, 6);  // theta and w
  ASSERT_EQ(m.n_rotation_charts(), 1);
  // the leading matrix is the inertia and the identity: independent of the rotation
  EXPECT_TRUE(m.constant_leading_matrix);
}

TEST(LieGroup, HeavyTopFollowsAnIndependentIntegrationWithEverySolver) {
  const auto& m = heavy_top();
  const TopColumns c(m);
  const RigidState ref = reference(top_start(), kTopIp, top_torque, 1.0, 1e-5);
  // measured at t = 1 (largest deviation of R, and of w / spin): rk4 4.7e-7 (h = 1e-3), dopri5
  // 5.7e-8 (768 steps) and ode23 1.1e-6 (10,099 steps) with rtol 1e-8 on a 1e-2 output grid;
  // gen-alpha, newmark and trapezoidal 2.9e-5 (h = 1e-4: all take the trapezoidal rule on the
  // ODE1 states). Every explicit run factors the leading matrix once, the implicit ones 3 times.
  struct Case {
    const char* solver;
    double h, tol;
  };
  for (const Case& k : {Case{"rk4", 1e-3, 2e-6}, Case{"dopri5", 1e-2, 3e-7},
                        Case{"ode23", 1e-2, 5e-6}, Case{"gen-alpha", 1e-4, 1e-4},
                        Case{"trapezoidal", 1e-4, 1e-4}, Case{"newmark", 1e-4, 1e-4}}) {
    const SimRun run = simulate(m, k.solver, 1.0, k.h);
    ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished) << k.solver;
    ASSERT_NEAR(run.t.back(), 1.0, 1e-12);
    const double d = deviation(run.rows.back(), c, ref);
    EXPECT_LT(d, k.tol) << k.solver;
    EXPECT_LE(run.stats.factorizations, 3) << k.solver;
    // every row is at a moved chart: theta = 0, Q a unit quaternion whose matrix is s.R
    for (const auto& row : run.rows) {
      for (int i = 0; i < 3; ++i) ASSERT_EQ(row[c.theta[i]], 0.0) << k.solver;
      Quat q;
      for (int i = 0; i < 4; ++i) q[i] = row[c.Q[i]];
      const Mat3 RQ = rotation(q);
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) ASSERT_NEAR(row[c.R[i][j]], RQ[i][j], 1e-14) << k.solver;
      ASSERT_NEAR(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3], 1.0, 1e-14);
    }
  }
}

TEST(LieGroup, MovingTheChartKeepsTheOrderOfTheExplicitMethods) {
  // Runge-Kutta-Munthe-Kaas: each step is the classic method on the chart's ODE about its start,
  // so rk4 stays fourth order (error / 16 per halving) and midpoint second order (/ 4).
  const auto& m = heavy_top();
  const TopColumns c(m);
  const RigidState ref = reference(top_start(), kTopIp, top_torque, 0.5, 2e-5);
  for (const auto& [solver, order] : std::map<std::string, double>{{"rk4", 4}, {"midpoint", 2}}) {
    std::vector<double> err;
    for (double h : {2e-3, 1e-3, 5e-4}) {
      const SimRun run = simulate(m, solver, 0.5, h);
      ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished);
      err.push_back(deviation(run.rows.back(), c, ref));
    }
    for (size_t i = 0; i + 1 < err.size(); ++i) {
      const double observed = std::log2(err[i] / err[i + 1]);
      EXPECT_NEAR(observed, order, 0.3) << solver << ": " << err[i] << " -> " << err[i + 1];
    }
  }
}

TEST(LieGroup, HeavyTopKeepsItsConstantsOfMotion) {
  // E = 1/2 w' Ip w + m g (R r_cm)_z, L_z = (R Ip w)_z and, for the symmetric top, the spin
  // w[3] (body frame) are constants of the motion; the largest tilt is the turning point of the
  // effective potential (bisection here, as test_mechanics_examples does for the quaternion form).
  const auto& m = heavy_top();
  const TopColumns c(m);
  const double L3 = kI3 * kSpin, Lz0 = L3 * std::cos(kTilt), I1p = kI1 + kMass * kL * kL;
  auto f = [&](double u) {
    return (Lz0 - L3 * u) * (Lz0 - L3 * u) / (2 * I1p * (1 - u * u)) + kMass * kG * kL * u -
           kMass * kG * kL * std::cos(kTilt);
  };
  double lo = -1 + 1e-9, hi = std::cos(kTilt) - 1e-6;
  for (int i = 0; i < 200; ++i) (f((lo + hi) / 2) > 0 ? lo : hi) = (lo + hi) / 2;
  const double theta_max = std::acos(lo);
  struct Case {
    const char* solver;
    double h, rtol, tol_e, tol_tilt;
  };
  // measured over 4 s: dopri5 (rtol 1e-10) energy 1.2e-10 J, L_z 9e-12 kg m2/s, spin 7e-15,
  // largest tilt 6.4e-7 rad off; gen-alpha at h = 1e-3 (the trapezoidal rule on these ODE1
  // states) 8.0e-4 J, 1.7e-4, 7e-15 and 1.1e-3 rad, second order (1.1e-5 rad at h = 1e-4)
  for (const Case& k :
       {Case{"dopri5", 1e-3, 1e-10, 1e-9, 2e-6}, Case{"gen-alpha", 1e-3, 1e-8, 2e-3, 3e-3}}) {
    const SimRun run = simulate(m, k.solver, 4.0, k.h, k.rtol, 1e-12);
    ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished) << k.solver;
    double e0 = 0, l0 = 0, worst_e = 0, worst_l = 0, worst_spin = 0, max_tilt = 0;
    for (size_t r = 0; r < run.rows.size(); ++r) {
      const auto& row = run.rows[r];
      const Mat3 R = matrix_at(row, c.R);
      const Vec3 wb = vector_at(row, c.wb);
      const Vec3 Iw = mul(kTopIp, wb);
      const double e =
          0.5 * (wb[0] * Iw[0] + wb[1] * Iw[1] + wb[2] * Iw[2]) + kMass * kG * kL * R[2][2];
      const double lz = mul(R, Iw)[2];
      if (r == 0) {
        e0 = e;
        l0 = lz;
        EXPECT_NEAR(lz, Lz0, 1e-12);
      }
      worst_e = std::max(worst_e, std::fabs(e - e0));
      worst_l = std::max(worst_l, std::fabs(lz - l0));
      worst_spin = std::max(worst_spin, std::fabs(wb[2] - kSpin));
      max_tilt = std::max(max_tilt, std::acos(std::clamp(R[2][2], -1.0, 1.0)));
    }
    EXPECT_LT(worst_e, k.tol_e) << k.solver;
    EXPECT_LT(worst_l, k.tol_e) << k.solver;
    EXPECT_LT(worst_spin, 1e-12) << k.solver;
    EXPECT_NEAR(max_tilt, theta_max, k.tol_tilt) << k.solver;
  }
}

TEST(LieGroup, AnEventOnTheRotationIsLocatedWithEverySolver) {
  // the first time the top's axis passes the horizontal (R[3,3] = 0), recorded by a
  // when-equation: located inside a step, before the chart moves; the reference is the
  // independent integration's crossing (RK4 at 1e-5, linear interpolation between its steps)
  const std::string text = R"(model TopEvent
  import Mechanics.*;
  World world(g = {0, 0, -9.81});
  Spherical pivot(lie_group = true, Q_start = {cos(0.15), sin(0.15), 0, 0},
                  w_start = 50*{0, -sin(0.3), cos(0.3)});
  Body top(m = 1, r_cm = {0, 0, 0.1}, I = diagonal({0.005, 0.005, 0.002}));
  FrameSensor s;
  discrete Real t_cross(start = -1);
equation
  connect(world.frame, pivot.frame_a);
  connect(pivot.frame_b, top.frame_a);
  connect(pivot.frame_b, s.frame);
  when s.R[3, 3] < 0 then
    t_cross = time;
  end when;
end TopEvent;
)";
  Compiled c = compile_text("top_event", text);
  ASSERT_TRUE(c.result.ok) << c.diagnostics;
  const auto& m = *c.result.model;
  // the reference crossing
  RigidState x = top_start();
  double t = 0, r33 = rotation(x.q)[2][2], t_ref = -1;
  const double h = 1e-5;
  while (t_ref < 0 && t < 1.0) {
    const RigidState next = reference(x, kTopIp, top_torque, h, h);
    const double r33_next = rotation(next.q)[2][2];
    if (r33 >= 0 && r33_next < 0) t_ref = t + h * r33 / (r33 - r33_next);
    x = next;
    r33 = r33_next;
    t += h;
  }
  ASSERT_GT(t_ref, 0.0);
  const int col = column(m, "t_cross");
  // measured: dopri5 (rtol 1e-10) 4e-12; rk4 at h = 1e-3 3.5e-8; gen-alpha (the trapezoidal
  // rule on these states) 1.6e-4 at h = 1e-3 and 1.6e-6 at h = 1e-4 (second order)
  struct Case {
    const char* solver;
    double h, tol;
  };
  for (const Case& k : {Case{"dopri5", 1e-3, 1e-10}, Case{"rk4", 1e-3, 2e-7},
                        Case{"gen-alpha", 1e-3, 5e-4}, Case{"gen-alpha", 1e-4, 5e-6}}) {
    const SimRun run = simulate(m, k.solver, 0.6, k.h, 1e-10, 1e-12);
    ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished) << k.solver;
    EXPECT_NEAR(run.rows.back()[col], t_ref, k.tol) << k.solver << " h = " << k.h;
  }
}

// ---- a free body (FreeMotion): flight and torque-free tumbling

const char* kTumbler = R"(model Tumbler
  import Mechanics.*;
  World world(g = {0, 0, -9.81});
  FreeMotion free(lie_group = true, r_start = {0, 0, 1}, v_start = {1, -0.5, 5},
                  Q_start = {0.9, 0.1, 0.3, 0.2}, w_start = {0.1, 6, 0.2});
  Body b(m = 2, r_cm = {0, 0, 0}, I = {{0.1, 0.01, 0}, {0.01, 0.2, 0}, {0, 0, 0.3}});
  FrameSensor s;
equation
  connect(world.frame, free.frame_a);
  connect(free.frame_b, b.frame_a);
  connect(free.frame_b, s.frame);
end Tumbler;
)";

TEST(LieGroup, AFreeBodyFliesExactlyAndTumblesWithConstantMomentum) {
  Compiled c = compile_text("tumbler", kTumbler);
  ASSERT_TRUE(c.result.ok) << c.diagnostics;
  const auto& m = *c.result.model;
  EXPECT_EQ(m.n_z, 0);
  ASSERT_EQ(m.n_rotation_charts(), 1);
  const Mat3 I = {{{0.1, 0.01, 0}, {0.01, 0.2, 0}, {0, 0, 0.3}}};
  // the start: w_start is resolved in frame_a (the world), the reference in the body frame
  Quat q0 = {0.9, 0.1, 0.3, 0.2};
  const double n0 = std::sqrt(0.81 + 0.01 + 0.09 + 0.04);
  for (double& x : q0) x /= n0;
  const RigidState start{q0, mul_t(rotation(q0), {0.1, 6, 0.2})};
  const RigidState ref = reference(
      start, I,
      [](const Mat3&) {
        return Vec3{0, 0, 0};
      },
      3.0, 1e-5);
  int cr[3], cw[3], cR[3][3];
  for (int i = 0; i < 3; ++i) {
    cr[i] = column(m, "free.r[" + std::to_string(i + 1) + "]");
    cw[i] = column(m, "free.w[" + std::to_string(i + 1) + "]");
    for (int j = 0; j < 3; ++j)
      cR[i][j] = column(m, "s.R[" + std::to_string(i + 1) + "," + std::to_string(j + 1) + "]");
  }
  // measured over 3 s (world momentum, energy, against the reference): dopri5 (rtol 1e-10)
  // 5.4e-15, 2.0e-14, 4.3e-13; rk4 at h = 1e-3 2.3e-11, 1.9e-12, 2.1e-11; gen-alpha at
  // h = 1e-4 4.7e-8, 9.2e-8, 1.2e-7; the flight of the centre of mass to 8e-12
  for (const char* solver : {"dopri5", "rk4", "gen-alpha"}) {
    const bool dp = std::string(solver) == "dopri5";
    const bool ga = std::string(solver) == "gen-alpha";
    const SimRun run = simulate(m, solver, 3.0, ga ? 1e-4 : 1e-3, dp ? 1e-10 : 1e-8, 1e-12);
    ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished) << solver;
    Vec3 L0{};
    double e0 = 0, worst_l = 0, worst_e = 0, worst_r = 0;
    for (size_t k = 0; k < run.rows.size(); ++k) {
      const auto& row = run.rows[k];
      const double t = run.t[k];
      const Vec3 r_exact = {1 * t, -0.5 * t, 1 + 5 * t - 0.5 * 9.81 * t * t};
      for (int i = 0; i < 3; ++i) worst_r = std::max(worst_r, std::fabs(row[cr[i]] - r_exact[i]));
      const Mat3 R = matrix_at(row, cR);
      const Vec3 w = vector_at(row, cw);
      const Vec3 Iw = mul(I, w), L = mul(R, Iw);
      const double e = 0.5 * (w[0] * Iw[0] + w[1] * Iw[1] + w[2] * Iw[2]);
      if (k == 0) {
        L0 = L;
        e0 = e;
      }
      for (int i = 0; i < 3; ++i) worst_l = std::max(worst_l, std::fabs(L[i] - L0[i]));
      worst_e = std::max(worst_e, std::fabs(e - e0));
    }
    EXPECT_LT(worst_r, 1e-9) << solver;  // a quadratic polynomial: exact for every method
    const double tol = dp ? 1e-12 : ga ? 5e-7 : 1e-10;
    EXPECT_LT(worst_l, tol) << solver;
    EXPECT_LT(worst_e, tol) << solver;
    const auto& last = run.rows.back();
    const double d =
        deviation(matrix_at(last, cR), vector_at(last, cw), rotation(ref.q), ref.w, 6.0);
    EXPECT_LT(d, dp ? 1e-11 : ga ? 1e-6 : 2e-10) << solver;
  }
}

// ---- a Lie-group joint on a moving parent: a double spherical pendulum

std::string double_ball(bool lie) {
  const std::string flag = lie ? "true" : "false";
  return R"(model DoubleBall
  import Mechanics.*;
  World world(g = {0, 0, -9.81});
  Spherical s1(lie_group = )" +
         flag + R"(, Q_start = {cos(0.4), sin(0.4), 0, 0}, w_start = {0, 0, 2});
  FixedTranslation rod1(r = {0, 0, -1});
  Body b1(m = 1, I = diagonal({0.01, 0.01, 0.01}));
  Spherical s2(lie_group = )" +
         flag + R"(, Q_start = {cos(0.2), 0, sin(0.2), 0}, w_start = {1, 0, 0});
  FixedTranslation rod2(r = {0, 0, -0.8});
  Body b2(m = 0.5, I = diagonal({0.005, 0.005, 0.005}));
  FrameSensor p1, p2;
equation
  connect(world.frame, s1.frame_a);
  connect(s1.frame_b, rod1.frame_a);
  connect(rod1.frame_b, b1.frame_a);
  connect(rod1.frame_b, s2.frame_a);
  connect(s2.frame_b, rod2.frame_a);
  connect(rod2.frame_b, b2.frame_a);
  connect(rod1.frame_b, p1.frame);
  connect(rod2.frame_b, p2.frame);
end DoubleBall;
)";
}

TEST(LieGroup, ADoubleSphericalPendulumMatchesItsQuaternionForm) {
  // the second joint's parent moves: its child's angular velocity is R^T w_parent + w and its
  // angular acceleration takes the parent's turning along. The reference is the quaternion form
  // (a second formulation, checked against closed forms in test_mechanics_examples) with gen-alpha
  // at h = 1e-5; the Lie form with dopri5 keeps the energy (both bodies' masses sit at their
  // frames' origins, with isotropic inertia).
  Compiled lie = compile_text("double_ball_lie", double_ball(true));
  Compiled quat = compile_text("double_ball_quat", double_ball(false));
  ASSERT_TRUE(lie.result.ok) << lie.diagnostics;
  ASSERT_TRUE(quat.result.ok) << quat.diagnostics;
  const auto& ml = *lie.result.model;
  const auto& mq = *quat.result.model;
  EXPECT_EQ(ml.n_z, 0);
  EXPECT_EQ(ml.n_rotation_charts(), 2);
  const SimRun a = simulate(ml, "dopri5", 1.0, 1e-2, 1e-11, 1e-13);
  const SimRun b = simulate(mq, "gen-alpha", 1.0, 1e-5);
  ASSERT_EQ(a.status, mbs::rt::SolveStatus::Finished);
  ASSERT_EQ(b.status, mbs::rt::SolveStatus::Finished);
  double worst = 0;
  for (const char* name : {"p1.r[1]", "p1.r[2]", "p1.r[3]", "p2.r[1]", "p2.r[2]", "p2.r[3]",
                           "p2.w[1]", "p2.w[2]", "p2.w[3]"})
    worst = std::max(worst,
                     std::fabs(a.rows.back()[column(ml, name)] - b.rows.back()[column(mq, name)]));
  EXPECT_LT(worst, 2e-8);  // measured 3.7e-9
  // energy of the Lie form over the run
  const double m[2] = {1, 0.5}, J[2] = {0.01, 0.005};
  double e0 = 0, drift = 0;
  for (size_t k = 0; k < a.rows.size(); ++k) {
    double e = 0;
    for (int j = 0; j < 2; ++j) {
      const std::string p = j == 0 ? "p1" : "p2";
      double v2 = 0, w2 = 0;
      for (int i = 1; i <= 3; ++i) {
        const double v = a.rows[k][column(ml, p + ".v[" + std::to_string(i) + "]")];
        const double w = a.rows[k][column(ml, p + ".w[" + std::to_string(i) + "]")];
        v2 += v * v;
        w2 += w * w;
      }
      e += 0.5 * m[j] * v2 + 0.5 * J[j] * w2 + m[j] * 9.81 * a.rows[k][column(ml, p + ".r[3]")];
    }
    if (k == 0) e0 = e;
    drift = std::max(drift, std::fabs(e - e0));
  }
  EXPECT_LT(drift, 1e-11);  // measured 3e-13 over 497 steps
}

// ---- the run-time pieces

TEST(LieGroup, MovingAChartKeepsTheRotationAndTheAngularVelocity) {
  const auto& m = heavy_top();
  std::vector<double> v = m.v0;
  const int32_t* ch = m.rotation_charts.data();
  const Vec3 theta = {0.3, -0.2, 0.7};
  for (int k = 0; k < 3; ++k) v[ch[k]] = theta[k];
  Quat ref;
  for (int k = 0; k < 4; ++k) ref[k] = v[ch[6 + k]];
  // R(Q_ref) exp([theta]x) by Rodrigues' formula, here
  const double x = std::sqrt(0.09 + 0.04 + 0.49);
  const Vec3 n = {theta[0] / x, theta[1] / x, theta[2] / x};
  Mat3 E;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      E[i][j] = (1 - std::cos(x)) * n[i] * n[j] + (i == j ? std::cos(x) : 0);
  E[0][1] -= std::sin(x) * n[2];
  E[0][2] += std::sin(x) * n[1];
  E[1][0] += std::sin(x) * n[2];
  E[1][2] -= std::sin(x) * n[0];
  E[2][0] -= std::sin(x) * n[1];
  E[2][1] += std::sin(x) * n[0];
  const Mat3 R0 = rotation(ref);
  Mat3 expected{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k) expected[i][j] += R0[i][k] * E[k][j];
  mbs::rt::RotationCharts charts(m);
  charts.move(v.data());
  Quat moved;
  for (int k = 0; k < 4; ++k) moved[k] = v[ch[6 + k]];
  const Mat3 R = rotation(moved);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_NEAR(R[i][j], expected[i][j], 1e-15);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(v[ch[k]], 0.0);
    const int32_t y = charts.theta_y()[k];
    EXPECT_EQ(v[m.yd_slot[y]], v[ch[3 + k]]);  // der(theta) = w at theta = 0
  }
}

TEST(LieGroup, ASnapshotContinuesBitwise) {
  // the chart's reference is a discrete value of the symbol vector: saved and restored with it
  const auto& m = heavy_top();
  for (const char* solver : {"gen-alpha", "dopri5"}) {
    mbs::rt::SolverOptions o;
    o.solver = kind(solver);
    o.t_end = 0.4;
    o.h = 1e-3;
    auto a = mbs::rt::make_integrator(m, o);
    ASSERT_EQ(a->initialize(), mbs::rt::SolveStatus::Ok);
    for (int i = 0; i < 150; ++i) ASSERT_EQ(a->step(), mbs::rt::SolveStatus::Ok);
    std::vector<double> snapshot;
    ASSERT_TRUE(a->save(snapshot));
    ASSERT_EQ(a->run(nullptr), mbs::rt::SolveStatus::Finished);
    const std::vector<double> end(a->symbols().begin(), a->symbols().end());
    auto b = mbs::rt::make_integrator(m, o);
    ASSERT_TRUE(b->restore(snapshot));
    ASSERT_EQ(b->run(nullptr), mbs::rt::SolveStatus::Finished);
    const std::vector<double> again(b->symbols().begin(), b->symbols().end());
    ASSERT_EQ(end.size(), again.size());
    for (size_t i = 0; i < end.size(); ++i)
      EXPECT_EQ(std::memcmp(&end[i], &again[i], sizeof(double)), 0) << solver << " slot " << i;
  }
}

TEST(LieGroup, TheModelImageCarriesTheCharts) {
  const auto& m = heavy_top();
  const std::string image = mbs::rt::write_model_image(m);
  mbs::rt::CompiledModel back;
  ASSERT_EQ(mbs::rt::read_model_image(image, back), "");
  EXPECT_EQ(back.rotation_charts, m.rotation_charts);
  // a chart slot out of range is a damaged image, not a crash
  mbs::rt::CompiledModel bad = m;
  bad.rotation_charts[7] = bad.n_v + 3;
  mbs::rt::CompiledModel read;
  const std::string error = mbs::rt::read_model_image(mbs::rt::write_model_image(bad), read);
  EXPECT_NE(error.find("rotation charts"), std::string::npos) << error;
}

TEST(LieGroup, ACachedCompileRunsTheSame) {
  const std::string dir = testing::TempDir() + std::to_string(getpid()) + "_lie_cache";
  Compiled cold = compile_text("tumbler_cached", kTumbler, dir);
  ASSERT_TRUE(cold.result.ok) << cold.diagnostics;
  Compiled warm = compile_text("tumbler_cached", kTumbler, dir);
  ASSERT_TRUE(warm.result.ok) << warm.diagnostics;
  EXPECT_TRUE(warm.result.model_cache_hit);
  EXPECT_EQ(warm.result.model->rotation_charts, cold.result.model->rotation_charts);
  const SimRun a = simulate(*cold.result.model, "dopri5", 0.5, 1e-2);
  const SimRun b = simulate(*warm.result.model, "dopri5", 0.5, 1e-2);
  ASSERT_EQ(a.rows.size(), b.rows.size());
  EXPECT_EQ(a.rows.back(), b.rows.back());
}

TEST(LieGroup, CoSimulationStepsInPiecesReproduceOneRun) {
  // an FMU's doStep is Integrator::advance_to: the charts move at every step of its solver, so
  // pieces that are multiples of h give the run to the same end bitwise (docs/fmu.md)
  const auto& m = heavy_top();
  for (const char* solver : {"gen-alpha", "rk4"}) {
    mbs::rt::SolverOptions o;
    o.solver = kind(solver);
    o.t_end = 0.5;
    o.h = 1e-3;
    auto whole = mbs::rt::make_integrator(m, o);
    ASSERT_EQ(whole->run(nullptr), mbs::rt::SolveStatus::Finished);
    auto pieces = mbs::rt::make_integrator(m, o);
    for (int k = 1; k <= 5; ++k) ASSERT_EQ(pieces->advance_to(0.1 * k), mbs::rt::SolveStatus::Ok);
    for (int32_t j = 0; j < m.n_y; ++j)
      EXPECT_EQ(whole->symbols()[m.y_slot[j]], pieces->symbols()[m.y_slot[j]]) << solver;
    for (int k = 6; k < 10; ++k)
      EXPECT_EQ(whole->symbols()[m.rotation_charts[k]], pieces->symbols()[m.rotation_charts[k]]);
  }
  // model exchange leaves the steps to the importer: the FMU moves the charts at step events
  // (test_fmu_end_to_end); directional derivatives (no constraints) are available too
  EXPECT_EQ(mbs::rt::fmi::model_exchange_obstacle(m), "");
  EXPECT_EQ(mbs::rt::fmi::constraints_obstacle(m), "");
}

TEST(LieGroup, TheCommandLineSwitchesAJointToItsLieGroupForm) {
  // --set takes a Boolean: the quaternion example runs with dopri5, as the explicit solvers'
  // refusal suggests, and moves as its Lie-group twin does
  const std::string out = testing::TempDir() + std::to_string(getpid()) + "_lie_cli.csv";
  const std::string cmd = std::string(MBS_MBSC_PATH) + " " +
                          source("examples/mechanics/heavy_top.mbs") +
                          " --set pivot.lie_group=true --solver dopri5 --simulate --t-end 0.5 "
                          "--no-cache -q --output " +
                          out + " 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const auto csv = mbs::clitest::read_csv(out);  // quoted names such as "s.R[1,1]" kept whole
  ASSERT_GE(csv.size(), 2u);
  const std::vector<std::string>& header = csv.front();
  const std::vector<std::string>& row = csv.back();
  ASSERT_EQ(row.size(), header.size());
  const auto& m = heavy_top();
  const SimRun run = simulate(m, "dopri5", 0.5, 1e-3);
  ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished);
  int compared = 0;
  for (size_t i = 1; i < header.size(); ++i)
    for (size_t k = 0; k < m.output_names.size(); ++k)
      if (m.output_names[k] == header[i]) {
        EXPECT_NEAR(std::stod(row[i]), run.rows.back()[k], 1e-12) << header[i];
        ++compared;
      }
  EXPECT_GT(compared, 40);  // Q, dQ, theta, w and the sensor's columns
}

TEST(LieGroup, WhatIsNotSupportedIsRefusedWithAReason) {
  // exact sensitivities would need the derivative of the chart's move
  {
    mbs::CompileOptions o;
    o.file = source("examples/mechanics/heavy_top_lie_group.mbs");
    o.cache_dir = "off";
    o.sensitivities = true;
    std::ostringstream emit, diag;
    auto r = mbs::compile(o, emit, diag);
    ASSERT_TRUE(r.ok) << diag.str();
    mbs::rt::SolverOptions so;
    so.t_end = 0.1;
    so.h = 1e-3;
    auto s = mbs::rt::make_integrator(*r.model, so);
    try {
      s->enable_sensitivities({});
      ADD_FAILURE() << "sensitivities were accepted";
    } catch (const mbs::rt::SolverSetupError& e) {
      EXPECT_NE(std::string(e.what()).find("lie_group"), std::string::npos) << e.what();
    }
  }
  // an explicit method on the quaternion form points at the Lie-group form
  {
    Compiled c = compile_file(source("examples/mechanics/heavy_top.mbs"));
    ASSERT_TRUE(c.result.ok);
    mbs::rt::SolverOptions so;
    so.solver = mbs::rt::SolverKind::Dopri5;
    so.t_end = 0.1;
    so.h = 1e-3;
    try {
      mbs::rt::make_integrator(*c.result.model, so);
      ADD_FAILURE() << "dopri5 took the quaternion constraint";
    } catch (const mbs::rt::SolverSetupError& e) {
      EXPECT_NE(std::string(e.what()).find("lie_group = true"), std::string::npos) << e.what();
    }
    // the hint comes from the row's role (set by the lowering), not from its text
    const auto& m = *c.result.model;
    EXPECT_EQ(std::count(m.eq_role.begin(), m.eq_role.end(), mbs::rt::EquationRole::UnitQuaternion),
              1);
  }
}

}  // namespace
