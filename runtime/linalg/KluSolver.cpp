#include "runtime/linalg/KluSolver.h"

#include <klu.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace mbs::rt {

namespace {
// klu_refactor keeps the pivot order of the last full factorization. When the pivot ratio
// min|U_kk| / max|U_kk| (klu_rcond) has dropped by more than this factor against the one right
// after that full factorization, the order is considered stale and the matrix is refactored with
// fresh pivoting. Relative, so a badly but consistently scaled matrix does not trigger it.
constexpr double kRcondDropLimit = 1e-6;
// A full factorization chooses its pivots on the max-row-scaled matrix (KLU's default scaling).
// With the pivots fixed, row scaling changes the factors only by a diagonal, so the
// refactorizations run unscaled (klu_refactor then skips computing and applying the scale
// factors every time; klu_solve skips them too) and the pivot ratio is measured on that form.
constexpr int kScalePivoting = 2;
constexpr int kScaleNone = -1;
}  // namespace

struct KluSolver::State {
  int32_t n = 0;
  std::vector<int32_t> ap, ai;
  std::vector<double> ax;  // KLU takes non-const pointers; values are copied here
  klu_common common{};
  klu_symbolic* symbolic = nullptr;
  klu_numeric* numeric = nullptr;
  int64_t full_factors = 0;
  double rcond_at_full_factor = 0.0;

  ~State() {
    if (numeric) klu_free_numeric(&numeric, &common);
    if (symbolic) klu_free_symbolic(&symbolic, &common);
  }

  int32_t singular_result() const {
    const int col = common.singular_col;
    return (col >= 0 && col < n) ? col + 1 : 1;
  }

  int32_t full_factor() {
    if (numeric) klu_free_numeric(&numeric, &common);
    common.scale = kScalePivoting;
    numeric = klu_factor(ap.data(), ai.data(), ax.data(), symbolic, &common);
    ++full_factors;
    if (!numeric || common.status != KLU_OK) {
      if (common.status == KLU_SINGULAR) return singular_result();
      if (common.status == KLU_OUT_OF_MEMORY) throw std::bad_alloc();
      return 1;
    }
    // the same pivots, unscaled (frees the scale factors once; see kScalePivoting)
    common.scale = kScaleNone;
    if (!klu_refactor(ap.data(), ai.data(), ax.data(), symbolic, numeric, &common) ||
        common.status != KLU_OK) {
      return singular_result();
    }
    klu_rcond(symbolic, numeric, &common);
    rcond_at_full_factor = common.rcond;
    return 0;
  }
};

KluSolver::KluSolver() : s_(std::make_unique<State>()) {}
KluSolver::~KluSolver() = default;
KluSolver::KluSolver(KluSolver&&) noexcept = default;
KluSolver& KluSolver::operator=(KluSolver&&) noexcept = default;

int32_t KluSolver::size() const {
  return s_->n;
}
int64_t KluSolver::full_factors() const {
  return s_->full_factors;
}

void KluSolver::setup(int32_t n, std::span<const int32_t> row, std::span<const int32_t> col) {
  s_ = std::make_unique<State>();
  State& s = *s_;
  if (n < 0 || row.size() != col.size()) {
    throw std::invalid_argument("KluSolver::setup: row and col must have the same length");
  }
  s.n = n;
  const size_t nnz = row.size();
  s.ap.assign(static_cast<size_t>(n) + 1, 0);
  s.ai.assign(row.begin(), row.end());
  s.ax.assign(nnz, 0.0);
  for (size_t k = 0; k < nnz; ++k) {
    const bool sorted =
        k == 0 || col[k] > col[k - 1] || (col[k] == col[k - 1] && row[k] > row[k - 1]);
    if (row[k] < 0 || row[k] >= n || col[k] < 0 || col[k] >= n || !sorted) {
      throw std::invalid_argument("KluSolver::setup: entry " + std::to_string(k) + " (" +
                                  std::to_string(row[k]) + ", " + std::to_string(col[k]) +
                                  ") is outside the matrix or not in compressed-column order");
    }
    ++s.ap[static_cast<size_t>(col[k]) + 1];
  }
  for (int32_t j = 0; j < n; ++j) s.ap[j + 1] += s.ap[j];
  klu_defaults(&s.common);
  if (n == 0) return;
  s.symbolic = klu_analyze(n, s.ap.data(), s.ai.data(), &s.common);
  if (!s.symbolic) {
    throw std::runtime_error("KluSolver::setup: klu_analyze failed with status " +
                             std::to_string(s.common.status));
  }
}

int32_t KluSolver::factor(const double* values) {
  State& s = *s_;
  if (s.n == 0) return 0;
  std::copy(values, values + s.ax.size(), s.ax.begin());
  if (!s.numeric) return s.full_factor();
  if (!klu_refactor(s.ap.data(), s.ai.data(), s.ax.data(), s.symbolic, s.numeric, &s.common) ||
      s.common.status != KLU_OK) {
    return s.full_factor();
  }
  if (!klu_rcond(s.symbolic, s.numeric, &s.common) ||
      !(s.common.rcond >= kRcondDropLimit * s.rcond_at_full_factor)) {
    return s.full_factor();
  }
  return 0;
}

void KluSolver::solve(double* b) {
  State& s = *s_;
  if (s.n == 0 || !s.numeric) return;
  klu_solve(s.symbolic, s.numeric, s.n, 1, b, &s.common);
}

}  // namespace mbs::rt
