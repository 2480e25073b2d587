// The multibody kinematics against finite differences: positions, orientations, velocities,
// angular velocities and accelerations of frames along paths through every joint kind (through
// FrameSensor outputs), the closure Jacobian, velocity form and acceleration bias of loops
// (ConstraintKinematics), and the equations of motion's Jacobian blocks. Every derivative the
// compiler produced symbolically is compared with central differences of the quantity it
// differentiates, along an exact trajectory q(t) (quaternions move on a great circle, so they stay
// unit length).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/driver/Compile.h"
#include "mech_test_util.h"
#include "runtime/model/Constraints.h"
#include "runtime/solvers/Integrator.h"

namespace {

using mbs::rt::CompiledModel;

// The condensed form (every kinematic quantity an expression of q, qd, qdd), so that outputs can
// be evaluated from a state without solving for the recursive form's algebraic unknowns.
std::shared_ptr<const CompiledModel> compile_text(const std::string& name, const std::string& text,
                                                  int recursive_depth = 1000) {
  mbs::CompileOptions o;
  o.recursive_depth = recursive_depth;
  return mbs::testutil::compile_source(name, text, o);
}

// A trajectory through a state: polynomial in the ordinary coordinates, a great circle for each
// quaternion (its four coordinates named X.Q[1..4]).
struct Trajectory {
  const CompiledModel& m;
  std::vector<double> q0, qd0, qdd0;
  std::vector<std::array<int, 4>> quats;  // indices into q of each quaternion
  std::vector<std::array<double, 4>> a;   // tangent of each great circle

  Trajectory(const CompiledModel& model, uint64_t seed) : m(model) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (int i = 0; i < m.n_q; ++i) {
      q0.push_back(u(rng));
      qd0.push_back(u(rng));
      qdd0.push_back(u(rng));
    }
    std::map<std::string, std::array<int, 4>> by_joint;
    for (int i = 0; i < m.n_q; ++i) {
      const std::string& n = m.q[i].name;
      auto p = n.find(".Q[");
      if (p == std::string::npos) continue;
      by_joint[n.substr(0, p)][n[p + 3] - '1'] = i;
    }
    for (const auto& [joint, idx] : by_joint) {
      std::array<double, 4> q, t;
      double nq = 0;
      for (int k = 0; k < 4; ++k) nq += q0[idx[k]] * q0[idx[k]];
      for (int k = 0; k < 4; ++k) q[k] = q0[idx[k]] / std::sqrt(nq);
      double d = 0;
      for (int k = 0; k < 4; ++k) t[k] = u(rng), d += t[k] * q[k];
      for (int k = 0; k < 4; ++k) t[k] -= d * q[k];  // tangent
      for (int k = 0; k < 4; ++k) q0[idx[k]] = q[k];
      quats.push_back(idx);
      a.push_back(t);
    }
  }

  // v at time t: q, qd, qdd in their slots
  std::vector<double> state(double t) const {
    std::vector<double> v = m.v0;
    for (int i = 0; i < m.n_q; ++i) {
      v[m.q_slot[i]] = q0[i] + t * qd0[i] + 0.5 * t * t * qdd0[i];
      v[m.qd_slot[i]] = qd0[i] + t * qdd0[i];
      v[m.qdd_slot[i]] = qdd0[i];
    }
    for (size_t j = 0; j < quats.size(); ++j) {
      double w = 0;
      for (int k = 0; k < 4; ++k) w += a[j][k] * a[j][k];
      w = std::sqrt(w);
      for (int k = 0; k < 4; ++k) {
        int i = quats[j][k];
        double p = q0[i], e = a[j][k] / w;
        v[m.q_slot[i]] = std::cos(w * t) * p + std::sin(w * t) * e;
        v[m.qd_slot[i]] = w * (-std::sin(w * t) * p + std::cos(w * t) * e);
        v[m.qdd_slot[i]] = -w * w * (std::cos(w * t) * p + std::sin(w * t) * e);
      }
    }
    return v;
  }
};

std::vector<double> outputs(const CompiledModel& m, const std::vector<double>& v) {
  std::vector<double> out(m.output_names.size());
  EXPECT_EQ(m.outputs(v.data(), out.data()), 0);
  return out;
}

int column(const CompiledModel& m, const std::string& name) {
  return mbs::testutil::output_column(m, name);
}

