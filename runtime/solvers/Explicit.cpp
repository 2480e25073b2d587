#include "runtime/solvers/Explicit.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <string>

namespace mbs::rt {

namespace {

// ---- the tableaus (a: row-major, stages x stages)

constexpr std::array<double, 1> kEulerC = {0.0};
constexpr std::array<double, 1> kEulerA = {0.0};
constexpr std::array<double, 1> kEulerB = {1.0};

constexpr std::array<double, 2> kMidC = {0.0, 0.5};
constexpr std::array<double, 4> kMidA = {0.0, 0.0, 0.5, 0.0};
constexpr std::array<double, 2> kMidB = {0.0, 1.0};

// Kutta's third-order method.
constexpr std::array<double, 3> kRk33C = {0.0, 0.5, 1.0};
constexpr std::array<double, 9> kRk33A = {0.0, 0.0, 0.0, 0.5, 0.0, 0.0, -1.0, 2.0, 0.0};
constexpr std::array<double, 3> kRk33B = {1.0 / 6.0, 2.0 / 3.0, 1.0 / 6.0};

constexpr std::array<double, 4> kRk44C = {0.0, 0.5, 0.5, 1.0};
constexpr std::array<double, 16> kRk44A = {0.0, 0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0,
                                           0.0, 0.5, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0};
constexpr std::array<double, 4> kRk44B = {1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0};

// Butcher's 7-stage sixth-order method (J. C. Butcher, On Runge-Kutta processes of high order,
// J. Austral. Math. Soc. 4 (1964); the form in Butcher, Numerical Methods for ODEs, sec. 324).
constexpr std::array<double, 7> kRk6C = {0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0 / 3.0, 0.5, 0.5, 1.0};
constexpr std::array<double, 49> kRk6A = {
    0.0,         0.0,         0.0,         0.0,         0.0, 0.0,          0.0,  //
    1.0 / 3.0,   0.0,         0.0,         0.0,         0.0, 0.0,          0.0,  //
    0.0,         2.0 / 3.0,   0.0,         0.0,         0.0, 0.0,          0.0,  //
    1.0 / 12.0,  1.0 / 3.0,   -1.0 / 12.0, 0.0,         0.0, 0.0,          0.0,  //
    -1.0 / 16.0, 9.0 / 8.0,   -3.0 / 16.0, -3.0 / 8.0,  0.0, 0.0,          0.0,  //
    0.0,         9.0 / 8.0,   -3.0 / 8.0,  -3.0 / 4.0,  0.5, 0.0,          0.0,  //
    9.0 / 44.0,  -9.0 / 11.0, 63.0 / 44.0, 18.0 / 11.0, 0.0, -16.0 / 11.0, 0.0};
constexpr std::array<double, 7> kRk6B = {11.0 / 120.0, 0.0,         27.0 / 40.0, 27.0 / 40.0,
                                         -4.0 / 15.0,  -4.0 / 15.0, 11.0 / 120.0};

// Bogacki-Shampine 3(2) (MATLAB's ode23): b of order 3, bhat of order 2, FSAL.
constexpr std::array<double, 4> kBs23C = {0.0, 0.5, 0.75, 1.0};
constexpr std::array<double, 16> kBs23A = {0.0,       0.0,       0.0,       0.0,  //
                                           0.5,       0.0,       0.0,       0.0,  //
                                           0.0,       0.75,      0.0,       0.0,  //
                                           2.0 / 9.0, 1.0 / 3.0, 4.0 / 9.0, 0.0};
constexpr std::array<double, 4> kBs23B = {2.0 / 9.0, 1.0 / 3.0, 4.0 / 9.0, 0.0};
constexpr std::array<double, 4> kBs23Bhat = {7.0 / 24.0, 0.25, 1.0 / 3.0, 0.125};

// Dormand-Prince 5(4) (Hairer, Norsett, Wanner, Solving ODEs I, table 5.2): b of order 5, FSAL.
constexpr std::array<double, 7> kDp5C = {0.0, 0.2, 0.3, 0.8, 8.0 / 9.0, 1.0, 1.0};
constexpr std::array<double, 49> kDp5A = {0.0,
                                          0.0,
                                          0.0,
                                          0.0,
                                          0.0,
                                          0.0,
                                          0.0,  //
                                          0.2,
                                          0.0,
                                          0.0,
                                          0.0,
                                          0.0,
                                          0.0,
                                          0.0,  //
                                          3.0 / 40.0,
                                          9.0 / 40.0,
                                          0.0,
                                          0.0,
                                          0.0,
                                          0.0,
                                          0.0,  //
                                          44.0 / 45.0,
                                          -56.0 / 15.0,
                                          32.0 / 9.0,
                                          0.0,
                                          0.0,
                                          0.0,
                                          0.0,  //
                                          19372.0 / 6561.0,
                                          -25360.0 / 2187.0,
                                          64448.0 / 6561.0,
                                          -212.0 / 729.0,
                                          0.0,
                                          0.0,
                                          0.0,  //
                                          9017.0 / 3168.0,
                                          -355.0 / 33.0,
                                          46732.0 / 5247.0,
                                          49.0 / 176.0,
                                          -5103.0 / 18656.0,
                                          0.0,
                                          0.0,  //
                                          35.0 / 384.0,
                                          0.0,
                                          500.0 / 1113.0,
                                          125.0 / 192.0,
                                          -2187.0 / 6784.0,
                                          11.0 / 84.0,
                                          0.0};
constexpr std::array<double, 7> kDp5B = {
    35.0 / 384.0, 0.0, 500.0 / 1113.0, 125.0 / 192.0, -2187.0 / 6784.0, 11.0 / 84.0, 0.0};
constexpr std::array<double, 7> kDp5Bhat = {
    5179.0 / 57600.0, 0.0,       7571.0 / 16695.0, 393.0 / 640.0, -92097.0 / 339200.0,
    187.0 / 2100.0,   1.0 / 40.0};

const std::array<ButcherTableau, 7> kTableaus = {{
    {"euler", 1, 1, 0, kEulerC, kEulerA, kEulerB, {}},
    {"midpoint", 2, 2, 0, kMidC, kMidA, kMidB, {}},
    {"rk33", 3, 3, 0, kRk33C, kRk33A, kRk33B, {}},
    {"rk44", 4, 4, 0, kRk44C, kRk44A, kRk44B, {}},
    {"rk6", 7, 6, 0, kRk6C, kRk6A, kRk6B, {}},
    {"ode23", 4, 3, 2, kBs23C, kBs23A, kBs23B, kBs23Bhat},
    {"dopri5", 7, 5, 4, kDp5C, kDp5A, kDp5B, kDp5Bhat},
}};

constexpr int32_t kMaxNames = 5;

std::string z_names(const CompiledModel& m) {
  std::string names;
  for (int32_t k = 0; k < m.n_z && k < kMaxNames; ++k) {
    names += (k ? ", " : "") + unknown_name(m, m.n_q + m.n_y + k);
  }
  if (m.n_z > kMaxNames) names += ", ...";
  return names;
}

int32_t state_unknown(const CompiledModel& m, int32_t j) {
  return j < m.n_q ? j : j < 2 * m.n_q ? j - m.n_q : j - m.n_q;
}

}  // namespace

bool ButcherTableau::fsal() const {
  const int32_t s = stages;
  if (s < 2 || c[static_cast<size_t>(s - 1)] != 1.0) return false;
  for (int32_t j = 0; j < s; ++j) {
    if (a[static_cast<size_t>((s - 1) * s + j)] != b[static_cast<size_t>(j)]) return false;
  }
  return true;
}

const ButcherTableau& explicit_tableau(SolverKind kind) {
  const auto i = static_cast<size_t>(kind) - static_cast<size_t>(SolverKind::Euler);
  return kTableaus.at(i);
}

ExplicitRk::ExplicitRk(std::shared_ptr<const CompiledModel> model, const SolverOptions& options)
    : Integrator(std::move(model), options), tab_(explicit_tableau(options.solver)) {
  const auto& m = model_;
  const std::string_view solver = name();
  n_x_ = m.n_q + m.n_y;
  n_state_ = 2 * m.n_q + m.n_y;
  const int32_t n = m.n_eq();
  const SparseKernel& A = m.newton_matrix;
  // Rows that contain a highest derivative (an entry in a [qdd | yd] column).
  std::vector<bool> has_hd(static_cast<size_t>(n), false);
  for (int32_t e = 0; e < A.nnz(); ++e) {
    if (A.col[e] < n_x_) has_hd[static_cast<size_t>(A.row[e])] = true;
  }
  const auto level = [&](int32_t i) {
    return static_cast<size_t>(i) < m.eq_level.size() ? m.eq_level[i] : EquationLevel::Dynamic;
  };
  int32_t first_constraint = -1;
  for (int32_t i = 0; i < n && first_constraint < 0; ++i) {
    if (!has_hd[static_cast<size_t>(i)] || level(i) != EquationLevel::Dynamic) first_constraint = i;
  }
  std::string help =
      "use --solver gen-alpha, or --ignore-constraints to drop those equations and set the "
      "algebraic variables to 0 (the result is then not a solution of the model)";
  if (!options.ignore_constraints && (m.n_z > 0 || first_constraint >= 0)) {
    // a unit-quaternion row of a Spherical or FreeMotion joint: its Lie-group form has none
    for (int32_t i = 0; i < n; ++i)
      if (static_cast<size_t>(i) < m.eq_role.size() &&
          m.eq_role[static_cast<size_t>(i)] == EquationRole::UnitQuaternion) {
        help +=
            "; a Spherical or FreeMotion joint with lie_group = true (--set "
            "<joint>.lie_group=true) integrates its rotation without the unit-quaternion "
            "constraint";
        break;
      }
    std::string what;
    if (m.n_z > 0) {
      what = fmt::format("it has {} algebraic variable(s) ({})", m.n_z, z_names(m));
    }
    if (first_constraint >= 0) {
      what += fmt::format(
          "{}equation {} ({}) contains no highest derivative (der(der(q)) or "
          "der(y))",
          what.empty() ? "" : ", and ", first_constraint, equation_text(m, first_constraint));
    }
    throw SolverSetupError(fmt::format(
        "the {} solver cannot integrate model '{}': {}; an explicit method has no way to solve "
        "for algebraic variables or constraints; {}",
        solver, m.name, what, help));
  }
  // The rows used: all (the usual case), or the Dynamic ones.
  std::vector<int32_t> rows;
  for (int32_t i = 0; i < n; ++i) {
    if (!options.ignore_constraints || level(i) == EquationLevel::Dynamic) rows.push_back(i);
  }
  if (static_cast<int32_t>(rows.size()) != n_x_) {
    throw SolverSetupError(fmt::format(
        "the {} solver cannot integrate model '{}' with --ignore-constraints: it leaves {} "
        "equation(s) of level Dynamic for {} unknown(s) der(der(q)), der(y) (n_q = {}, n_y = {}); "
        "use --solver gen-alpha",
        solver, m.name, rows.size(), n_x_, m.n_q, m.n_y));
  }
  for (const int32_t i : rows) {
    if (!has_hd[static_cast<size_t>(i)]) {
      throw SolverSetupError(fmt::format(
          "the {} solver cannot integrate model '{}' with --ignore-constraints: equation {} ({}) "
          "contains no highest derivative (der(der(q)) or der(y)), so the accelerations are not "
          "determined; use --solver gen-alpha",
          solver, m.name, i, equation_text(m, i)));
    }
  }
  reduced_ = m.n_z > 0 || n != n_x_;
  if (!reduced_) {
    solver_.setup(n, A.row, A.col);
  } else {
    std::vector<int32_t> sub_index(static_cast<size_t>(n), -1);
    for (int32_t r = 0; r < n_x_; ++r) sub_index[static_cast<size_t>(rows[r])] = r;
    sub_row_ = rows;
    std::vector<int32_t> srow, scol;
    for (int32_t e = 0; e < A.nnz(); ++e) {
      const int32_t r = sub_index[static_cast<size_t>(A.row[e])];
      if (A.col[e] < n_x_ && r >= 0) {
        sub_entry_.push_back(e);
        srow.push_back(r);
        scol.push_back(A.col[e]);
      }
    }
    sub_values_.assign(sub_entry_.size(), 0.0);
    solver_.setup(n_x_, srow, scol);
  }
  fsal_ = tab_.fsal();
  const size_t ns = static_cast<size_t>(n_state_);
  for (auto* vec : {&xi0_, &d0_, &xi1_, &d1_, &stage_, &err_vec_}) vec->assign(ns, 0.0);
  k_.assign(static_cast<size_t>(tab_.stages) * ns, 0.0);
  h_max_ = options.h_max > 0.0 ? options.h_max : options.h;
  h_prop_ = std::min(options.h, h_max_);
}

SolveStatus ExplicitRk::step() {
  if (!initialized_ && initialize() == SolveStatus::Failed) return SolveStatus::Failed;
  if (!adaptive()) return advance_grid_step(*this);
  return advance_adaptive(n_done_ + 1);
}

SolveStatus ExplicitRk::run(const Observer& observer) {
  if (!adaptive()) return run_loop(*this, observer);
  if (failure_) return SolveStatus::Failed;
  if (!initialized_ && initialize() == SolveStatus::Failed) return SolveStatus::Failed;
  const auto start = std::chrono::steady_clock::now();
  start_progress();
  SolveStatus status = SolveStatus::Finished;
  const int64_t every = options_.output_every;
  const auto stopped = [](int e) {
    return e == kEmitFailed ? SolveStatus::Failed : SolveStatus::Stopped;
  };
  if (observer && last_output_ != n_done_) {
    if (const int e = emit(observer)) status = stopped(e);
  }
  event_observer_ = observer ? &observer : nullptr;
  while (status == SolveStatus::Finished && n_done_ < n_steps_) {
    // The next output point (without observer, or with output_every = 0: t_end).
    int64_t target = n_steps_;
    if (observer && every > 0) target = std::min(n_steps_, (n_done_ / every + 1) * every);
    const SolveStatus st = advance_adaptive(target);
    if (st == SolveStatus::Failed || st == SolveStatus::Interrupted) {
      if (observer && last_output_ != n_done_) emit(observer);  // the last good point
      status = failure_ ? SolveStatus::Failed : st;
      break;
    }
    if (stop_requested_) {  // the observer said stop at the row of an event
      stop_requested_ = false;
      status = SolveStatus::Stopped;
      break;
    }
    if (observer) {
      if (const int e = emit(observer)) status = stopped(e);
    }
  }
  if (status == SolveStatus::Finished && !terminal_event()) status = SolveStatus::Failed;
  event_observer_ = nullptr;
  progress_.finish();
  stats_.wall_time +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return status;
}

SolveStatus ExplicitRk::initialize() {
  if (failure_) return SolveStatus::Failed;
  if (initialized_) return SolveStatus::Ok;
  const auto start = std::chrono::steady_clock::now();
  const auto& m = model_;
  double* v = ws_.v.data();
  v[m.slot_c_q] = v[m.slot_c_qd] = v[m.slot_c_y] = 0.0;
  for (int32_t k = 0; k < m.n_z; ++k) v[m.z_slot[k]] = 0.0;  // ignore_constraints: z = 0
  for (int32_t i = 0; i < m.n_q; ++i) {
    xi0_[i] = v[m.q_slot[i]];
    xi0_[m.n_q + i] = v[m.qd_slot[i]];
  }
  for (int32_t j = 0; j < m.n_y; ++j) xi0_[2 * m.n_q + j] = v[m.y_slot[j]];
  bool ok = derivative(t_, xi0_.data(), d0_.data());
  if (ok && n_directions_ > 0) {
    const auto ns = static_cast<size_t>(n_state_);
    for (size_t k = 0; k < directions_.size(); ++k)
      std::copy(directions_[k].start.begin(), directions_[k].start.end(),
                s_xi0_.begin() + static_cast<std::ptrdiff_t>(k * ns));
    for (size_t k = 0; k < directions_.size(); ++k)
      stage_sensitivity(k, s_xi0_.data() + k * ns, s_d0_.data() + k * ns);
  }
  stats_.wall_time +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!ok) {
    fail(attempt_failure_, FailurePhase::InitialValues, 0.0, 0);
    return SolveStatus::Failed;
  }
  mark_initialized();
  return initial_event() ? SolveStatus::Ok : SolveStatus::Failed;
}

