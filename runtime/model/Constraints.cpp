#include "runtime/model/Constraints.h"

#include <algorithm>

namespace mbs::rt {

ConstraintKinematics::ConstraintKinematics(const CompiledModel& model) : m_(model) {
  row_of_eq_.assign(static_cast<size_t>(model.n_eq()), -1);
  for (int32_t i = 0; i < model.n_eq(); ++i)
    if (model.eq_level[static_cast<size_t>(i)] == EquationLevel::Position) {
      row_of_eq_[static_cast<size_t>(i)] = static_cast<int32_t>(rows_.size());
      rows_.push_back(i);
    }
  // the dedicated kernels (only the constraint rows) when the model has them, else the rows of
  // the whole residual, jac_q, index-2 and initial systems
  own_ = model.constraint_g.fn != nullptr && model.constraint_G.values.fn != nullptr &&
         model.constraint_gd.fn != nullptr && model.constraint_gamma.fn != nullptr &&
         model.constraint_g.n_out == static_cast<int32_t>(rows_.size());
  f_.resize(static_cast<size_t>(model.n_eq()));
  jac_.resize(static_cast<size_t>(own_ ? model.constraint_G.nnz() : model.jac_q.nnz()));
  v_.resize(static_cast<size_t>(model.n_v));
}

int32_t ConstraintKinematics::position(const double* v, std::span<double> g) {
  if (own_) return m_.constraint_g(v, g.data());
  int32_t st = m_.residual(v, f_.data());
  for (size_t k = 0; k < rows_.size(); ++k) g[k] = f_[static_cast<size_t>(rows_[k])];
  return st;
}

int32_t ConstraintKinematics::jacobian(const double* v, std::span<double> G) {
  std::fill(G.begin(), G.begin() + static_cast<std::ptrdiff_t>(rows_.size() * m_.n_q), 0.0);
  const SparseKernel& J = own_ ? m_.constraint_G : m_.jac_q;
  int32_t st = J.values(v, jac_.data());
  for (int32_t k = 0; k < J.nnz(); ++k) {
    int32_t r = J.row[static_cast<size_t>(k)];
    if (!own_) r = row_of_eq_[static_cast<size_t>(r)];
    if (r < 0) continue;
    G[static_cast<size_t>(r) * static_cast<size_t>(m_.n_q) +
      static_cast<size_t>(J.col[static_cast<size_t>(k)])] = jac_[static_cast<size_t>(k)];
  }
  return st;
}

std::vector<std::vector<int32_t>> ConstraintKinematics::row_columns() const {
  std::vector<std::vector<int32_t>> cols(rows_.size());
  const SparseKernel& J = own_ ? m_.constraint_G : m_.jac_q;
  for (int32_t k = 0; k < J.nnz(); ++k) {
    int32_t r = J.row[static_cast<size_t>(k)];
    if (!own_) r = row_of_eq_[static_cast<size_t>(r)];
    if (r >= 0) cols[static_cast<size_t>(r)].push_back(J.col[static_cast<size_t>(k)]);
  }
  for (auto& c : cols) {
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
  }
  return cols;
}

int32_t ConstraintKinematics::velocity(const double* v, std::span<double> gd) {
  if (own_) return m_.constraint_gd(v, gd.data());
  int32_t st = m_.index2_residual(v, f_.data());
  for (size_t k = 0; k < rows_.size(); ++k) gd[k] = f_[static_cast<size_t>(rows_[k])];
  return st;
}

int32_t ConstraintKinematics::bias(const double* v, std::span<double> gamma) {
  if (own_) return m_.constraint_gamma(v, gamma.data());
  std::copy(v, v + m_.n_v, v_.begin());
  for (int32_t s : m_.qdd_slot) v_[static_cast<size_t>(s)] = 0.0;
  int32_t st = m_.init_residual(v_.data(), f_.data());
  for (size_t k = 0; k < rows_.size(); ++k) gamma[k] = f_[static_cast<size_t>(rows_[k])];
  return st;
}

}  // namespace mbs::rt