// A spatial tree through every joint kind, with a sensor at the end of each branch.
const char* kSpatialTree = R"(
model SpatialTree
  import Mechanics.*;
  World world(g = {0.3, -9.81, 0.2});
  Revolute r1(n = {0.3, 0.4, 0.866});
  FixedRotation off(r = {0.2, 0.1, -0.3}, n = {1, 1, 0}, angle = 0.4);
  Prismatic p(n = {0.2, -1, 0.5});
  Universal u(n_a = {1, 0, 0}, n_b = {0, 0.6, 0.8});
  FixedTranslation arm(r = {0.4, -0.2, 0.1});
  Cylindrical c(n = {0, 1, 1});
  FixedTranslation arm3(r = {0.3, 0, 0.1});
  Spherical s;
  FixedTranslation arm2(r = {0.1, 0.5, 0.3});
  Planar pl(n = {0, 0, 1}, n_x = {1, 0, 0});
  FreeMotion f;
  Body b1(m = 1.2, r_cm = {0.1, 0.2, 0.3}, I = {{0.02, 0.001, 0}, {0.001, 0.03, 0.002}, {0, 0.002, 0.04}});
  Body b2(m = 0.7, r_cm = {0.3, 0, -0.1});
  Body b3(m = 2.0, r_cm = {-0.1, 0.2, 0.05});
  Body b4(m = 0.5, r_cm = {0.2, 0.2, 0.2});
  Body bc(m = 0.4, r_cm = {0.1, 0.1, 0});
  FrameSensor s_end;
  FrameSensor s_mid;
  FrameSensor s_free;
equation
  connect(world.frame, r1.frame_a);
  connect(r1.frame_b, off.frame_a);
  connect(off.frame_b, p.frame_a);
  connect(p.frame_b, b1.frame_a);
  connect(p.frame_b, u.frame_a);
  connect(u.frame_b, arm.frame_a);
  connect(arm.frame_b, c.frame_a);
  connect(c.frame_b, s_mid.frame);
  connect(c.frame_b, arm3.frame_a);
  connect(c.frame_b, bc.frame_a);
  connect(arm3.frame_b, s.frame_a);
  connect(s.frame_b, b2.frame_a);
  connect(s.frame_b, arm2.frame_a);
  connect(arm2.frame_b, pl.frame_a);
  connect(pl.frame_b, b3.frame_a);
  connect(pl.frame_b, s_end.frame);
  connect(world.frame, f.frame_a);
  connect(f.frame_b, b4.frame_a);
  connect(f.frame_b, s_free.frame);
end SpatialTree;
)";

TEST(MechanicsKinematics, FrameVelocitiesAndAccelerationsAreDerivativesOfThePath) {
  auto m = compile_text("spatial_tree", kSpatialTree);
  ASSERT_TRUE(m);
  // 1 + 1 + 2 + 2 + 4 + 3 + (3 + 4) tree coordinates
  EXPECT_EQ(m->n_q, 20);
  const double eps = 1e-5;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    Trajectory tr(*m, seed);
    auto o0 = outputs(*m, tr.state(0.0));
    auto op = outputs(*m, tr.state(eps));
    auto om = outputs(*m, tr.state(-eps));
    auto fd = [&](int col) { return (op[col] - om[col]) / (2 * eps); };
    for (const std::string s : {"s_end", "s_mid", "s_free"}) {
      for (int i = 1; i <= 3; ++i) {
        std::string k = std::to_string(i);
        // velocity = d r/dt; acceleration (without gravity) = d v/dt; z = d w/dt
        EXPECT_NEAR(o0[column(*m, s + ".v[" + k + "]")], fd(column(*m, s + ".r[" + k + "]")), 1e-7)
            << s << " v" << k << " seed " << seed;
        EXPECT_NEAR(o0[column(*m, s + ".a[" + k + "]")], fd(column(*m, s + ".v[" + k + "]")), 1e-6)
            << s << " a" << k << " seed " << seed;
        EXPECT_NEAR(o0[column(*m, s + ".z[" + k + "]")], fd(column(*m, s + ".w[" + k + "]")), 1e-6)
            << s << " z" << k << " seed " << seed;
      }
      // angular velocity: dR/dt R^T = [w]x, and R stays orthonormal
      double R[3][3], Rd[3][3];
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
          int c = column(*m, s + ".R[" + std::to_string(i + 1) + "," + std::to_string(j + 1) + "]");
          R[i][j] = o0[c];
          Rd[i][j] = fd(c);
        }
      double W[3][3];
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
          W[i][j] = 0;
          double I = 0;
          for (int k = 0; k < 3; ++k) W[i][j] += Rd[i][k] * R[j][k], I += R[i][k] * R[j][k];
          EXPECT_NEAR(I, i == j ? 1.0 : 0.0, 1e-12) << s << " R orthonormal";
        }
      double w[3] = {o0[column(*m, s + ".w[1]")], o0[column(*m, s + ".w[2]")],
                     o0[column(*m, s + ".w[3]")]};
      EXPECT_NEAR(W[2][1], w[0], 1e-7) << s;
      EXPECT_NEAR(W[0][2], w[1], 1e-7) << s;
      EXPECT_NEAR(W[1][0], w[2], 1e-7) << s;
    }
  }
}

