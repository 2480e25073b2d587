// The kernels of compiled models against independent references: the Newton matrix, mass matrix
// and initial-system matrix against central finite differences of the JIT-compiled residuals, and
// the JIT-compiled residual against the symbolic interpreter (through the outputs of --emit).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/driver/Compile.h"

namespace {

std::shared_ptr<const mbs::rt::CompiledModel> compile_example(const std::string& name) {
  mbs::CompileOptions o;
  o.file = std::string(MBS_SOURCE_DIR) + "/examples/" + name;
  std::ostringstream emit, diag;
  auto r = mbs::compile(o, emit, diag);
  EXPECT_TRUE(r.ok) << diag.str();
  return r.model;
}

// Dense matrix from a sparse kernel at v.
std::vector<std::vector<double>> dense(const mbs::rt::SparseKernel& k,
                                       const std::vector<double>& v) {
  std::vector<double> vals(k.nnz());
  EXPECT_EQ(k.values(v.data(), vals.data()), 0);
  std::vector<std::vector<double>> a(k.rows, std::vector<double>(k.cols, 0.0));
  for (int32_t i = 0; i < k.nnz(); ++i) a[k.row[i]][k.col[i]] = vals[i];
  // compressed-column order, no duplicates
  for (int32_t i = 1; i < k.nnz(); ++i)
    EXPECT_TRUE(k.col[i - 1] < k.col[i] || (k.col[i - 1] == k.col[i] && k.row[i - 1] < k.row[i]));
  return a;
}

// Central difference of kernel f along the direction that moves the slots `slots` by `weights`.
std::vector<double> fd(const mbs::rt::Kernel& f, std::vector<double> v,
                       const std::vector<std::pair<int32_t, double>>& dir, double h) {
  std::vector<double> fp(f.n_out), fm(f.n_out), out(f.n_out);
  auto vp = v, vm = v;
  for (auto [s, w] : dir) {
    vp[s] += w * h;
    vm[s] -= w * h;
  }
  f(vp.data(), fp.data());
  f(vm.data(), fm.data());
  for (int32_t i = 0; i < f.n_out; ++i) out[i] = (fp[i] - fm[i]) / (2 * h);
  return out;
}

void check_model(const mbs::rt::CompiledModel& m, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.3, 1.2);
  for (int trial = 0; trial < 5; ++trial) {
    std::vector<double> v = m.v0;
    for (int32_t i = 0; i < m.n_q; ++i) {
      v[m.q_slot[i]] = u(rng);
      v[m.qd_slot[i]] = u(rng);
      v[m.qdd_slot[i]] = u(rng);
    }
    for (int32_t i = 0; i < m.n_y; ++i) {
      v[m.y_slot[i]] = u(rng);
      v[m.yd_slot[i]] = u(rng);
    }
    for (int32_t i = 0; i < m.n_z; ++i) v[m.z_slot[i]] = u(rng);
    double cq = 0.37e-6, cqd = 0.51e-3, cy = 0.5e-3;
    v[m.slot_c_q] = cq;
    v[m.slot_c_qd] = cqd;
    v[m.slot_c_y] = cy;
    auto J = dense(m.newton_matrix, v);
    auto Jm = dense(m.mass_matrix, v);
    auto Ji = dense(m.init_matrix, v);
    int32_t col = 0;
    auto compare = [&](const std::vector<std::vector<double>>& a, int32_t c,
                       const std::vector<double>& ref, const char* what) {
      for (int32_t i = 0; i < m.n_eq(); ++i)
        EXPECT_NEAR(a[i][c], ref[i], 1e-6 * (1 + std::fabs(ref[i])))
            << what << " row " << i << " col " << c;
    };
    for (int32_t j = 0; j < m.n_q; ++j, ++col) {
      auto ref =
          fd(m.residual, v, {{m.qdd_slot[j], 1.0}, {m.q_slot[j], cq}, {m.qd_slot[j], cqd}}, 1e-4);
      compare(J, col, ref, "newton_matrix");
      compare(Jm, col, fd(m.residual, v, {{m.qdd_slot[j], 1.0}}, 1e-4), "mass_matrix");
      compare(Ji, col, fd(m.init_residual, v, {{m.qdd_slot[j], 1.0}}, 1e-4), "init_matrix");
    }
    for (int32_t j = 0; j < m.n_y; ++j, ++col) {
      compare(J, col, fd(m.residual, v, {{m.yd_slot[j], 1.0}, {m.y_slot[j], cy}}, 1e-4),
              "newton_matrix");
      compare(Jm, col, fd(m.residual, v, {{m.yd_slot[j], 1.0}}, 1e-4), "mass_matrix");
      compare(Ji, col, fd(m.init_residual, v, {{m.yd_slot[j], 1.0}}, 1e-4), "init_matrix");
    }
    for (int32_t j = 0; j < m.n_z; ++j, ++col) {
      compare(J, col, fd(m.residual, v, {{m.z_slot[j], 1.0}}, 1e-4), "newton_matrix");
      compare(Ji, col, fd(m.init_residual, v, {{m.z_slot[j], 1.0}}, 1e-4), "init_matrix");
    }
  }
}

TEST(ModelKernels, JacobiansMatchFiniteDifferences) {
  unsigned seed = 1;
  for (const char* name :
       {"pendulum.mbs", "pendulum_first_order.mbs", "mass_spring_damper.mbs", "van_der_pol.mbs",
        "oscillator_chain.mbs", "function_spring_chain.mbs"}) {
    SCOPED_TRACE(name);
    auto m = compile_example(name);
    ASSERT_TRUE(m);
    check_model(*m, seed++);
  }
}

TEST(ModelKernels, InitialSystemIsTheSecondDerivativeOfThePendulumConstraint) {
  auto m = compile_example("pendulum.mbs");
  ASSERT_TRUE(m);
  // row of x^2 + y^2 - L^2: the initial form is 2 (x xdd + y ydd + xd^2 + yd^2)
  int row = -1;
  for (int32_t i = 0; i < m->n_eq(); ++i)
    if (m->eq_level[i] == mbs::rt::EquationLevel::Position) row = i;
  ASSERT_GE(row, 0);
  std::vector<double> v = m->v0;
  double x = 0.6, y = -0.8, xd = 1.3, yd = 0.2, xdd = -0.4, ydd = 2.1;
  v[m->q_slot[0]] = x;
  v[m->q_slot[1]] = y;
  v[m->qd_slot[0]] = xd;
  v[m->qd_slot[1]] = yd;
  v[m->qdd_slot[0]] = xdd;
  v[m->qdd_slot[1]] = ydd;
  std::vector<double> g(m->n_eq());
  ASSERT_EQ(m->init_residual(v.data(), g.data()), 0);
  EXPECT_NEAR(g[row], 2 * (x * xdd + y * ydd + xd * xd + yd * yd), 1e-12);
}

TEST(ModelKernels, KernelsReportNonFiniteOutputs) {
  auto m = compile_example("van_der_pol.mbs");
  ASSERT_TRUE(m);
  std::vector<double> v = m->v0;
  v[m->y_slot[0]] = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> r(m->n_eq());
  EXPECT_GT(m->residual(v.data(), r.data()), 0);
}

}  // namespace
