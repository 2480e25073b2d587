#include "runtime/solvers/Rk4.h"

#include <fmt/format.h>

#include <algorithm>

namespace mbs::rt {

Rk4::Rk4(std::shared_ptr<const CompiledModel> model, const SolverOptions& options)
    : Integrator(std::move(model), options) {
  const auto& m = model_;
  if (m.n_z > 0) {
    std::string names;
    for (int32_t k = 0; k < m.n_z && k < 5; ++k) {
      names += (k ? ", " : "") + unknown_name(m, m.n_q + m.n_y + k);
    }
    if (m.n_z > 5) names += ", ...";
    throw SolverSetupError(fmt::format(
        "the rk4 solver cannot integrate model '{}': it has {} algebraic variable(s) ({}), and "
        "an explicit method has no way to solve for them; use --solver gen-alpha",
        m.name, m.n_z, names));
  }
  solver_.setup(m.n_eq(), m.newton_matrix.row, m.newton_matrix.col);
  n_state_ = 2 * m.n_q + m.n_y;
  const size_t ns = static_cast<size_t>(n_state_);
  for (auto* vec : {&xi0_, &d0_, &k2_, &k3_, &k4_, &stage_, &xi1_, &d1_}) vec->assign(ns, 0.0);
}

SolveStatus Rk4::step() {
  if (!initialized_ && initialize() == SolveStatus::Failed) return SolveStatus::Failed;
  return advance_grid_step(*this);
}

SolveStatus Rk4::run(const Observer& observer) {
  return run_loop(*this, observer);
}

SolveStatus Rk4::initialize() {
  if (failure_) return SolveStatus::Failed;
  if (initialized_) return SolveStatus::Ok;
  const auto start = std::chrono::steady_clock::now();
  const auto& m = model_;
  double* v = ws_.v.data();
  v[m.slot_c_q] = v[m.slot_c_qd] = v[m.slot_c_y] = 0.0;
  for (int32_t i = 0; i < m.n_q; ++i) {
    xi0_[i] = v[m.q_slot[i]];
    xi0_[m.n_q + i] = v[m.qd_slot[i]];
  }
  for (int32_t j = 0; j < m.n_y; ++j) xi0_[2 * m.n_q + j] = v[m.y_slot[j]];
  const bool ok = derivative(t_, xi0_.data(), d0_.data());
  stats_.wall_time +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!ok) {
    fail(attempt_failure_, FailurePhase::InitialValues, 0.0, 0);
    return SolveStatus::Failed;
  }
  initialized_ = true;
  return SolveStatus::Ok;
}

bool Rk4::derivative(double t, const double* xi, double* d) {
  const auto& m = model_;
  double* v = ws_.v.data();
  const int32_t nq = m.n_q, ny = m.n_y, n = m.n_eq();
  v[m.slot_time] = t;
  for (int32_t i = 0; i < nq; ++i) {
    v[m.q_slot[i]] = xi[i];
    v[m.qd_slot[i]] = xi[nq + i];
    v[m.qdd_slot[i]] = 0.0;
  }
  for (int32_t j = 0; j < ny; ++j) {
    v[m.y_slot[j]] = xi[2 * nq + j];
    v[m.yd_slot[j]] = 0.0;
  }
  AttemptFailure& f = attempt_failure_;
  int32_t st = m.residual(v, ws_.residual.data());
  ++stats_.residual_evaluations;
  if (st != 0) {
    f = AttemptFailure{};
    f.kind = st > 0 ? FailureKind::NonFiniteResidual : FailureKind::KernelFatal;
    f.kernel_status = st;
    if (st > 0) f.equation = st - 1, f.residual = ws_.residual[st - 1];
    return false;
  }
  const SparseKernel& A = m.newton_matrix;
  st = A.values(v, ws_.newton_values.data());
  ++stats_.jacobian_evaluations;
  if (st != 0) {
    f = AttemptFailure{};
    f.kind = st > 0 ? FailureKind::NonFiniteJacobian : FailureKind::KernelFatal;
    f.kernel_status = st;
    if (st > 0) f.equation = A.row[st - 1], f.unknown = A.col[st - 1];
    return false;
  }
  st = solver_.factor(ws_.newton_values.data());
  ++stats_.factorizations;
  if (st != 0) {
    f = AttemptFailure{};
    f.kind = FailureKind::SingularMatrix;
    f.unknown = st - 1;
    return false;
  }
  double* x = ws_.x.data();
  for (int32_t i = 0; i < n; ++i) x[i] = -ws_.residual[i];
  solver_.solve(x);
  ++stats_.linear_solves;
  for (int32_t i = 0; i < nq; ++i) {
    d[i] = xi[nq + i];
    d[nq + i] = x[i];
    v[m.qdd_slot[i]] = x[i];
  }
  for (int32_t j = 0; j < ny; ++j) {
    d[2 * nq + j] = x[nq + j];
    v[m.yd_slot[j]] = x[nq + j];
  }
  return true;
}

bool Rk4::attempt(double h) {
  const int32_t ns = n_state_;
  const double* xi = xi0_.data();
  const double* k1 = d0_.data();
  double* s = stage_.data();
  const auto failed = [this] {
    restore_accepted_state();
    return false;
  };
  for (int32_t i = 0; i < ns; ++i) s[i] = xi[i] + 0.5 * h * k1[i];
  if (!derivative(t_ + 0.5 * h, s, k2_.data())) return failed();
  for (int32_t i = 0; i < ns; ++i) s[i] = xi[i] + 0.5 * h * k2_[i];
  if (!derivative(t_ + 0.5 * h, s, k3_.data())) return failed();
  for (int32_t i = 0; i < ns; ++i) s[i] = xi[i] + h * k3_[i];
  if (!derivative(t_ + h, s, k4_.data())) return failed();
  const double w = h / 6.0;
  for (int32_t i = 0; i < ns; ++i) {
    xi1_[i] = xi[i] + w * (k1[i] + 2.0 * k2_[i] + 2.0 * k3_[i] + k4_[i]);
  }
  // The derivative at the end: output values (qdd, yd) and the first stage of the next step.
  if (!derivative(t_ + h, xi1_.data(), d1_.data())) return failed();
  return true;
}

void Rk4::accept(double) {
  xi0_.swap(xi1_);
  d0_.swap(d1_);
}

void Rk4::restore_accepted_state() {
  const auto& m = model_;
  double* v = ws_.v.data();
  const int32_t nq = m.n_q;
  v[m.slot_time] = t_;
  for (int32_t i = 0; i < nq; ++i) {
    v[m.q_slot[i]] = xi0_[i];
    v[m.qd_slot[i]] = xi0_[nq + i];
    v[m.qdd_slot[i]] = d0_[nq + i];
  }
  for (int32_t j = 0; j < m.n_y; ++j) {
    v[m.y_slot[j]] = xi0_[2 * nq + j];
    v[m.yd_slot[j]] = d0_[2 * nq + j];
  }
}

}  // namespace mbs::rt