bool ExplicitRk::stage_switched() {
  const Kernel& k = model_.events;
  ev_stage_.resize(static_cast<size_t>(k.n_out));  // sized once
  if (k(ws_.v.data(), ev_stage_.data()) < 0 || ev_old_.size() != ev_stage_.size()) return false;
  return switched(ev_stage_);
}

bool ExplicitRk::derivative(double t, const double* xi, double* d) {
  const auto& m = model_;
  double* v = ws_.v.data();
  const int32_t nq = m.n_q, ny = m.n_y;
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
  double* x = ws_.x.data();
  if (factored_ && m.constant_leading_matrix) {
    // A depends on parameters only: its factorization from the first evaluation still holds
    if (!reduced_) {
      for (int32_t i = 0; i < n_x_; ++i) x[i] = -ws_.residual[i];
    } else {
      for (int32_t r = 0; r < n_x_; ++r) x[r] = -ws_.residual[sub_row_[r]];
    }
    return finish_derivative(xi, d);
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
  if (!reduced_) {
    st = solver_.factor(ws_.newton_values.data());
    for (int32_t i = 0; i < n_x_; ++i) x[i] = -ws_.residual[i];
  } else {
    const size_t ne = sub_entry_.size();
    for (size_t e = 0; e < ne; ++e) sub_values_[e] = ws_.newton_values[sub_entry_[e]];
    st = solver_.factor(sub_values_.data());
    for (int32_t r = 0; r < n_x_; ++r) x[r] = -ws_.residual[sub_row_[r]];
  }
  ++stats_.factorizations;
  if (st != 0) {
    f = AttemptFailure{};
    f.kind = FailureKind::SingularMatrix;
    f.unknown = st - 1;
    return false;
  }
  factored_ = true;
  return finish_derivative(xi, d);
}

bool ExplicitRk::finish_derivative(const double* xi, double* d) {
  const auto& m = model_;
  double* v = ws_.v.data();
  const int32_t nq = m.n_q, ny = m.n_y;
  double* x = ws_.x.data();
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

bool ExplicitRk::attempt(double h) {
  const int32_t ns = n_state_, S = tab_.stages;
  const double* xi = xi0_.data();
  std::array<double*, kMaxStages> k{};
  k[0] = d0_.data();
  for (int32_t s = 1; s < S; ++s) {
    k[s] = fsal_ && s == S - 1 ? d1_.data() : k_.data() + static_cast<size_t>(s) * ns;
  }
  const auto failed = [this] {
    restore_accepted_state();
    return false;
  };
  const auto combine = [&](double* out, const double* w, int32_t n_w) {
    for (int32_t i = 0; i < ns; ++i) out[i] = xi[i];
    for (int32_t j = 0; j < n_w; ++j) {
      if (w[j] == 0.0) continue;
      const double hw = h * w[j];
      const double* kj = k[j];
      for (int32_t i = 0; i < ns; ++i) out[i] += hw * kj[i];
    }
  };
  // sensitivities: the same combinations of the stages' S, per direction
  const auto nd = directions_.size();
  const auto ns_ = static_cast<size_t>(ns);
  std::array<double*, kMaxStages> sk{};
  for (int32_t s = 0; s < S && nd > 0; ++s)
    sk[s] = s == 0                ? s_d0_.data()
            : fsal_ && s == S - 1 ? s_d1_.data()
                                  : s_k_.data() + static_cast<size_t>(s) * nd * ns_;
  const auto s_combine = [&](double* out, const double* w, int32_t n_w) {
    for (size_t d = 0; d < nd; ++d) {
      double* o = out + d * ns_;
      const double* x0 = s_xi0_.data() + d * ns_;
      for (size_t i = 0; i < ns_; ++i) o[i] = x0[i];
      for (int32_t j = 0; j < n_w; ++j) {
        if (w[j] == 0.0) continue;
        const double hw = h * w[j];
        const double* kj = sk[j] + d * ns_;
        for (size_t i = 0; i < ns_; ++i) o[i] += hw * kj[i];
      }
    }
  };
  const auto s_stage = [&](double* s_state, double* s_deriv) {
    for (size_t d = 0; d < nd; ++d) stage_sensitivity(d, s_state + d * ns_, s_deriv + d * ns_);
  };
  const bool watch = watch_stages();
  bool crossed = false;  // a stage was on the other side of a switch
  for (int32_t s = 1; s < S; ++s) {
    const bool last_fsal = fsal_ && s == S - 1;
    double* g = last_fsal ? xi1_.data() : stage_.data();
    combine(g, tab_.a.data() + static_cast<size_t>(s) * S, s);
    const double ts = last_fsal ? t_ + h : t_ + tab_.c[s] * h;
    if (!derivative(ts, g, k[s])) return failed();
    if (watch && !last_fsal && stage_switched()) crossed = true;
    if (nd > 0) {
      double* sg = last_fsal ? s_xi1_.data() : s_stage_.data();
      s_combine(sg, tab_.a.data() + static_cast<size_t>(s) * S, s);
      s_stage(sg, sk[s]);
    }
  }
  if (!fsal_) {
    combine(xi1_.data(), tab_.b.data(), S);
    // The derivative at the end: output values (qdd, yd) and the first stage of the next step.
    if (!derivative(t_ + h, xi1_.data(), d1_.data())) return failed();
  }
  if (crossed && !stage_switched()) {  // v is at the end of the step: back on the start's side
    attempt_failure_ = AttemptFailure{};
    attempt_failure_.kind = FailureKind::Chattering;
    return failed();
  }
  if (!fsal_) {
    if (nd > 0) {
      s_combine(s_xi1_.data(), tab_.b.data(), S);
      s_stage(s_xi1_.data(), s_d1_.data());
    }
  }
  if (!adaptive()) return true;
  // Error estimate xi1 - xi1hat = h sum (b_j - bhat_j) k_j, scaled per component.
  double* e = err_vec_.data();
  for (int32_t i = 0; i < ns; ++i) e[i] = 0.0;
  for (int32_t j = 0; j < S; ++j) {
    const double w = h * (tab_.b[j] - tab_.bhat[j]);
    if (w == 0.0) continue;
    const double* kj = k[j];
    for (int32_t i = 0; i < ns; ++i) e[i] += w * kj[i];
  }
  const double atol = options_.atol, rtol = options_.rtol;
  double sum = 0.0, worst = -1.0;
  int32_t worst_i = -1;
  for (int32_t i = 0; i < ns; ++i) {
    const double sc = atol + rtol * std::max(std::fabs(xi[i]), std::fabs(xi1_[i]));
    const double r = e[i] == 0.0 ? 0.0 : std::fabs(e[i]) / sc;
    sum += r * r;
    if (!std::isnan(worst) && (std::isnan(r) || r > worst)) worst = r, worst_i = i;
  }
  err_ = ns > 0 ? std::sqrt(sum / ns) : 0.0;
  err_comp_ = worst_i;
  err_comp_ratio_ = worst;
  return true;
}

void ExplicitRk::accept(double) {
  xi0_.swap(xi1_);
  d0_.swap(d1_);
  s_xi0_.swap(s_xi1_);
  s_d0_.swap(s_d1_);
}

void ExplicitRk::restore_accepted_state() {
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

void ExplicitRk::take_state_from_v() {
  const auto& m = model_;
  const double* v = ws_.v.data();
  for (int32_t i = 0; i < m.n_q; ++i) {
    xi0_[i] = v[m.q_slot[i]];
    xi0_[m.n_q + i] = v[m.qd_slot[i]];
  }
  for (int32_t j = 0; j < m.n_y; ++j) xi0_[2 * m.n_q + j] = v[m.y_slot[j]];
}

// The first stage of the next step (d0_) is the derivative at the new point: in the moved chart
// der(theta) = w, the rest is unchanged.
void ExplicitRk::charts_moved() {
  take_state_from_v();  // theta = 0
  const auto base = static_cast<size_t>(2 * model_.n_q);
  for (const int32_t y : charts_.theta_y()) d0_[base + y] = ws_.v[model_.yd_slot[y]];  // = w
}

bool ExplicitRk::restart() {
  factored_ = false;  // a constant leading matrix may depend on a changed parameter
  if (!derivative(t_, xi0_.data(), d0_.data())) {
    restore_accepted_state();
    fail(attempt_failure_, FailurePhase::Step, h_try_, 0);
    return false;
  }
  const auto ns = static_cast<size_t>(n_state_);
  for (size_t k = 0; k < directions_.size(); ++k)
    stage_sensitivity(k, s_xi0_.data() + k * ns, s_d0_.data() + k * ns);
  return true;
}

void ExplicitRk::save_method(std::vector<double>& out) {
  save_vector(out, xi0_);
  save_vector(out, d0_);
  out.insert(out.end(), {h_prop_, err_});
}

bool ExplicitRk::restore_method(std::span<const double> in, size_t& pos) {
  size_t p = pos;
  if (!check_vector(in, p, xi0_.size()) || !check_vector(in, p, d0_.size()) || in.size() - p < 2)
    return false;
  load_vector(in, pos, xi0_);
  load_vector(in, pos, d0_);
  h_prop_ = in[pos];
  err_ = in[pos + 1];
  pos += 2;
  return true;
}

SolveStatus ExplicitRk::advance_adaptive(int64_t target) {
  if (failure_) return SolveStatus::Failed;
  if (n_done_ >= n_steps_) return SolveStatus::Finished;
  if (!apply_restart()) return SolveStatus::Failed;
  target = std::min(target, n_steps_);
  const double t_target = grid_time(target);
  const double f_sfty = options_.step_safety, f_inc = options_.step_max_increase;
  const double expo = 1.0 / (tab_.embedded_order + 1);
  // Rejections allowed on the way to the target: max_rejections per grid interval.
  const int64_t allowed =
      static_cast<int64_t>(options_.max_rejections) * std::max<int64_t>(target - n_done_, 1);
  interval_rejections_ = 0;
  while (t_ < t_target) {
    if (!prepare_events()) return SolveStatus::Failed;
    const double remaining = t_target - t_;
    // Hit the target exactly; split the rest into two equal steps rather than leave a sliver.
    const bool last = h_prop_ >= remaining * (1.0 - 1e-9);
    const bool shortened = last || h_prop_ > 0.5 * remaining;
    const double h = last ? remaining : shortened ? 0.5 * remaining : h_prop_;
    progress_.tick(t_, h);
    if (!attempt(h)) {
      // A kernel failed (non-finite value): halve, as the fixed-step methods do.
      ++stats_.rejected_steps;
      if (attempt_failure_.fatal()) {
        const auto halvings = static_cast<int32_t>(std::lround(std::log2(options_.h / h)));
        fail(attempt_failure_, FailurePhase::Step, h, std::max(halvings, 0));
        return SolveStatus::Failed;
      }
      const bool too_many = ++interval_rejections_ > allowed;
      if (0.5 * h < step_floor() || too_many) {
        fail_step(h, 0.5 * h >= h_min_, too_many);
        return SolveStatus::Failed;
      }
      h_prop_ = 0.5 * h;
      continue;
    }
    const double inv = err_ > 0.0 ? 1.0 / err_ : std::numeric_limits<double>::infinity();
    const double h_opt = h * std::pow(inv, expo);  // NaN if err_ is NaN
    // A step shortened to hit the target does not limit the growth of the next one.
    const double h_base = shortened ? std::max(h, h_prop_) : h;
    if (err_ <= 1.0) {
      if (!accept_step(*this, h, last, t_target)) return SolveStatus::Failed;
      if (stop_requested_) return SolveStatus::Ok;
      h_prop_ = std::min(h_max_, std::min(h_base * f_inc, std::max(h_min_, f_sfty * h_opt)));
      if (options_.verbosity >= 1) {
        std::fprintf(stderr, "%s: t = %.9g accepted h = %.3e err = %.3e next h = %.3e\n",
                     tab_.name.data(), t_, h, err_, h_prop_);
      }
      if (interrupt_requested() && t_ < t_target) return SolveStatus::Interrupted;
      continue;
    }
    ++stats_.rejected_steps;
    restore_accepted_state();
    // Rejected: retry with the step the estimate suggests (never more than half for NaN).
    const double h_next = std::isfinite(h_opt) ? f_sfty * h_opt : 0.5 * h;
    if (options_.verbosity >= 1) {
      std::fprintf(stderr, "%s: t = %.9g rejected h = %.3e err = %.3e next h = %.3e\n",
                   tab_.name.data(), t_, h, err_, h_next);
    }
    if (++interval_rejections_ > allowed) {
      attempt_failure_ = error_test_attempt();
      fail_step(h, false, true);
      return SolveStatus::Failed;
    }
    const double floor = step_floor();
    if (h_next < floor) {
      if (h <= floor * (1.0 + 1e-12)) {
        double largest = 0.0;
        largest_state(largest);
        if (!(largest <= kDivergedGrowth * state_scale_)) {
          attempt_failure_ = error_test_attempt();
          fail_step(h, false, false);  // Diverged, with the error test as its cause
        } else {
          fail_error_test(h, h_next, floor);
        }
        return SolveStatus::Failed;
      }
      h_prop_ = floor;  // one last try at the smallest step
      continue;
    }
    h_prop_ = std::min(h_next, h_max_);
  }
  n_done_ = target;
  return n_done_ >= n_steps_ ? SolveStatus::Finished : SolveStatus::Ok;
}

Integrator::AttemptFailure ExplicitRk::error_test_attempt() const {
  AttemptFailure a;
  a.kind = FailureKind::ErrorTestFailed;
  a.unknown = err_comp_ >= 0 ? state_unknown(model_, err_comp_) : -1;
  a.update = err_comp_ratio_;
  return a;
}

void ExplicitRk::fail_error_test(double h, double h_next, double floor) {
  const auto& m = model_;
  const AttemptFailure a = error_test_attempt();
  FailureRecord f = step_record(a.kind, h, floor);
  f.unknown = a.unknown;
  f.update = a.update;
  std::string msg = fmt::format(
      "error: {}: the local error estimate stays above the tolerance in the step from t = {} "
      "with h = {:.6g}\n"
      "note: scaled error {:.3g} (must be <= 1); the step it suggests, {:.3g}, is below {}\n",
      f.solver, f.t, h, err_, h_next,
      floor > h_min_ ? fmt::format("the smallest step {:.6g} = 64 eps max(|t|, |t_end|)", floor)
                     : fmt::format("h_min = {:.6g}", floor));
  if (err_comp_ >= 0) {
    const std::string src = unknown_source(m, f.unknown);
    msg += fmt::format(
        "note: component '{}'{} has the largest error ({:.3g} x its tolerance atol + rtol*|x|)\n",
        state_component_name(m, err_comp_), src.empty() ? "" : " (declared at " + src + ")",
        err_comp_ratio_);
  }
  msg += fmt::format(
      "help: the solution changes faster than --h-min can follow (a stiff model, a "
      "discontinuity or a singularity); loosen --rtol/--atol, lower --h-min, or use an implicit "
      "solver (--solver gen-alpha)\n");
  f.message = std::move(msg);
  failure_ = std::move(f);
}

std::unique_ptr<Integrator> make_explicit_integrator(std::shared_ptr<const CompiledModel> model,
                                                     const SolverOptions& options) {
  if (!is_explicit(options.solver)) {
    throw SolverSetupError(std::string("the solver '") + std::string(solver_name(options.solver)) +
                           "' is not explicit");
  }
  return std::make_unique<ExplicitRk>(std::move(model), options);
}

// ---- exact sensitivities: every stage differentiated (docs/studies.md, "Exact sensitivities")

namespace {

void spmv_add(const SparseKernel& k, const double* values, const double* x, double* y) {
  const int32_t nnz = k.nnz();
  for (int32_t e = 0; e < nnz; ++e) y[k.row[e]] -= values[e] * x[k.col[e]];
}

}  // namespace

void ExplicitRk::prepare_sensitivities() {
  const auto& m = model_;
  const auto ns = static_cast<size_t>(n_state_);
  const size_t nd = directions_.size();
  for (auto* v : {&s_xi0_, &s_d0_, &s_xi1_, &s_d1_, &s_stage_}) v->assign(nd * ns, 0.0);
  s_k_.assign(static_cast<size_t>(kMaxStages) * nd * ns, 0.0);
  fp_values_.assign(static_cast<size_t>(m.sens_F_p.nnz()), 0.0);
  jq_values_.assign(static_cast<size_t>(m.jac_q.nnz()), 0.0);
  jqd_values_.assign(static_cast<size_t>(m.jac_qd.nnz()), 0.0);
  jy_values_.assign(static_cast<size_t>(m.jac_y.nnz()), 0.0);
  rhs_.assign(static_cast<size_t>(m.n_eq()), 0.0);
}

void ExplicitRk::stage_sensitivity(size_t dir, const double* s_state, double* s_deriv) {
  linearized_derivative(s_state, directions_[dir].dp.data(), dir == 0, s_deriv);
}

void ExplicitRk::linearized_derivative(const double* s_state, const double* dp, bool evaluate,
                                       double* s_deriv) {
  // F(q, qd, acc, y, yd, p) = 0 with A acc = -F0: A S_acc = -(F_q S_q + F_qd S_qd + F_y S_y +
  // F_p dp), the Jacobians at the stage (v, with acc in its slots)
  const auto& m = model_;
  const double* v = ws_.v.data();
  const int32_t nq = m.n_q, ny = m.n_y;
  if (evaluate) {  // the kernels once per stage, for every direction
    if (dp) m.sens_F_p.values(v, fp_values_.data());
    m.jac_q.values(v, jq_values_.data());
    m.jac_qd.values(v, jqd_values_.data());
    m.jac_y.values(v, jy_values_.data());
  }
  std::fill(rhs_.begin(), rhs_.end(), 0.0);
  if (dp) spmv_add(m.sens_F_p, fp_values_.data(), dp, rhs_.data());
  spmv_add(m.jac_q, jq_values_.data(), s_state, rhs_.data());
  spmv_add(m.jac_qd, jqd_values_.data(), s_state + nq, rhs_.data());
  spmv_add(m.jac_y, jy_values_.data(), s_state + 2 * nq, rhs_.data());
  double* x = ws_.x.data();
  if (!reduced_) {
    for (int32_t i = 0; i < n_x_; ++i) x[i] = rhs_[i];
  } else {
    for (int32_t r = 0; r < n_x_; ++r) x[r] = rhs_[sub_row_[r]];
  }
  solver_.solve(x);
  ++stats_.linear_solves;
  for (int32_t i = 0; i < nq; ++i) {
    s_deriv[i] = s_state[nq + i];
    s_deriv[nq + i] = x[i];
  }
  for (int32_t j = 0; j < ny; ++j) s_deriv[2 * nq + j] = x[nq + j];
}

std::string ExplicitRk::evaluate_derivative(std::span<const double> v, std::span<double> d,
                                            bool refactor) {
  const auto& m = model_;
  if (v.size() != ws_.v.size() || d.size() != static_cast<size_t>(n_state_))
    return "evaluate_derivative: wrong sizes";
  std::copy(v.begin(), v.end(), ws_.v.begin());
  double* w = ws_.v.data();
  w[m.slot_c_q] = w[m.slot_c_qd] = w[m.slot_c_y] = 0.0;
  for (int32_t k = 0; k < m.n_z; ++k) w[m.z_slot[k]] = 0.0;
  for (int32_t i = 0; i < m.n_q; ++i) {
    stage_[i] = w[m.q_slot[i]];
    stage_[m.n_q + i] = w[m.qd_slot[i]];
  }
  for (int32_t j = 0; j < m.n_y; ++j) stage_[2 * m.n_q + j] = w[m.y_slot[j]];
  if (refactor) factored_ = false;
  if (derivative(w[m.slot_time], stage_.data(), d.data())) return {};
  const AttemptFailure& a = attempt_failure_;
  std::string why(failure_summary(a.kind));
  if (a.equation >= 0)
    why += fmt::format(" in equation {}: {}", a.equation, equation_text(m, a.equation));
  if (a.unknown >= 0) why += fmt::format(" (unknown {})", unknown_name(m, a.unknown));
  return fmt::format("the derivatives of the states at t = {} cannot be computed: {}",
                     w[m.slot_time], why);
}

std::string ExplicitRk::derivative_direction(std::span<const double> ds, std::span<double> dd) {
  const auto& m = model_;
  if (ds.size() != static_cast<size_t>(n_state_) || dd.size() != ds.size())
    return "derivative_direction: wrong sizes";
  if (!m.jac_q.values.fn || !m.jac_qd.values.fn || !m.jac_y.values.fn)
    return fmt::format("model '{}' has no Jacobian kernels (jac_q, jac_qd, jac_y)", m.name);
  jq_values_.resize(static_cast<size_t>(m.jac_q.nnz()));
  jqd_values_.resize(static_cast<size_t>(m.jac_qd.nnz()));
  jy_values_.resize(static_cast<size_t>(m.jac_y.nnz()));
  rhs_.resize(static_cast<size_t>(m.n_eq()));
  linearized_derivative(ds.data(), nullptr, true, dd.data());
  return {};
}

void ExplicitRk::sensitivity_state(size_t k, double* w) const {
  const auto& m = model_;
  const auto nq = static_cast<size_t>(m.n_q), ny = static_cast<size_t>(m.n_y),
             ns = static_cast<size_t>(n_state_);
  const double* sx = s_xi0_.data() + k * ns;  // [q | qd | y]
  const double* sd = s_d0_.data() + k * ns;   // [qd | qdd | yd]
  w = std::copy_n(sx, 2 * nq, w);
  w = std::copy_n(sd + nq, nq, w);
  w = std::copy_n(sx + 2 * nq, ny, w);
  w = std::copy_n(sd + 2 * nq, ny, w);
  std::fill_n(w, m.n_z, 0.0);  // --ignore-constraints: z = 0
}

}  // namespace mbs::rt
