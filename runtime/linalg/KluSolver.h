// Sparse LU through SuiteSparse KLU: the pattern is analysed once (setup), the first factor() is
// a full klu_factor with pivoting, later ones reuse its pivot order through klu_refactor (no
// allocation). When the reused pivots have become poor (klu_rcond below a threshold) factor()
// falls back to a full klu_factor, which allocates; this is rare and counted in full_factors().
#pragma once

#include <cstdint>
#include <memory>
#include <span>

namespace mbs::rt {

class KluSolver {
 public:
  KluSolver();
  ~KluSolver();
  KluSolver(KluSolver&&) noexcept;
  KluSolver& operator=(KluSolver&&) noexcept;

  // n x n matrix with entries (row[k], col[k]) sorted by column, then row, no duplicates.
  void setup(int32_t n, std::span<const int32_t> row, std::span<const int32_t> col);

  // Factor with the given nnz values (same order as the pattern). Returns 0 on success, k > 0
  // when the matrix is singular with column k - 1 the first column without a pivot.
  int32_t factor(const double* values);

  // b := A^-1 b, using the last successful factor().
  void solve(double* b);

  int32_t size() const;
  // Number of full (pivoting, allocating) factorizations so far.
  int64_t full_factors() const;

 private:
  struct State;  // KLU's handles; klu.h stays out of this header
  std::unique_ptr<State> s_;
};

}  // namespace mbs::rt
