// The linear solver behind every Newton iteration: one interface over a dense LU (small systems,
// where its tight loops beat sparse bookkeeping) and KLU (larger, sparse systems). Both take the
// matrix as the values of a SparseKernel pattern in compressed-column order. The choice is made
// once at setup; factor() and solve() dispatch on a stored kind (a predictable branch, no virtual
// call) and do not allocate (KLU's rare full refactorization aside, see KluSolver.h).
#pragma once

#include <cstdint>
#include <span>

#include "runtime/linalg/DenseLu.h"
#include "runtime/linalg/KluSolver.h"

namespace mbs::rt {

enum class LinearSolverKind : uint8_t { Automatic, Dense, Klu };

class LinearSolver {
 public:
  // Largest n for which Automatic picks the dense LU. Measured with
  //   build/release/bench/bench_runtime --benchmark_filter=LinearSolver
  // on sparse multibody-like patterns (see docs/solvers.md): dense is faster up to about this
  // size, KLU from there on.
  static constexpr int32_t kDenseMaxSize = 20;

  void setup(int32_t n, std::span<const int32_t> row, std::span<const int32_t> col,
             LinearSolverKind kind = LinearSolverKind::Automatic) {
    kind_ = kind == LinearSolverKind::Automatic
                ? (n <= kDenseMaxSize ? LinearSolverKind::Dense : LinearSolverKind::Klu)
                : kind;
    if (kind_ == LinearSolverKind::Dense) {
      dense_.setup(n, row, col);
    } else {
      klu_.setup(n, row, col);
    }
  }

  // 0 on success, k > 0: singular, column k - 1 has no usable pivot.
  int32_t factor(const double* values) {
    return kind_ == LinearSolverKind::Dense ? dense_.factor(values) : klu_.factor(values);
  }

  // b := A^-1 b.
  void solve(double* b) {
    if (kind_ == LinearSolverKind::Dense) {
      dense_.solve(b);
    } else {
      klu_.solve(b);
    }
  }

  LinearSolverKind kind() const { return kind_; }

 private:
  LinearSolverKind kind_ = LinearSolverKind::Dense;
  DenseLu dense_;
  KluSolver klu_;
};

}  // namespace mbs::rt