TEST(MechanicsKinematics, EquationOfMotionBlocksAreDerivativesOfTheResidual) {
  auto m = compile_text("spatial_tree_eom", kSpatialTree);
  ASSERT_TRUE(m);
  Trajectory tr(*m, 7);
  std::vector<double> v = tr.state(0.0);
  for (int32_t s : m->z_slot) v[s] = 0.3;
  std::vector<double> jq(m->jac_q.nnz()), jqd(m->jac_qd.nnz()), mm(m->mass_matrix.nnz());
  ASSERT_EQ(m->jac_q.values(v.data(), jq.data()), 0);
  ASSERT_EQ(m->jac_qd.values(v.data(), jqd.data()), 0);
  ASSERT_EQ(m->mass_matrix.values(v.data(), mm.data()), 0);
  auto column_fd = [&](int32_t slot, int32_t col, const mbs::rt::SparseKernel& k,
                       const std::vector<double>& vals, const char* what) {
    const double eps = 1e-6;
    std::vector<double> vp = v, vm = v, fp(m->n_eq()), fm(m->n_eq());
    vp[slot] += eps;
    vm[slot] -= eps;
    m->residual(vp.data(), fp.data());
    m->residual(vm.data(), fm.data());
    std::vector<double> dense(m->n_eq(), 0.0);
    for (int32_t e = 0; e < k.nnz(); ++e)
      if (k.col[e] == col) dense[k.row[e]] = vals[e];
    for (int32_t i = 0; i < m->n_eq(); ++i) {
      double d = (fp[i] - fm[i]) / (2 * eps);
      EXPECT_NEAR(dense[i], d, 1e-6 * (1 + std::fabs(d))) << what << " row " << i << " col " << col;
    }
  };
  for (int32_t j = 0; j < m->n_q; ++j) {
    column_fd(m->q_slot[j], j, m->jac_q, jq, "dF/dq");
    column_fd(m->qd_slot[j], j, m->jac_qd, jqd, "dF/dqd");
    column_fd(m->qdd_slot[j], j, m->mass_matrix, mm, "dF/dqdd");
  }
}

// An RSSR spatial four-bar (crank about z, rocker about x) closed by a spherical joint.
const char* kSpatialLoop = R"(
model SpatialLoop
  import Mechanics.*;
  World world;
  Revolute a(n = {0, 0, 1}, phi(start = 0.3, fixed = true));
  FixedTranslation crank(r = {0.5, 0, 0});
  Spherical b;
  FixedTranslation coupler(r = {0.2, 1.0, 0.4});
  Spherical c(cut = true);
  FixedTranslation ground(r = {0.6, 0.9, 0.0});
  Revolute d(n = {1, 0, 0});
  FixedTranslation rocker(r = {0, 0.1, 0.5});
  Body m1(m = 1, r_cm = {0.25, 0, 0});
  Body m2(m = 1, r_cm = {0.1, 0.5, 0.2});
  Body m3(m = 1, r_cm = {0, 0.05, 0.25});
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
end SpatialLoop;
)";

