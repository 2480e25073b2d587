#include "runtime/model/Constraints.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "runtime/linalg/DenseLu.h"

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

namespace mbs::rt {

bool impulse_form(const CompiledModel& m) {
  int32_t dynamic = 0, position = 0;
  for (EquationLevel l : m.eq_level) {
    dynamic += l == EquationLevel::Dynamic ? 1 : 0;
    position += l == EquationLevel::Position ? 1 : 0;
  }
  return m.n_y == 0 && dynamic + position == m.n_eq();
}

namespace {

// The system of an impulse of the constraint forces at the state v: unknowns [d | Lambda | the
// holding impulses of `keep`], rows [dynamic | G | kept],
//   dF/dqdd d + dF/dz Lambda = 0,  G d = rhs,  d_j = 0 for j in keep,
// factored in `lu`; the right-hand side is left to the caller (x[next ...] = the G rows).
// Returns "" or why it could not be set up.
std::string factor_impulse_system(const CompiledModel& m, const double* v,
                                  std::span<const int32_t> keep, ConstraintKinematics& ck,
                                  std::vector<double>& G, DenseLu& lu, int32_t& g_row) {
  const int32_t nr = ck.n_rows(), nq = m.n_q, nk = static_cast<int32_t>(keep.size());
  const int32_t n = m.n_q + m.n_z + nk;
  std::vector<int32_t> kkt_row(static_cast<size_t>(m.n_eq()), -1);
  int32_t next = 0;
  for (int32_t i = 0; i < m.n_eq(); ++i)
    if (m.eq_level[static_cast<size_t>(i)] == EquationLevel::Dynamic) kkt_row[i] = next++;
  std::vector<int32_t> row, col;
  std::vector<double> val;
  std::vector<double> mass(static_cast<size_t>(m.mass_matrix.nnz()));
  std::vector<double> jz(static_cast<size_t>(m.jac_z.nnz()));
  G.assign(static_cast<size_t>(nr) * static_cast<size_t>(nq), 0.0);
  const bool ok = m.mass_matrix.values(v, mass.data()) == 0 && m.jac_z.values(v, jz.data()) == 0 &&
                  ck.jacobian(v, G) == 0;
  if (!ok) return "the system of the impulse could not be evaluated";
  for (int32_t e = 0; e < m.mass_matrix.nnz(); ++e) {
    const int32_t r = kkt_row[m.mass_matrix.row[e]], c = m.mass_matrix.col[e];
    if (r < 0 || c >= nq) continue;
    row.push_back(r), col.push_back(c), val.push_back(mass[e]);
  }
  for (int32_t e = 0; e < m.jac_z.nnz(); ++e) {
    const int32_t r = kkt_row[m.jac_z.row[e]];
    if (r < 0) continue;
    row.push_back(r), col.push_back(nq + m.jac_z.col[e]), val.push_back(jz[e]);
  }
  for (int32_t k = 0; k < nr; ++k)
    for (int32_t j = 0; j < nq; ++j)
      if (const double g = G[static_cast<size_t>(k) * nq + j]; g != 0.0)
        row.push_back(next + k), col.push_back(j), val.push_back(g);
  for (int32_t k = 0; k < nk; ++k) {  // d_j = 0, held by an impulse on coordinate j
    const int32_t j = keep[static_cast<size_t>(k)], held = nq + m.n_z + k;
    row.push_back(held), col.push_back(j), val.push_back(1.0);
    row.push_back(j), col.push_back(held), val.push_back(1.0);
  }
  lu.setup(n, row, col);
  if (lu.factor(val.data()) != 0)
    return "the system of the impulse is singular (the constraints cannot be met while the "
           "coordinates and velocities that must keep their values keep them)";
  g_row = next;
  return "";
}

}  // namespace

std::string project_velocities_by_impulse(const CompiledModel& m, std::span<double> v,
                                          std::span<const int32_t> keep) {
  if (m.n_z == 0) return "";
  if (!impulse_form(m))
    return "the velocities are made consistent by an impulse only in models whose equations are "
           "equations of motion with position-level constraints and their multipliers (no "
           "first-order states, no velocity-level or algebraic rows)";
  ConstraintKinematics ck(m);
  const int32_t nr = ck.n_rows(), nq = m.n_q;
  if (nr == 0) return "";
  std::vector<double> G;
  DenseLu lu;
  int32_t g_row = 0;
  if (std::string why = factor_impulse_system(m, v.data(), keep, ck, G, lu, g_row); !why.empty())
    return why + " (velocities)";
  std::vector<double> x(static_cast<size_t>(m.n_q + m.n_z) + keep.size(), 0.0);
  std::span<double> gd(x.data() + g_row, static_cast<size_t>(nr));
  if (ck.velocity(v.data(), gd) != 0)
    return "the velocity form of the constraints could not be evaluated";
  for (double& r : gd) r = -r;  // G dqd = -(G qd + g_t)
  lu.solve(x.data());
  for (int32_t j : keep) x[static_cast<size_t>(j)] = 0.0;  // to rounding already; exactly
  for (int32_t i = 0; i < nq; ++i) v[static_cast<size_t>(m.qd_slot[i])] += x[i];
  return "";
}

std::string project_positions(const CompiledModel& m, std::span<double> v,
                              std::span<const int32_t> keep) {
  if (m.n_z == 0) return "";
  if (!impulse_form(m))
    return "new positions are projected on the constraints only in models whose equations are "
           "equations of motion with position-level constraints and their multipliers (no "
           "first-order states, no velocity-level or algebraic rows)";
  ConstraintKinematics ck(m);
  const int32_t nr = ck.n_rows(), nq = m.n_q;
  if (nr == 0) return "";
  std::vector<double> G, g(static_cast<size_t>(nr)), x;
  const auto scale = [&] {  // the size of the coordinates, for the tolerance
    double s = 1.0;
    for (int32_t i = 0; i < nq; ++i)
      s = std::max(s, std::fabs(v[static_cast<size_t>(m.q_slot[i])]));
    return s;
  };
  const double tol = 1e-13 * scale();
  double norm = 0.0;
  for (int it = 0; it < kProjectionIterations; ++it) {
    if (ck.position(v.data(), g) != 0) return "the constraints could not be evaluated";
    norm = 0.0;
    for (double r : g) norm = std::max(norm, std::fabs(r));
    if (norm <= tol) return "";
    DenseLu lu;
    int32_t g_row = 0;
    if (std::string why = factor_impulse_system(m, v.data(), keep, ck, G, lu, g_row); !why.empty())
      return why + " (positions)";
    x.assign(static_cast<size_t>(m.n_q + m.n_z) + keep.size(), 0.0);
    for (int32_t k = 0; k < nr; ++k) x[static_cast<size_t>(g_row + k)] = -g[static_cast<size_t>(k)];
    lu.solve(x.data());
    for (int32_t j : keep) x[static_cast<size_t>(j)] = 0.0;
    for (int32_t i = 0; i < nq; ++i) v[static_cast<size_t>(m.q_slot[i])] += x[i];
  }
  return fmt::format(
      "the projection of the positions on the constraints did not converge in {} Newton "
      "steps (largest constraint residual {:.3g}); the new coordinates may be too far from any "
      "configuration that closes the loops",
      kProjectionIterations, norm);
}

}  // namespace mbs::rt
