#include "runtime/invdyn/InverseDynamics.h"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "runtime/io/CsvWriter.h"

namespace mbs::rt {

namespace {

using Eigen::Index;
using Eigen::MatrixXd;
using Eigen::VectorXd;

double inf_norm(const std::vector<double>& x) {
  double m = 0;
  for (double v : x) m = std::max(m, std::isfinite(v) ? std::fabs(v) : INFINITY);
  return m;
}

}  // namespace

InverseDynamics::InverseDynamics(std::shared_ptr<const CompiledModel> model,
                                 const InverseDynamicsOptions& o)
    : keep_(std::move(model)), m_(*keep_), o_(o), ck_(m_) {
  v_ = m_.v0;
  // the balance: the equations of motion the multibody lowering wrote (one per tree
  // coordinate, with or without inertia), recognised by their text
  for (int32_t i = 0; i < m_.n_eq(); ++i)
    if (m_.eq_source[static_cast<size_t>(i)].text.rfind("equation of motion along ", 0) == 0)
      dyn_rows_.push_back(i);
  // requested outputs: every unknown of the balance (efforts of the active joints, multipliers),
  // then every joint-wrench component the model outputs
  for (int32_t j = 0; j < m_.n_z; ++j)
    outputs_.push_back({m_.z[static_cast<size_t>(j)].name, j, -1});
  for (size_t c = 0; c < m_.output_names.size(); ++c)
    if (m_.output_names[c].find(".reaction_") != std::string::npos)
      outputs_.push_back({m_.output_names[c], -1, static_cast<int32_t>(c)});
  g_.resize(static_cast<size_t>(ck_.n_rows()));
  G_.resize(static_cast<size_t>(ck_.n_rows()) * static_cast<size_t>(m_.n_q));
  f_.resize(static_cast<size_t>(m_.n_eq()));
  jz_.resize(static_cast<size_t>(m_.jac_z.nnz()));
  out0_.resize(m_.output_names.size());
  out1_.resize(m_.output_names.size());
}

// n_q independent rows of G at the start, in row order (Gram-Schmidt with re-orthogonalisation).
bool InverseDynamics::select_rows() {
  const int32_t n = m_.n_q, r = ck_.n_rows();
  ck_.jacobian(v_.data(), G_);
  double scale = 0;
  for (double x : G_) scale = std::max(scale, std::fabs(x));
  std::vector<VectorXd> basis;
  for (int32_t i = 0; i < r && static_cast<int32_t>(basis.size()) < n; ++i) {
    VectorXd row(n);
    for (int32_t j = 0; j < n; ++j) row[j] = G_[static_cast<size_t>(i * n + j)];
    VectorXd w = row;
    for (int pass = 0; pass < 2; ++pass)
      for (const auto& b : basis) w -= b.dot(w) * b;
    if (w.norm() <= 1e-9 * std::max(1.0, scale)) continue;
    basis.push_back(w / w.norm());
    selected_.push_back(i);
  }
  if (static_cast<int32_t>(selected_.size()) < n) {
    message_ = fmt::format(
        "the prescribed motion and the closure constraints determine only {} of the {} joint "
        "coordinates at t = {}: give the motion of more joints (prescribed = true and an "
        "equation for the coordinate)",
        selected_.size(), n, v_[static_cast<size_t>(m_.slot_time)]);
    return false;
  }
  return true;
}

bool InverseDynamics::solve_positions(double t) {
  const int32_t n = m_.n_q;
  MatrixXd Gs(n, n);
  VectorXd gs(n);
  for (int it = 0; it <= o_.newton_max_iter; ++it) {
    ck_.position(v_.data(), g_);
    for (int32_t k = 0; k < n; ++k)
      gs[k] = g_[static_cast<size_t>(selected_[static_cast<size_t>(k)])];
    if (!gs.allFinite()) break;
    ck_.jacobian(v_.data(), G_);
    for (int32_t k = 0; k < n; ++k)
      for (int32_t j = 0; j < n; ++j)
        Gs(k, j) = G_[static_cast<size_t>(selected_[static_cast<size_t>(k)] * n + j)];
    Eigen::PartialPivLU<MatrixXd> lu(Gs);
    if (lu.rcond() < o_.rcond_min) {
      message_ = fmt::format(
          "singular configuration at t = {}: the selected closure rows lose rank (reciprocal "
          "condition {:.3g}); the mechanism passes a singular position or the branch is lost",
          t, lu.rcond());
      return false;
    }
    if (gs.lpNorm<Eigen::Infinity>() <= o_.newton_tol) return true;
    VectorXd dq = lu.solve(-gs);
    for (int32_t j = 0; j < n; ++j)
      v_[static_cast<size_t>(m_.q_slot[static_cast<size_t>(j)])] += dq[j];
    if (dq.lpNorm<Eigen::Infinity>() <= 1e-15) return true;
  }
  message_ = fmt::format(
      "the motion cannot be reconstructed at t = {}: Newton on the closure equations did not "
      "converge (residual {:.3g}); the prescribed motion may leave the mechanism's workspace",
      t, gs.lpNorm<Eigen::Infinity>());
  return false;
}

bool InverseDynamics::sample(double t, InverseSample& s) {
  const int32_t n = m_.n_q;
  const auto at = [&](int32_t slot) -> double& { return v_[static_cast<size_t>(slot)]; };
  at(m_.slot_time) = t;
  if (!started_) {
    if (!select_rows()) return false;
  } else {
    // prediction from the previous accepted sample (second-order Taylor)
    double h = t - prev_t_;
    for (int32_t j = 0; j < n; ++j)
      at(m_.q_slot[j]) = prev_q_[j] + h * prev_qd_[j] + 0.5 * h * h * prev_qdd_[j];
  }
  if (!solve_positions(t)) return false;
  MatrixXd Gs(n, n);
  for (int32_t k = 0; k < n; ++k)
    for (int32_t j = 0; j < n; ++j) Gs(k, j) = G_[static_cast<size_t>(selected_[k] * n + j)];
  Eigen::PartialPivLU<MatrixXd> lu(Gs);
  // velocities: G qd = -g_t (the velocity form at qd = 0 is g_t)
  for (int32_t j = 0; j < n; ++j) at(m_.qd_slot[j]) = 0.0;
  std::vector<double> gd(g_.size()), gam(g_.size());
  ck_.velocity(v_.data(), gd);
  VectorXd rhs(n);
  for (int32_t k = 0; k < n; ++k) rhs[k] = -gd[static_cast<size_t>(selected_[k])];
  VectorXd qd = lu.solve(rhs);
  for (int32_t j = 0; j < n; ++j) at(m_.qd_slot[j]) = qd[j];
  // accelerations: G qdd = -gamma
  ck_.bias(v_.data(), gam);
  for (int32_t k = 0; k < n; ++k) rhs[k] = -gam[static_cast<size_t>(selected_[k])];
  VectorXd qdd = lu.solve(rhs);
  for (int32_t j = 0; j < n; ++j) at(m_.qdd_slot[j]) = qdd[j];
  // checks on every row: g, dg/dt, d2g/dt2 = G qdd + gamma
  ck_.position(v_.data(), g_);
  ck_.velocity(v_.data(), gd);
  s.closure = inf_norm(g_);
  s.velocity = inf_norm(gd);
  s.acceleration = 0;
  for (size_t i = 0; i < g_.size(); ++i) {
    double a = gam[i];
    for (int32_t j = 0; j < n; ++j)
      a += G_[i * static_cast<size_t>(n) + static_cast<size_t>(j)] * qdd[j];
    s.acceleration = std::max(s.acceleration, std::fabs(a));
  }
  const double scale_q = 1.0 + qd.lpNorm<Eigen::Infinity>() + qdd.lpNorm<Eigen::Infinity>();
  if (!(s.closure <= o_.check_tol) || !(s.velocity <= o_.check_tol * scale_q) ||
      !(s.acceleration <= o_.check_tol * scale_q * scale_q)) {
    message_ = fmt::format(
        "the reconstructed motion violates the constraints at t = {} (closure {:.3g}, velocity "
        "{:.3g}, acceleration {:.3g}): a constraint row that was dependent at the start is not "
        "any more (the rank of the closure Jacobian changed)",
        t, s.closure, s.velocity, s.acceleration);
    return false;
  }

  // ---- the balance A z = b over the equations of motion
  const int32_t nz = m_.n_z, nd = static_cast<int32_t>(dyn_rows_.size());
  for (int32_t j = 0; j < nz; ++j) at(m_.z_slot[j]) = 0.0;
  m_.residual(v_.data(), f_.data());
  m_.jac_z.values(v_.data(), jz_.data());
  std::vector<int32_t> row_of(static_cast<size_t>(m_.n_eq()), -1);
  for (int32_t i = 0; i < nd; ++i) row_of[static_cast<size_t>(dyn_rows_[i])] = i;
  MatrixXd A = MatrixXd::Zero(nd, nz);
  VectorXd b(nd);
  for (int32_t i = 0; i < nd; ++i) b[i] = -f_[static_cast<size_t>(dyn_rows_[i])];
  for (int32_t e = 0; e < m_.jac_z.nnz(); ++e) {
    int32_t r = row_of[static_cast<size_t>(m_.jac_z.row[static_cast<size_t>(e)])];
    if (r >= 0) A(r, m_.jac_z.col[static_cast<size_t>(e)]) = jz_[static_cast<size_t>(e)];
  }
  // Entries at rounding level are zeros: a reaction that does no work along any coordinate (an
  // internal wrench pair under a rigid motion) has coefficients of 1e-16 from the symbolic
  // expressions, which scaling must not blow up to O(1).
  const double amax = A.lpNorm<Eigen::Infinity>();
  const double zero_tol = 64 * std::numeric_limits<double>::epsilon() * std::max(amax, 1e-300);
  for (Index i = 0; i < A.rows(); ++i)
    for (Index j = 0; j < A.cols(); ++j)
      if (std::fabs(A(i, j)) <= zero_tol) A(i, j) = 0.0;
  // positive diagonal scaling of equations (rows) and unknowns (columns)
  VectorXd rs(nd), cs(nz);
  for (int32_t i = 0; i < nd; ++i) {
    double mx = A.row(i).lpNorm<Eigen::Infinity>();
    rs[i] = mx > 0 ? 1.0 / mx : 1.0;
  }
  MatrixXd As = rs.asDiagonal() * A;
  for (int32_t j = 0; j < nz; ++j) {
    double mx = As.col(j).lpNorm<Eigen::Infinity>();
    cs[j] = mx > 0 ? 1.0 / mx : 1.0;
  }
  As = As * cs.asDiagonal();
  VectorXd bs = rs.asDiagonal() * b;
  Eigen::JacobiSVD<MatrixXd> svd(As, Eigen::ComputeFullU | Eigen::ComputeFullV);
  const VectorXd& sig = svd.singularValues();
  const double smax = sig.size() > 0 ? sig[0] : 0.0;
  auto rank_at = [&](double factor) {
    double tol = factor * (o_.rank_atol + o_.rank_rtol * smax);
    int r = 0;
    for (Index k = 0; k < sig.size(); ++k) r += sig[k] > tol ? 1 : 0;
    return r;
  };
  s.rank = rank_at(1.0);
  s.nullity = nz - s.rank;
  s.rank_stable = rank_at(10.0) == s.rank && rank_at(0.1) == s.rank;
  const MatrixXd Vn = svd.matrixV().rightCols(s.nullity);
  // minimum-norm solution in the scaled unknowns, from the rank-r pseudo-inverse
  VectorXd x = VectorXd::Zero(nz);
  for (int k = 0; k < s.rank; ++k)
    x += svd.matrixV().col(k) * (svd.matrixU().col(k).dot(bs) / sig[k]);
  s.balance = (As * x - bs).lpNorm<Eigen::Infinity>();
  // wrench outputs are linear in z: their coefficients by probing the outputs kernel
  m_.outputs(v_.data(), out0_.data());
  MatrixXd C;
  bool any_column = std::any_of(outputs_.begin(), outputs_.end(),
                                [](const InverseOutput& o) { return o.column >= 0; });
  if (any_column) {
    C.resize(static_cast<Index>(out0_.size()), nz);
    for (int32_t j = 0; j < nz; ++j) {
      at(m_.z_slot[j]) = cs[j];  // one unit of scaled unknown j
      m_.outputs(v_.data(), out1_.data());
      at(m_.z_slot[j]) = 0.0;
      for (size_t c = 0; c < out0_.size(); ++c) C(static_cast<Index>(c), j) = out1_[c] - out0_[c];
    }
  }
  s.value.assign(outputs_.size(), std::numeric_limits<double>::quiet_NaN());
  s.unique.assign(outputs_.size(), 0);
  s.dual = 0;
  VectorXd c(nz);
  for (size_t k = 0; k < outputs_.size(); ++k) {
    const InverseOutput& o = outputs_[k];
    double offset = 0;
    if (o.z >= 0) {
      c.setZero();
      c[o.z] = cs[o.z];  // z_j = cs_j x_j
    } else {
      c = C.row(o.column).transpose();
      offset = out0_[static_cast<size_t>(o.column)];
    }
    double cn = c.norm();
    bool unique = cn == 0.0 || s.nullity == 0 || (Vn.transpose() * c).norm() <= o_.unique_tol * cn;
    if (!unique) continue;
    // the dual vector: As^T w = c (minimum norm); the value is w.b
    VectorXd w = VectorXd::Zero(nd);
    for (int kk = 0; kk < s.rank; ++kk)
      w += svd.matrixU().col(kk) * (svd.matrixV().col(kk).dot(c) / sig[kk]);
    if (cn > 0) s.dual = std::max(s.dual, (As.transpose() * w - c).norm() / cn);
    s.value[k] = w.dot(bs) + offset;
    s.unique[k] = 1;
  }
  // accept the sample
  s.t = t;
  s.q.resize(static_cast<size_t>(n));
  s.qd.resize(static_cast<size_t>(n));
  s.qdd.resize(static_cast<size_t>(n));
  for (int32_t j = 0; j < n; ++j) {
    s.q[j] = at(m_.q_slot[j]);
    s.qd[j] = qd[j];
    s.qdd[j] = qdd[j];
  }
  prev_q_ = s.q;
  prev_qd_ = s.qd;
  prev_qdd_ = s.qdd;
  prev_t_ = t;
  started_ = true;
  return true;
}

InverseDynamicsRun inverse_dynamics_to_csv(std::shared_ptr<const CompiledModel> model,
                                           const InverseDynamicsOptions& options,
                                           const std::string& csv_path) {
  InverseDynamics id(model, options);
  const CompiledModel& m = *model;
  InverseDynamicsRun run;
  std::vector<std::string> names;
  for (const auto& q : m.q) names.push_back(q.name);
  for (const auto& o : id.outputs()) names.push_back(o.name);
  run.names = names;
  run.unique_samples.assign(id.outputs().size(), 0);
  CsvWriter csv(csv_path, names);
  csv.set_nan_as_empty(true);
  const double t0 = m.v0[static_cast<size_t>(m.slot_time)];
  const int64_t steps = std::max<int64_t>(0, std::llround((options.t_end - t0) / options.h));
  std::vector<double> row(names.size());
  InverseSample s;
  for (int64_t k = 0; k <= steps; ++k) {
    const double t = t0 + static_cast<double>(k) * options.h;
    if (!id.sample(t, s)) {
      run.message = id.message();
      csv.close();
      return run;
    }
    size_t c = 0;
    for (double x : s.q) row[c++] = x;
    for (size_t i = 0; i < s.value.size(); ++i) {
      row[c++] = s.value[i];
      run.unique_samples[i] += s.unique[i];
    }
    csv.write_row(t, row);
    ++run.samples;
    run.max_closure = std::max(run.max_closure, s.closure);
    run.max_velocity = std::max(run.max_velocity, s.velocity);
    run.max_acceleration = std::max(run.max_acceleration, s.acceleration);
    run.max_balance = std::max(run.max_balance, s.balance);
    run.max_dual = std::max(run.max_dual, s.dual);
    run.min_rank = std::min(run.min_rank, s.rank);
    run.max_rank = std::max(run.max_rank, s.rank);
    run.rank_stable = run.rank_stable && s.rank_stable;
  }
  csv.close();
  run.ok = true;
  return run;
}

std::string format_inverse_summary(const InverseDynamicsRun& run) {
  std::string out = fmt::format("inverse dynamics: {} samples\n", run.samples);
  if (run.samples == 0) return out;
  std::string always, never, some;
  const size_t first = run.names.size() - run.unique_samples.size();
  for (size_t i = 0; i < run.unique_samples.size(); ++i) {
    const std::string& n = run.names[first + i];
    if (run.unique_samples[i] == run.samples)
      always += "  " + n + "\n";
    else if (run.unique_samples[i] == 0)
      never += "  " + n + "\n";
    else
      some += fmt::format("  {} ({} of {} samples)\n", n, run.unique_samples[i], run.samples);
  }
  if (!always.empty()) out += "determined uniquely in every sample:\n" + always;
  if (!some.empty()) out += "determined in some samples only:\n" + some;
  if (!never.empty()) out += "not determined by the motion (left empty):\n" + never;
  out += fmt::format(
      "largest residuals: closure {:.3g}, velocity {:.3g}, acceleration {:.3g}, scaled balance "
      "{:.3g}, dual {:.3g}\n",
      run.max_closure, run.max_velocity, run.max_acceleration, run.max_balance, run.max_dual);
  out += fmt::format("rank of the scaled balance matrix: {}{}{}\n", run.min_rank,
                     run.max_rank != run.min_rank ? fmt::format(" to {}", run.max_rank) : "",
                     run.rank_stable ? " (stable under a tenfold change of the threshold)"
                                     : " (NOT stable under a tenfold change of the threshold)");
  return out;
}

}  // namespace mbs::rt