TEST(MechanicsKinematics, ClosureJacobianVelocityAndBiasAreDerivativesOfTheClosure) {
  auto m = compile_text("spatial_loop", kSpatialLoop);
  ASSERT_TRUE(m);
  mbs::rt::ConstraintKinematics ck(*m);
  // three closure rows of the cut spherical joint, one unit-quaternion row of b
  ASSERT_EQ(ck.n_rows(), 4);
  const int32_t nr = ck.n_rows(), nq = m->n_q;
  const double eps = 1e-5;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    Trajectory tr(*m, seed);
    std::vector<double> v = tr.state(0.0), vp = tr.state(eps), vm = tr.state(-eps);
    std::vector<double> G(nr * nq), gd(nr), gam(nr), gp(nr), gm(nr), gdp(nr), gdm(nr);
    ASSERT_EQ(ck.jacobian(v.data(), G), 0);
    ASSERT_EQ(ck.velocity(v.data(), gd), 0);
    ASSERT_EQ(ck.bias(v.data(), gam), 0);
    ck.position(vp.data(), gp);
    ck.position(vm.data(), gm);
    ck.velocity(vp.data(), gdp);
    ck.velocity(vm.data(), gdm);
    for (int32_t i = 0; i < nr; ++i) {
      double gq = 0, gqq = 0;
      for (int32_t j = 0; j < nq; ++j) {
        gq += G[i * nq + j] * v[m->qd_slot[j]];
        gqq += G[i * nq + j] * v[m->qdd_slot[j]];
      }
      // dg/dt three ways: finite difference of g, the velocity kernel, G qd (no explicit time)
      EXPECT_NEAR(gd[i], (gp[i] - gm[i]) / (2 * eps), 1e-7) << "row " << i;
      EXPECT_NEAR(gd[i], gq, 1e-12) << "row " << i;
      // d2g/dt2 = G qdd + gamma, against the finite difference of the velocity form
      EXPECT_NEAR(gqq + gam[i], (gdp[i] - gdm[i]) / (2 * eps), 1e-6) << "row " << i;
    }
    // G against central differences of g in each coordinate
    for (int32_t j = 0; j < nq; ++j) {
      std::vector<double> a = v, b = v, ga(nr), gb(nr);
      a[m->q_slot[j]] += 1e-6;
      b[m->q_slot[j]] -= 1e-6;
      ck.position(a.data(), ga);
      ck.position(b.data(), gb);
      for (int32_t i = 0; i < nr; ++i)
        EXPECT_NEAR(G[i * nq + j], (ga[i] - gb[i]) / 2e-6, 1e-7) << "G " << i << "," << j;
    }
  }
}

TEST(MechanicsKinematics, SpatialLoopAssemblesAndKeepsItsConstraints) {
  auto m = compile_text("spatial_loop_run", kSpatialLoop);
  ASSERT_TRUE(m);
  mbs::rt::ConstraintKinematics ck(*m);
  std::vector<double> g(ck.n_rows()), gd(ck.n_rows());
  ck.position(m->v0.data(), g);
  ck.velocity(m->v0.data(), gd);
  for (double x : g) EXPECT_NEAR(x, 0.0, 1e-10);
  for (double x : gd) EXPECT_NEAR(x, 0.0, 1e-10);
  // the crank angle was fixed = true: assembly moved the others only
  for (int i = 0; i < m->n_q; ++i)
    if (m->q[i].name == "a.phi") {
      EXPECT_EQ(m->v0[m->q_slot[i]], 0.3);
    }
}

}  // namespace

namespace {

// The same tree in the recursive form (twists, accelerations and wrenches of every frame kept as
// unknowns of the DAE) and in the condensed form (all of them substituted): two formulations of
// the same equations, so the trajectories must agree to the solver's tolerance.
TEST(MechanicsKinematics, RecursiveAndCondensedFormsGiveTheSameMotion) {
  auto condensed = compile_text("tree_condensed", kSpatialTree, 1000);
  auto recursive = compile_text("tree_recursive", kSpatialTree, 0);
  ASSERT_TRUE(condensed && recursive);
  EXPECT_EQ(condensed->n_z, 2);  // the multipliers of the two unit quaternions
  EXPECT_GT(recursive->n_z, 100);
  auto run = [](const CompiledModel& m) {
    mbs::rt::SolverOptions o;
    o.t_end = 0.5;
    o.h = 1e-3;
    auto solver = mbs::rt::make_integrator(m, o);
    std::vector<double> last;
    auto st = solver->run([&](double, std::span<const double> out) {
      last.assign(out.begin(), out.end());
      return 0;
    });
    EXPECT_EQ(st, mbs::rt::SolveStatus::Finished);
    return last;
  };
  auto a = run(*condensed), b = run(*recursive);
  ASSERT_FALSE(a.empty());
  int compared = 0;
  for (int i = 0; i < condensed->n_q; ++i) {
    const std::string& name = condensed->q[i].name;
    int ca = column(*condensed, name), cb = column(*recursive, name);
    EXPECT_NEAR(a[ca], b[cb], 1e-7) << name;
    ++compared;
  }
  EXPECT_EQ(compared, 20);
}

}  // namespace
