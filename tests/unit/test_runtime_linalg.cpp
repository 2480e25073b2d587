// Dense LU and KLU behind LinearSolver: solutions against the matrix itself (A x = b), agreement
// between both, singular matrices with the column reported, and KLU's refactorization path.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "runtime/linalg/DenseLu.h"
#include "runtime/linalg/KluSolver.h"
#include "runtime/linalg/LinearSolver.h"

namespace mbs::rt {
namespace {

struct Csc {
  int32_t n = 0;
  std::vector<int32_t> row, col;
  std::vector<double> val;
};

// A random sparse matrix in compressed-column order: the diagonal plus ~density off-diagonal
// entries, values in [-1, 1] (the diagonal not dominant: pivoting matters).
Csc random_matrix(int32_t n, double density, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0), p(0.0, 1.0);
  Csc a;
  a.n = n;
  for (int32_t j = 0; j < n; ++j) {
    for (int32_t i = 0; i < n; ++i) {
      if (i == j || p(rng) < density) {
        a.row.push_back(i);
        a.col.push_back(j);
        a.val.push_back(u(rng));
      }
    }
  }
  return a;
}

std::vector<double> multiply(const Csc& a, const std::vector<double>& x) {
  std::vector<double> y(a.n, 0.0);
  for (size_t e = 0; e < a.row.size(); ++e) y[a.row[e]] += a.val[e] * x[a.col[e]];
  return y;
}

// The normwise backward error ||A x - b|| / (||A|| ||x|| + ||b||) (infinity norms): of the order
// of the unit roundoff for a backward-stable solver, whatever the condition of A.
double residual_norm(const Csc& a, const std::vector<double>& x, const std::vector<double>& b) {
  const std::vector<double> ax = multiply(a, x);
  std::vector<double> row_sum(a.n, 0.0);
  for (size_t e = 0; e < a.row.size(); ++e) row_sum[a.row[e]] += std::fabs(a.val[e]);
  double r = 0.0, na = 0.0, nx = 0.0, nb = 0.0;
  for (int32_t i = 0; i < a.n; ++i) {
    r = std::max(r, std::fabs(ax[i] - b[i]));
    na = std::max(na, row_sum[i]);
    nx = std::max(nx, std::fabs(x[i]));
    nb = std::max(nb, std::fabs(b[i]));
  }
  return r / (na * nx + nb);
}

std::vector<double> solve_with(LinearSolverKind kind, const Csc& a, const std::vector<double>& b,
                               int32_t* status = nullptr) {
  LinearSolver s;
  s.setup(a.n, a.row, a.col, kind);
  const int32_t st = s.factor(a.val.data());
  if (status) *status = st;
  std::vector<double> x = b;
  if (st == 0) s.solve(x.data());
  return x;
}

TEST(LinearSolver, DenseAndKluSolveRandomSystems) {
  for (int32_t n : {1, 2, 3, 7, 20, 21, 60}) {
    for (uint32_t seed = 1; seed <= 3; ++seed) {
      const Csc a = random_matrix(n, 0.2, seed * 100 + n);
      std::vector<double> x_true(n);
      for (int32_t i = 0; i < n; ++i) x_true[i] = std::sin(1.0 + i);
      const std::vector<double> b = multiply(a, x_true);
      const auto xd = solve_with(LinearSolverKind::Dense, a, b);
      const auto xk = solve_with(LinearSolverKind::Klu, a, b);
      EXPECT_LT(residual_norm(a, xd, b), 1e-14) << "dense n=" << n << " seed=" << seed;
      // KLU's threshold pivoting prefers the diagonal (growth up to 1/0.001): a looser bound.
      EXPECT_LT(residual_norm(a, xk, b), 1e-12) << "klu n=" << n << " seed=" << seed;
      for (int32_t i = 0; i < n; ++i) EXPECT_NEAR(xd[i], xk[i], 1e-8 * (1.0 + std::fabs(xd[i])));
    }
  }
}

TEST(LinearSolver, DensePivotsOnZeroDiagonal) {
  // [[0 2] [3 0]] x = [4 3] -> x = [1 2]
  const Csc a{2, {1, 0}, {0, 1}, {3.0, 2.0}};
  const auto x = solve_with(LinearSolverKind::Dense, a, {4.0, 3.0});
  EXPECT_DOUBLE_EQ(x[0], 1.0);
  EXPECT_DOUBLE_EQ(x[1], 2.0);
}

TEST(LinearSolver, ReportsTheSingularColumn) {
  // Column 2 equals column 0: singular, no pivot left in column 2.
  const Csc a{3, {0, 1, 1, 2, 0, 1}, {0, 0, 1, 1, 2, 2}, {1.0, 2.0, 1.0, 1.0, 1.0, 2.0}};
  int32_t st = 0;
  solve_with(LinearSolverKind::Dense, a, {1, 1, 1}, &st);
  EXPECT_EQ(st, 3);
  solve_with(LinearSolverKind::Klu, a, {1, 1, 1}, &st);
  EXPECT_GT(st, 0);
  // A structurally empty column.
  const Csc b{2, {0, 1}, {0, 0}, {1.0, 1.0}};
  solve_with(LinearSolverKind::Dense, b, {1, 1}, &st);
  EXPECT_EQ(st, 2);
  // NaN entries are not pivots.
  const Csc c{1, {0}, {0}, {NAN}};
  solve_with(LinearSolverKind::Dense, c, {1}, &st);
  EXPECT_EQ(st, 1);
}

TEST(LinearSolver, KluRefactorsWithNewValues) {
  Csc a = random_matrix(40, 0.1, 7);
  KluSolver klu;
  klu.setup(a.n, a.row, a.col);
  ASSERT_EQ(klu.factor(a.val.data()), 0);
  EXPECT_EQ(klu.full_factors(), 1);
  for (int pass = 0; pass < 5; ++pass) {
    for (double& v : a.val) v *= 1.0 + 0.01 * std::sin(v + pass);  // same pattern, new values
    std::vector<double> b(a.n, 1.0), x = b;
    ASSERT_EQ(klu.factor(a.val.data()), 0);
    klu.solve(x.data());
    EXPECT_LT(residual_norm(a, x, b), 1e-14);
  }
  EXPECT_EQ(klu.full_factors(), 1);  // all numeric refactorizations
}

TEST(LinearSolver, KluRepivotsWhenOldPivotsBecomeBad) {
  // [[a 1] [1 1]]: pivots chosen for a = 1e3 are useless for a = 1 + 1e-15 (near-singular
  // leading pivot after elimination in that order); KLU must notice and repivot.
  Csc a{2, {0, 1, 0, 1}, {0, 0, 1, 1}, {1e3, 1.0, 1.0, 1.0}};
  KluSolver klu;
  klu.setup(2, a.row, a.col);
  ASSERT_EQ(klu.factor(a.val.data()), 0);
  a.val = {1e-14, 1.0, 1.0, 1e-14};  // now the diagonal is tiny: swap rows
  std::vector<double> b = {1.0, 2.0}, x = b;
  ASSERT_EQ(klu.factor(a.val.data()), 0);
  klu.solve(x.data());
  EXPECT_LT(residual_norm(a, x, b), 1e-14);
  EXPECT_EQ(klu.full_factors(), 2);
}

TEST(LinearSolver, AutomaticChoiceBySize) {
  const Csc small = random_matrix(LinearSolver::kDenseMaxSize, 0.1, 1);
  const Csc large = random_matrix(LinearSolver::kDenseMaxSize + 1, 0.1, 1);
  LinearSolver a, b;
  a.setup(small.n, small.row, small.col);
  b.setup(large.n, large.row, large.col);
  EXPECT_EQ(a.kind(), LinearSolverKind::Dense);
  EXPECT_EQ(b.kind(), LinearSolverKind::Klu);
}

TEST(LinearSolver, EmptySystem) {
  LinearSolver s;
  s.setup(0, {}, {});
  EXPECT_EQ(s.factor(nullptr), 0);
  s.solve(nullptr);
}

TEST(LinearSolver, RejectsBadPatterns) {
  DenseLu d;
  const std::vector<int32_t> r = {0, 5}, c = {0, 0};
  EXPECT_THROW(d.setup(2, r, c), std::invalid_argument);
  KluSolver k;
  const std::vector<int32_t> r2 = {1, 0}, c2 = {0, 0};  // not sorted within the column
  EXPECT_THROW(k.setup(2, r2, c2), std::invalid_argument);
}

}  // namespace
}  // namespace mbs::rt
