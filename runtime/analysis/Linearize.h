// Linearisation of a compiled model at a point: the partial derivatives of the residual
// F(q, qd, qdd, y, yd, z) = 0 as dense matrices with row and column names (Exudyn's
// ComputeLinearizedSystem). Rows are all n_eq equations in model order, so the matrices are the
// blocks of the complete Jacobian, with the model's sign convention (F as the compiler writes it,
// typically lhs - rhs):
//
//   M = dF/dqdd   (n_eq x n_q)    D = dF/dqd (n_eq x n_q)    K = dF/dq (n_eq x n_q)
//   B = dF/dz     (n_eq x n_z)    E = dF/dyd (n_eq x n_y)    A = dF/dy (n_eq x n_y)
//   G             (n_c x n_q): the constraint Jacobian, one row per Position- or Velocity-level
//                 equation: dF/dq of a position-level constraint g(q) = 0, dF/dqd of a
//                 velocity-level one A(q) qd = 0 (whose dF/dq vanishes at rest).
//
// The linearised equations are M dqdd + D dqd + K dq + E dyd + A dy + B dz = 0.
#pragma once

#include <Eigen/Core>
#include <span>
#include <string>
#include <vector>

#include "runtime/model/CompiledModel.h"

namespace mbs::rt {

// Evaluates one of the partial-derivative kernels jac_q, jac_qd, jac_y, jac_z of a model, in
// the kernel's pattern order. When the model carries the pattern but no code for the kernel (the
// compiler does not JIT-compile these kernels yet), the values are derived from newton_matrix,
// which is affine in its coefficients: with J(c_q, c_qd, c_y) its values,
//   dF/dq = J(1,0,0) - J(0,0,0),  dF/dqd = J(0,1,0) - J(0,0,0),  dF/dy = J(0,0,1) - J(0,0,0),
//   dF/dz = the z columns of J(0,0,0),
// exact for dF/dz and for entries without a mass-matrix term, otherwise up to a rounding of
// eps |dF/dqdd + dF/dq| (a few units in the last place). No allocation after setup().
class PartialEvaluator {
 public:
  // Throws std::runtime_error if k is not one of the model's jac_* kernels or an entry of its
  // pattern is missing from newton_matrix (fallback only).
  void setup(const CompiledModel& m, const SparseKernel& k);
  // 0 on success, else the kernel status (k > 0: entry k - 1 of the kernel is not finite).
  int32_t operator()(const double* v, double* values);
  bool uses_fallback() const { return fallback_; }

 private:
  const CompiledModel* m_ = nullptr;
  const SparseKernel* k_ = nullptr;
  bool fallback_ = false;
  int32_t coefficient_slot_ = -1;      // slot set to 1 (-1: dF/dz, no difference)
  std::vector<int32_t> newton_entry_;  // per entry of k: its index in newton_matrix
  std::vector<double> v_, j0_, j1_;
};

struct LinearSystem {
  int32_t n_q = 0, n_y = 0, n_z = 0;
  Eigen::MatrixXd M, D, K, B, E, A, G;
  std::vector<EquationLevel> eq_level;   // per row of M, D, K, B, E, A
  std::vector<EquationLevel> z_level;    // per column of B (empty: unknown)
  std::vector<int32_t> constraint_rows;  // the equation of each row of G
  std::vector<std::string> row_names;    // per equation: "file:line:col: text" or "equation i"
  std::vector<std::string> q_names, y_names, z_names;
  std::vector<double> v;  // the symbol vector the system was linearised at
};

// Evaluates the kernels mass_matrix, jac_q, jac_qd, jac_y and jac_z at v (size model.n_v).
// Throws std::runtime_error if v has the wrong size or a kernel reports a non-finite or fatal
// status.
LinearSystem linearize(const CompiledModel& m, std::span<const double> v);

// Writes <prefix>_M.mtx, _K.mtx, _D.mtx, _G.mtx and _B.mtx (and _E.mtx, _A.mtx when the model
// has ODE1 coordinates) in Matrix Market format, and <prefix>_names.txt with the row and column
// names (see docs/analysis.md). The paths written are appended to *written_paths if not null.
// Throws std::runtime_error on a write error.
void write_linear_system(const LinearSystem& s, const std::string& prefix,
                         std::vector<std::string>* written_paths);

}  // namespace mbs::rt
