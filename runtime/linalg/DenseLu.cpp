#include "runtime/linalg/DenseLu.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace mbs::rt {

void DenseLu::setup(int32_t n, std::span<const int32_t> row, std::span<const int32_t> col) {
  if (n < 0 || row.size() != col.size()) {
    throw std::invalid_argument("DenseLu::setup: row and col must have the same length");
  }
  n_ = n;
  dense_index_.resize(row.size());
  for (size_t k = 0; k < row.size(); ++k) {
    if (row[k] < 0 || row[k] >= n || col[k] < 0 || col[k] >= n) {
      throw std::invalid_argument("DenseLu::setup: entry " + std::to_string(k) + " (" +
                                  std::to_string(row[k]) + ", " + std::to_string(col[k]) +
                                  ") is outside a " + std::to_string(n) + " x " +
                                  std::to_string(n) + " matrix");
    }
    dense_index_[k] = col[k] * n + row[k];
  }
  lu_.assign(static_cast<size_t>(n) * static_cast<size_t>(n), 0.0);
  pivot_.assign(static_cast<size_t>(n), 0);
}

int32_t DenseLu::factor(const double* values) {
  const int32_t n = n_;
  double* a = lu_.data();
  std::fill(lu_.begin(), lu_.end(), 0.0);
  const size_t nnz = dense_index_.size();
  for (size_t k = 0; k < nnz; ++k) a[dense_index_[k]] += values[k];

  for (int32_t k = 0; k < n; ++k) {
    double* ak = a + k * n;  // column k
    int32_t p = k;
    double amax = std::fabs(ak[k]);
    for (int32_t i = k + 1; i < n; ++i) {
      const double ai = std::fabs(ak[i]);
      if (ai > amax) {
        amax = ai;
        p = i;
      }
    }
    // `!(amax > 0)` also catches NaN.
    if (!(amax > 0.0) || !std::isfinite(amax)) return k + 1;
    pivot_[k] = p;
    if (p != k) {
      for (int32_t j = 0; j < n; ++j) std::swap(a[j * n + k], a[j * n + p]);
    }
    const double inv = 1.0 / ak[k];
    for (int32_t i = k + 1; i < n; ++i) ak[i] *= inv;
    for (int32_t j = k + 1; j < n; ++j) {
      double* aj = a + j * n;
      const double akj = aj[k];
      if (akj == 0.0) continue;
      for (int32_t i = k + 1; i < n; ++i) aj[i] -= ak[i] * akj;
    }
  }
  return 0;
}

void DenseLu::solve(double* b) const {
  const int32_t n = n_;
  const double* a = lu_.data();
  for (int32_t k = 0; k < n; ++k) {
    const int32_t p = pivot_[k];
    if (p != k) std::swap(b[k], b[p]);
  }
  for (int32_t j = 0; j < n; ++j) {  // L y = P b, L unit lower
    const double bj = b[j];
    if (bj == 0.0) continue;
    const double* aj = a + j * n;
    for (int32_t i = j + 1; i < n; ++i) b[i] -= aj[i] * bj;
  }
  for (int32_t j = n - 1; j >= 0; --j) {  // U x = y
    const double* aj = a + j * n;
    b[j] /= aj[j];
    const double bj = b[j];
    for (int32_t i = 0; i < j; ++i) b[i] -= aj[i] * bj;
  }
}

}  // namespace mbs::rt
