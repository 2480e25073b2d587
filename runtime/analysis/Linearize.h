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
