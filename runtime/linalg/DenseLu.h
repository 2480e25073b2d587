// Dense LU factorization with partial pivoting for small Newton matrices.
//
// The matrix arrives as values in the order of a sparse pattern (compressed-column order, as
// SparseKernel produces them); setup() precomputes where each entry goes in the dense array, so
// factor() is a scatter plus an in-place LU and solve() two triangular sweeps. Nothing allocates
// after setup().
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace mbs::rt {

class DenseLu {
 public:
  // n x n matrix with entries (row[k], col[k]), k < nnz.
  void setup(int32_t n, std::span<const int32_t> row, std::span<const int32_t> col);

  // Factor the matrix with the given nnz values. Returns 0 on success, k > 0 when column k - 1
  // has no usable pivot (zero or not finite): the matrix is singular in that column.
  int32_t factor(const double* values);

  // b := A^-1 b, using the last successful factor().
  void solve(double* b) const;

  int32_t size() const { return n_; }

 private:
  int32_t n_ = 0;
  std::vector<int32_t> dense_index_;  // per pattern entry: col * n + row
  std::vector<double> lu_;            // column-major n x n: unit-lower L below, U on and above
  std::vector<int32_t> pivot_;        // row swapped with row k at elimination step k
};

}  // namespace mbs::rt
