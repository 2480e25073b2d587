#include "runtime/solvers/GenAlpha.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace mbs::rt {

namespace {

// Modified Newton (docs/solvers.md, "Newton strategy"). theta = ||dx_k|| / ||dx_k-1|| is the
// observed contraction rate; theta / (1 - theta) ||dx_k|| estimates the distance of the iterate
// from the solution (the sum of the remaining updates), which the convergence test compares with
// the tolerance. A matrix from an earlier step is recomputed at the current iterate when it
// contracts slower than kThetaRefresh, or when at that rate it would need more than
// kStaleMaxIterations iterations in all.
constexpr double kThetaRefresh = 0.25;
constexpr int32_t kStaleMaxIterations = 3;
// With a matrix computed in the same attempt, a ratio above kThetaDiverge while the update is
// still outside the tolerance is divergence.
constexpr double kThetaDiverge = 1.0;
// Multiplier updates that shrink by less than this per iteration with a fresh matrix have
// reached their rounding floor.
constexpr double kThetaStagnant = 0.5;
// When a matrix kept from an earlier step had to be recomputed within a step, the next steps
// start with a new matrix: 1 step, then 2, 4, ... up to kMaxFreshSteps while reusing keeps
// failing (back to 1 after a step in which the kept matrix converged).
constexpr int32_t kMaxFreshSteps = 32;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

int32_t argmax_abs(const std::vector<double>& r) {
  int32_t best = -1;
  double best_value = -1.0;
  for (size_t i = 0; i < r.size(); ++i) {
    const double a = std::fabs(r[i]);
    if (!(a <= best_value)) {  // NaN wins
      best_value = std::isnan(a) ? std::numeric_limits<double>::infinity() : a;
      best = static_cast<int32_t>(i);
    }
  }
  return best;
}

}  // namespace

std::vector<EquationLevel> multiplier_levels(const CompiledModel& m) {
  if (!m.z_level.empty()) return m.z_level;
  bool position = false, velocity = false;
  for (EquationLevel l : m.eq_level) {
    position |= l == EquationLevel::Position;
    velocity |= l == EquationLevel::Velocity;
  }
  const EquationLevel highest = position   ? EquationLevel::Position
                                : velocity ? EquationLevel::Velocity
                                           : EquationLevel::Algebraic;
  const int32_t first_z = m.n_q + m.n_y;
  std::vector<EquationLevel> level(static_cast<size_t>(m.n_z), highest);
  const SparseKernel& J = m.newton_matrix;
  for (int32_t e = 0; e < J.nnz(); ++e) {
    if (J.col[e] >= first_z && m.eq_level[J.row[e]] == EquationLevel::Algebraic) {
      level[J.col[e] - first_z] = EquationLevel::Algebraic;
    }
  }
  return level;
}

NewmarkFamily::Parameters NewmarkFamily::parameters(double rho) {
  Parameters p{};
  p.alpha_m = (2.0 * rho - 1.0) / (rho + 1.0);
  p.alpha_f = rho / (rho + 1.0);
  p.gamma = 0.5 - p.alpha_m + p.alpha_f;
  const double s = 1.0 - p.alpha_m + p.alpha_f;
  p.beta = 0.25 * s * s;
  return p;
}

NewmarkFamily::Parameters NewmarkFamily::newmark_parameters(double beta, double gamma) {
  return Parameters{0.0, 0.0, beta, gamma};
}

NewmarkFamily::Parameters NewmarkFamily::parameters(const SolverOptions& o) {
  switch (o.solver) {
    case SolverKind::Newmark:
      return newmark_parameters(o.newmark_beta, o.newmark_gamma);
    case SolverKind::Trapezoidal:
      return newmark_parameters(0.25, 0.5);
    default:
      return parameters(o.rho_inf);
  }
}

NewmarkFamily::NewmarkFamily(std::shared_ptr<const CompiledModel> model,
                             const SolverOptions& options)
    : Integrator(std::move(model), options), p_(parameters(options)) {
  const auto& m = model_;
  const double r = (1.0 - p_.alpha_f) / (1.0 - p_.alpha_m);
  beta_p_ = p_.beta * r;
  gamma_p_ = p_.gamma * r;
  full_newton_ = !options.modified_newton;
  verbosity_ = options.verbosity;
  const int32_t n = m.n_eq();
  row_level_ = m.eq_level;
  const bool has_position =
      std::find(m.eq_level.begin(), m.eq_level.end(), EquationLevel::Position) != m.eq_level.end();
  if (options.index2 && options.solver == SolverKind::GenAlpha) {
    throw SolverSetupError(
        "option --index2 (index2) is not available with --solver gen-alpha: generalized-alpha "
        "enforces constraints at position level (index 3); use --solver newmark or "
        "--solver trapezoidal for velocity-level constraints, or drop --index2");
  }
  // Without position-level constraints the index-2 form is F itself: nothing to switch.
  index2_ = options.index2 && has_position;
  index3_ = has_position && !index2_;
  residual_ = &m.residual;
  matrix_ = &m.newton_matrix;
  matrix_values_ = ws_.newton_values.data();
  if (index2_) {
    const SparseKernel& J2 = m.index2_matrix;
    if (!m.index2_residual.fn || !J2.values.fn) {
      throw SolverSetupError(fmt::format(
          "option --index2: model '{}' has position-level constraints but no index-2 kernels "
          "(index2_residual, index2_matrix); recompile it or drop --index2",
          m.name));
    }
    if (m.index2_residual.n_out != n || J2.rows != n || J2.cols != n ||
        J2.row.size() != J2.col.size() || J2.values.n_out != J2.nnz()) {
      throw SolverSetupError(fmt::format(
          "model '{}': index2_residual has {} outputs and index2_matrix is {} x {} with {} "
          "entries and {} values, expected n_eq = {} outputs and an n_eq x n_eq matrix",
          m.name, m.index2_residual.n_out, J2.rows, J2.cols, J2.nnz(), J2.values.n_out, n));
    }
    for (EquationLevel& l : row_level_) {
      if (l == EquationLevel::Position) l = EquationLevel::Velocity;
    }
    residual_ = &m.index2_residual;
    matrix_ = &J2;
    index2_values_.assign(static_cast<size_t>(J2.nnz()), 0.0);
    matrix_values_ = index2_values_.data();
  }
  // Undamped Newmark (gamma = 1/2, the trapezoidal rule) does not damp the multiplier error of
  // index-3 constraints: it grows over the run (docs/solvers.md, "Implicit family").
  // The same holds for generalized-alpha at rho_inf = 1 (gamma = 1/2 too).
  if (has_position && !index2_ && p_.gamma <= 0.5) {
    const bool generalized = p_.alpha_m != 0.0 || p_.alpha_f != 0.0;
    warnings_.push_back(fmt::format(
        "warning: {} with gamma = 1/2 on the position-level constraints of model '{}': the "
        "error of their multipliers is not damped and grows over the run; {}",
        name(), m.name,
        generalized ? "use --rho-inf < 1 (e.g. 0.9), or --solver newmark --index2"
                    : "use --index2, --newmark-gamma > 0.5 or --solver gen-alpha (rho_inf < 1)"));
  }
  newton_.setup(n, matrix_->row, matrix_->col);
  if (m.init_residual.fn) {
    init_solver_.setup(n, m.init_matrix.row, m.init_matrix.col);
  } else if (options.initial_accelerations) {
    for (int32_t i = 0; i < n; ++i) {
      if (m.eq_level[i] == EquationLevel::Position || m.eq_level[i] == EquationLevel::Velocity) {
        throw SolverSetupError(fmt::format(
            "model '{}' has constraints (equation {}: {}) but no init_residual kernel, so "
            "consistent initial accelerations cannot be computed; provide it or set "
            "--initial-accelerations=false",
            m.name, i, equation_text(m, i)));
      }
    }
  }
  row_scale_.assign(static_cast<size_t>(n), 1.0);
  for (EquationLevel l : multiplier_levels(m)) {
    is_multiplier_.push_back(l != EquationLevel::Algebraic ? 1 : 0);
  }
  estimate_test_ =
      std::find(is_multiplier_.begin(), is_multiplier_.end(), 1) == is_multiplier_.end();
  z_auxiliary_.assign(static_cast<size_t>(m.n_z), EquationLevel::Algebraic);
  if (m.z_auxiliary.size() == static_cast<size_t>(m.n_z)) z_auxiliary_ = m.z_auxiliary;
  z_scale_.assign(static_cast<size_t>(m.n_z), 1.0);
  q0_.assign(static_cast<size_t>(m.n_q), 0.0);
  qd0_ = q0_;
  a0_ = q0_;
  q_base_ = q0_;
  qd_base_ = q0_;
  y0_.assign(static_cast<size_t>(m.n_y), 0.0);
  y_base_ = y0_;
  x0_.assign(static_cast<size_t>(n), 0.0);
  x_prev_ = x0_;
  x_prev2_ = x0_;
}

SolveStatus NewmarkFamily::step() {
  if (!initialized_ && initialize() == SolveStatus::Failed) return SolveStatus::Failed;
  return advance_grid_step(*this);
}

SolveStatus NewmarkFamily::run(const Observer& observer) {
  return run_loop(*this, observer);
}

SolveStatus NewmarkFamily::initialize() {
  if (failure_) return SolveStatus::Failed;
  if (initialized_) return SolveStatus::Ok;
  const auto start = std::chrono::steady_clock::now();
  const auto& m = model_;
  double* v = ws_.v.data();
  v[m.slot_c_q] = v[m.slot_c_qd] = v[m.slot_c_y] = 0.0;
  v[m.slot_time] = t_;
  const int32_t nq = m.n_q, ny = m.n_y, nz = m.n_z;
  for (int32_t i = 0; i < nq; ++i) ws_.x[i] = v[m.qdd_slot[i]];
  for (int32_t j = 0; j < ny; ++j) ws_.x[nq + j] = v[m.yd_slot[j]];
  for (int32_t k = 0; k < nz; ++k) ws_.x[nq + ny + k] = v[m.z_slot[k]];
  const bool ok = !options_.initial_accelerations || solve_initial_values();
  stats_.wall_time +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!ok) return SolveStatus::Failed;
  for (int32_t i = 0; i < nq; ++i) {
    q0_[i] = v[m.q_slot[i]];
    qd0_[i] = v[m.qd_slot[i]];
    a0_[i] = ws_.x[i];  // a_0 = qdd_0
  }
  for (int32_t j = 0; j < ny; ++j) y0_[j] = v[m.y_slot[j]];
  x0_ = ws_.x;
  n_history_ = 0;
  matrix_valid_ = false;
  if (n_directions_ > 0 && !initialize_sensitivities()) return SolveStatus::Failed;
  mark_initialized();
  return initial_event() ? SolveStatus::Ok : SolveStatus::Failed;
}

bool NewmarkFamily::restart() {
  const auto& m = model_;
  restore_accepted_state();
  if (options_.initial_accelerations) {
    double* v = ws_.v.data();
    v[m.slot_c_q] = v[m.slot_c_qd] = v[m.slot_c_y] = 0.0;
    ws_.x = x0_;
    if (!solve_initial_values()) {
      restore_accepted_state();
      return false;
    }
    x0_ = ws_.x;
  }
  for (int32_t i = 0; i < m.n_q; ++i) a0_[i] = x0_[i];
  n_history_ = 0;
  refresh_next_ = true;  // the Newton matrix may depend on what changed
  return true;
}

void NewmarkFamily::take_state_from_v() {
  const auto& m = model_;
  const double* v = ws_.v.data();
  for (int32_t i = 0; i < m.n_q; ++i) {
    q0_[i] = v[m.q_slot[i]];
    qd0_[i] = v[m.qd_slot[i]];
  }
  for (int32_t j = 0; j < m.n_y; ++j) y0_[j] = v[m.y_slot[j]];
}

// In the moved chart theta_0 = 0 and der(theta)_0 = w_0 (the trapezoidal rule of the ODE1
// states starts from them); the predictor's history of der(theta) is shifted by the same jump,
// so that it extrapolates the trend in the new chart.
void NewmarkFamily::charts_moved() {
  take_state_from_v();  // theta = 0
  const auto nq = static_cast<size_t>(model_.n_q);
  for (const int32_t y : charts_.theta_y()) {
    const size_t j = nq + static_cast<size_t>(y);
    const double jump = ws_.v[model_.yd_slot[y]] - x0_[j];  // der(theta) = w
    x0_[j] += jump;
    if (n_history_ >= 1) x_prev_[j] += jump;
    if (n_history_ >= 2) x_prev2_[j] += jump;
  }
}

// The modified Newton's matrix is part of the state: its values (scaled, as factored) and how
// they were made are saved, and a restore factors the same values again -- KLU is deterministic,
// so a continuation from a restored state is bitwise the one from the saved point, and saving
// changes nothing in the run that saved.
void NewmarkFamily::save_method(std::vector<double>& out) {
  for (const auto* x : {&q0_, &qd0_, &a0_, &y0_, &x0_, &x_prev_, &x_prev2_}) save_vector(out, *x);
  out.insert(out.end(), {h_prev_, h_prev2_, static_cast<double>(n_history_)});
  out.insert(out.end(), {matrix_valid_ ? 1.0 : 0.0, refresh_next_ ? 1.0 : 0.0, matrix_cq_, theta_,
                         row_scale_h_, static_cast<double>(fresh_backoff_),
                         static_cast<double>(fresh_steps_left_), newton_k_});
  save_vector(out, row_scale_);
  const auto nnz = static_cast<size_t>(matrix_->nnz());
  out.push_back(static_cast<double>(nnz));
  out.insert(out.end(), matrix_values_, matrix_values_ + nnz);
}

bool NewmarkFamily::restore_method(std::span<const double> in, size_t& pos) {
  auto vectors = {&q0_, &qd0_, &a0_, &y0_, &x0_, &x_prev_, &x_prev2_};
  const auto nnz = static_cast<size_t>(matrix_->nnz());
  size_t p = pos;
  for (const auto* x : vectors)
    if (!check_vector(in, p, x->size())) return false;
  if (in.size() - p < 3 + 8) return false;
  p += 3 + 8;
  if (!check_vector(in, p, row_scale_.size())) return false;
  if (p >= in.size() || in[p] != static_cast<double>(nnz) || in.size() - p - 1 < nnz) return false;
  for (auto* x : vectors) load_vector(in, pos, *x);
  h_prev_ = in[pos];
  h_prev2_ = in[pos + 1];
  n_history_ = static_cast<int32_t>(in[pos + 2]);
  pos += 3;
  matrix_valid_ = in[pos] != 0.0;
  refresh_next_ = in[pos + 1] != 0.0;
  matrix_cq_ = in[pos + 2];
  theta_ = in[pos + 3];
  row_scale_h_ = in[pos + 4];
  fresh_backoff_ = static_cast<int32_t>(in[pos + 5]);
  fresh_steps_left_ = static_cast<int32_t>(in[pos + 6]);
  newton_k_ = in[pos + 7];
  pos += 8;
  load_vector(in, pos, row_scale_);
  ++pos;  // the count of the matrix values, checked above
  std::copy_n(in.begin() + static_cast<std::ptrdiff_t>(pos), nnz, matrix_values_);
  pos += nnz;
  matrix_fresh_ = false;
  if (matrix_valid_ && newton_.factor(matrix_values_) != 0) {
    matrix_valid_ = false;  // cannot happen for values that were factored before; be safe
    refresh_next_ = true;
  }
  return true;
}

// Newton on init_residual(qdd, yd, z) = 0 at fixed (q, qd, y, t): linear in qdd and yd, possibly
// nonlinear in z. The matrix is recomputed every iteration (this runs once).
bool NewmarkFamily::solve_initial_values() {
  const auto& m = model_;
  const bool own = m.init_residual.fn != nullptr;
  // Without an init kernel there are no constraints, so residual_ and matrix_ are F itself.
  const Kernel& residual = own ? m.init_residual : *residual_;
  const SparseKernel& matrix = own ? m.init_matrix : *matrix_;
  LinearSolver& solver = own ? init_solver_ : newton_;
  double* values = own ? ws_.init_values.data() : matrix_values_;
  double* v = ws_.v.data();
  const int32_t n = m.n_eq(), nq = m.n_q, ny = m.n_y;
  AttemptFailure& f = attempt_failure_;
  f = AttemptFailure{};
  for (int32_t it = 1; it <= options_.newton_max_iter; ++it) {
    int32_t st = residual(v, ws_.residual.data());
    ++stats_.residual_evaluations;
    if (st != 0) {
      f.kind = st > 0 ? FailureKind::NonFiniteResidual : FailureKind::KernelFatal;
      f.kernel_status = st;
      f.equation = st > 0 ? st - 1 : argmax_abs(ws_.residual);
      if (f.equation >= 0) f.residual = ws_.residual[f.equation];
      break;
    }
    st = matrix.values(v, values);
    ++stats_.jacobian_evaluations;
    if (st != 0) {
      f.kind = st > 0 ? FailureKind::NonFiniteJacobian : FailureKind::KernelFatal;
      f.kernel_status = st;
      if (st > 0) f.equation = matrix.row[st - 1], f.unknown = matrix.col[st - 1];
      break;
    }
    st = solver.factor(values);
    ++stats_.factorizations;
    if (st != 0) {
      f.kind = FailureKind::SingularMatrix;
      f.unknown = st - 1;
      break;
    }
    for (int32_t i = 0; i < n; ++i) ws_.dx[i] = -ws_.residual[i];
    solver.solve(ws_.dx.data());
    ++stats_.linear_solves;
    ++stats_.newton_iterations;
    double norm = 0.0;
    int32_t worst = 0;
    for (int32_t i = 0; i < n; ++i) {
      ws_.x[i] += ws_.dx[i];
      const double w = std::fabs(ws_.dx[i]) / (options_.atol + options_.rtol * std::fabs(ws_.x[i]));
      if (!(w <= norm)) norm = w, worst = i;
    }
    for (int32_t i = 0; i < nq; ++i) v[m.qdd_slot[i]] = ws_.x[i];
    for (int32_t j = 0; j < ny; ++j) v[m.yd_slot[j]] = ws_.x[nq + j];
    for (int32_t k = 0; k < m.n_z; ++k) v[m.z_slot[k]] = ws_.x[nq + ny + k];
    if (verbosity_ >= 2) [[unlikely]] {
      fmt::print(stderr, "{}: initial values: iteration {}, update {:.3e}, worst {}\n", name(), it,
                 norm, unknown_name(m, worst));
    }
    if (norm <= 1.0) return true;
    f.kind = std::isfinite(norm) ? FailureKind::NewtonMaxIterations : FailureKind::NewtonDiverged;
    f.unknown = worst;
    f.update = norm;
    f.equation = argmax_abs(ws_.residual);
    f.residual = ws_.residual[f.equation];
    if (!std::isfinite(norm)) break;
  }
  fail(f, FailurePhase::InitialValues, 0.0, 0);
  return false;
}

// A short step at an event in a model with position-level constraints (docs/solvers.md,
// "Events"). The rows of the constraints are scaled by 1 / cq = 1 / (beta' h^2), so the
// rounding of g(q) becomes an error of eps |q| / (beta' h^2) in the accelerations and the
// multipliers of the Newton solution and of 2 eps |q| / h in the velocities: at h = 1e-12 the
// multipliers of a slider-crank came out as 1e8 instead of 0.1 and the crank speed jumped by
// 1e-4. A step shorter than kTaylorStep times the nominal step that the event location takes
// (a trial step, or the one that ends at the event) is therefore the Taylor expansion from the
// last point instead, with the accelerations and multipliers varying linearly from x0 to the
// predictor x: qd = qd0 + h (x0 + x) / 2, q = q0 + h qd0 + h^2 (2 x0 + x) / 6, y likewise;
// its errors are O(h^3 qdddd), O(h^2 qddd) and O(h zd''), below 1e-12 relative at h < 1e-6
// for smooth motions. The constraint then holds to O(h drift) and the event's restart makes
// accelerations and multipliers consistent again.
bool NewmarkFamily::taylor_step(double h) {
  if (!index3_ || !locating_ || n_directions_ > 0 || !(h < kTaylorStep * options_.h)) return false;
  const auto& m = model_;
  const double* x = ws_.x.data();
  const int32_t nq = m.n_q, ny = m.n_y;
  for (int32_t i = 0; i < nq; ++i) {
    q_base_[i] = q0_[i] + h * qd0_[i] + h * h * (2.0 * x0_[i] + x[i]) / 6.0 - cq_ * x[i];
    qd_base_[i] = qd0_[i] + 0.5 * h * (x0_[i] + x[i]) - cqd_ * x[i];
  }
  for (int32_t j = 0; j < ny; ++j)
    y_base_[j] = y0_[j] + 0.5 * h * (x0_[nq + j] + x[nq + j]) - cy_ * x[nq + j];
  write_state();
  return true;
}

void NewmarkFamily::write_state() {
  const auto& m = model_;
  double* v = ws_.v.data();
  const double* x = ws_.x.data();
  const int32_t nq = m.n_q, ny = m.n_y, nz = m.n_z;
  const int32_t* q_slot = m.q_slot.data();
  const int32_t* qd_slot = m.qd_slot.data();
  const int32_t* qdd_slot = m.qdd_slot.data();
  for (int32_t i = 0; i < nq; ++i) {
    v[qdd_slot[i]] = x[i];
    v[q_slot[i]] = q_base_[i] + cq_ * x[i];
    v[qd_slot[i]] = qd_base_[i] + cqd_ * x[i];
  }
  for (int32_t j = 0; j < ny; ++j) {
    v[m.yd_slot[j]] = x[nq + j];
    v[m.y_slot[j]] = y_base_[j] + cy_ * x[nq + j];
  }
  for (int32_t k = 0; k < nz; ++k) v[m.z_slot[k]] = x[nq + ny + k];
}

bool NewmarkFamily::newton_failure(FailureKind kind, int32_t kernel_status, int32_t equation,
                                   int32_t unknown, double update) {
  AttemptFailure& f = attempt_failure_;
  f = AttemptFailure{};
  f.kind = kind;
  f.kernel_status = kernel_status;
  f.equation = equation >= 0 ? equation : argmax_abs(ws_.residual);
  if (f.equation >= 0) f.residual = ws_.residual[f.equation];
  f.unknown = unknown;
  f.update = update;
  if (verbosity_ >= 1) [[unlikely]] {
    fmt::print(stderr, "{}: t = {:.9g}: step h = {:.3e} rejected after {} iterations: {}{}{}\n",
               name(), t_, 2.0 * cy_, attempt_iterations_, failure_summary(kind),
               unknown >= 0 ? ", worst " : "", unknown >= 0 ? unknown_name(model_, unknown) : "");
  }
  refresh_next_ = true;
  restore_accepted_state();
  return false;
}

void NewmarkFamily::restore_accepted_state() {
  const auto& m = model_;
  double* v = ws_.v.data();
  const int32_t nq = m.n_q, ny = m.n_y;
  for (int32_t i = 0; i < nq; ++i) {
    v[m.q_slot[i]] = q0_[i];
    v[m.qd_slot[i]] = qd0_[i];
    v[m.qdd_slot[i]] = x0_[i];
  }
  for (int32_t j = 0; j < ny; ++j) {
    v[m.y_slot[j]] = y0_[j];
    v[m.yd_slot[j]] = x0_[nq + j];
  }
  for (int32_t k = 0; k < m.n_z; ++k) v[m.z_slot[k]] = x0_[nq + ny + k];
  v[m.slot_time] = t_;
}

bool NewmarkFamily::refresh_newton_matrix() {
  const SparseKernel& J = *matrix_;
  double* values = matrix_values_;
  const int32_t st = J.values(ws_.v.data(), values);
  ++stats_.jacobian_evaluations;
  matrix_valid_ = false;
  if (st != 0) {
    if (st < 0) return newton_failure(FailureKind::KernelFatal, st, -1, -1, kNaN);
    return newton_failure(FailureKind::NonFiniteJacobian, st, J.row[st - 1], J.col[st - 1], kNaN);
  }
  const int32_t nnz = J.nnz();
  const int32_t* row = J.row.data();
  for (int32_t e = 0; e < nnz; ++e) values[e] *= row_scale_[row[e]];
  const int32_t sf = newton_.factor(values);
  ++stats_.factorizations;
  if (sf != 0) return newton_failure(FailureKind::SingularMatrix, 0, -1, sf - 1, kNaN);
  matrix_valid_ = true;
  matrix_fresh_ = true;
  theta_ = kNaN;
  matrix_cq_ = cq_;
  refresh_next_ = false;
  if (verbosity_ >= 3) [[unlikely]] {
    fmt::print(stderr,
               "{}: t = {:.9g}: new Newton matrix (h = {:.3e}, c_q = {:.3e}, iteration {})\n",
               name(), t_, 2.0 * cy_, cq_, attempt_iterations_);
  }
  return true;
}

bool NewmarkFamily::attempt(double h) {
  const auto& m = model_;
  double* v = ws_.v.data();
  const int32_t n = m.n_eq(), nq = m.n_q, ny = m.n_y;
  const double am = p_.alpha_m, af = p_.alpha_f, beta = p_.beta, gamma = p_.gamma;

  cq_ = beta_p_ * h * h;
  cqd_ = gamma_p_ * h;
  cy_ = 0.5 * h;
  v[m.slot_c_q] = cq_;
  v[m.slot_c_qd] = cqd_;
  v[m.slot_c_y] = cy_;
  v[m.slot_time] = t_ + h;
  if (h != row_scale_h_) {
    for (int32_t i = 0; i < n; ++i) {
      const EquationLevel level = row_level_[i];
      row_scale_[i] = level == EquationLevel::Position   ? 1.0 / cq_
                      : level == EquationLevel::Velocity ? 1.0 / cqd_
                                                         : 1.0;
    }
    row_scale_h_ = h;
  }
  if (h != z_scale_h_) {
    // an auxiliary of the recursive form is measured in the units of the coordinates, as
    // der(q, 2) is: an acceleration or force as cq dz, a velocity as cqd dz
    for (size_t j = 0; j < z_scale_.size(); ++j)
      z_scale_[j] = z_auxiliary_[j] == EquationLevel::Dynamic    ? cq_
                    : z_auxiliary_[j] == EquationLevel::Velocity ? cqd_
                                                                 : 1.0;
    z_scale_h_ = h;
  }

  // q_T = q_base + cq qdd_T etc.: everything in (38) and the recurrence that is known.
  const double h2 = h * h;
  for (int32_t i = 0; i < nq; ++i) {
    const double a_known = (af * x0_[i] - am * a0_[i]) / (1.0 - am);
    q_base_[i] = q0_[i] + h * qd0_[i] + h2 * (0.5 - beta) * a0_[i] + h2 * beta * a_known;
    qd_base_[i] = qd0_[i] + h * (1.0 - gamma) * a0_[i] + h * gamma * a_known;
  }
  for (int32_t j = 0; j < ny; ++j) y_base_[j] = y0_[j] + 0.5 * h * x0_[nq + j];

  if (n == 0) {  // every variable is an explicit function of time: nothing to solve
    write_state();
    return true;
  }

  // Predictor: extrapolation of the unknowns from the last steps (quadratic through three
  // points once they exist, linear through two, else constant).
  double* x = ws_.x.data();
  if (n_history_ >= 2) {
    const double h1 = h_prev_, h0 = h_prev2_;
    const double w1 = h / h1, w2 = h * (h + h1) / (h1 + h0);
    for (int32_t i = 0; i < n; ++i) {
      const double d1 = (x0_[i] - x_prev_[i]);
      const double d2 = (d1 / h1 - (x_prev_[i] - x_prev2_[i]) / h0);
      x[i] = x0_[i] + w1 * d1 + w2 * d2;
    }
  } else if (n_history_ >= 1) {
    const double r = h / h_prev_;
    for (int32_t i = 0; i < n; ++i) x[i] = x0_[i] + r * (x0_[i] - x_prev_[i]);
  } else {
    std::copy(x0_.begin(), x0_.end(), x);
  }
  write_state();

  matrix_fresh_ = false;
  attempt_iterations_ = 0;
  if (taylor_step(h)) return true;
  const bool fresh_step = fresh_steps_left_ > 0;
  if (fresh_step) --fresh_steps_left_;
  // kept: the matrix comes from an earlier step (modified Newton across steps)
  const bool kept =
      !(full_newton_ || !matrix_valid_ || refresh_next_ || matrix_cq_ != cq_ || fresh_step);
  if (!kept && !refresh_newton_matrix()) return false;
  bool kept_failed = false;  // the kept matrix was recomputed within this attempt
  // Bookkeeping of a converged attempt: a kept matrix that had to be recomputed makes the next
  // steps start with a new one (1, 2, 4, ... steps while that keeps happening).
  const auto converged = [&](double theta) {
    if (theta > kThetaRefresh) refresh_next_ = true;  // converged, but slowly
    if (kept_failed) {
      fresh_backoff_ = std::min(std::max(1, 2 * fresh_backoff_), kMaxFreshSteps);
      fresh_steps_left_ = fresh_backoff_;
    } else if (kept) {
      fresh_backoff_ = 0;
    }
    return true;
  };

  const double rtol = options_.rtol, atol = options_.atol;
  // The size of the coordinates, which the auxiliaries of the recursive form are measured
  // against: an auxiliary is a function of q, der(q) and der(q, 2), so its update, in the units
  // of the coordinates, is asked for to what they are (docs/solvers.md, "Newton strategy").
  double q_ref = 0.0;
  for (int32_t i = 0; i < nq; ++i) q_ref = std::max(q_ref, std::fabs(q0_[i]));
  double* r = ws_.residual.data();
  double* dx = ws_.dx.data();
  double prev_norm = 0.0;
  int32_t since_refresh = 0;
  const Kernel& residual = *residual_;
  for (int32_t it = 1; it <= options_.newton_max_iter; ++it) {
    attempt_iterations_ = it - 1;
    // Full Newton: the matrix at the current iterate (the first one was computed above).
    if (full_newton_ && it > 1 && !refresh_newton_matrix()) return false;
    const int32_t st = residual(v, r);
    ++stats_.residual_evaluations;
    if (st != 0) {
      if (st < 0) return newton_failure(FailureKind::KernelFatal, st, -1, -1, kNaN);
      return newton_failure(FailureKind::NonFiniteResidual, st, st - 1, -1, kNaN);
    }
    for (int32_t i = 0; i < n; ++i) dx[i] = -r[i] * row_scale_[i];
    newton_.solve(dx);
    ++stats_.linear_solves;
    ++stats_.newton_iterations;

    // The update measured in the integrated variables, dq = cq dqdd, dy = cy dyd and dz, each
    // against atol + rtol |value|: `norm` over all, `state_norm` without the multipliers.
    double state_norm = 0.0, norm = 0.0;
    int32_t worst = 0;
    for (int32_t i = 0; i < n; ++i) x[i] += dx[i];
    write_state();
    for (int32_t i = 0; i < nq; ++i) {
      const double w = std::fabs(cq_ * dx[i]) / (atol + rtol * std::fabs(v[m.q_slot[i]]));
      if (!(w <= state_norm)) state_norm = w, worst = i;
    }
    for (int32_t j = 0; j < ny; ++j) {
      const double w = std::fabs(cy_ * dx[nq + j]) / (atol + rtol * std::fabs(v[m.y_slot[j]]));
      if (!(w <= state_norm)) state_norm = w, worst = nq + j;
    }
    norm = state_norm;
    for (int32_t i = nq + ny; i < n; ++i) {
      const size_t j = static_cast<size_t>(i - nq - ny);
      const double scale = z_scale_[j];
      // an auxiliary is held to the coordinates' tolerance (q_ref: their size)
      const bool auxiliary = z_auxiliary_[j] != EquationLevel::Algebraic;
      const double ref =
          auxiliary ? std::max(q_ref, std::fabs(scale * x[i])) : std::fabs(scale * x[i]);
      const double w = scale * std::fabs(dx[i]) / (atol + rtol * ref);
      if (!is_multiplier_[j] && !(w <= state_norm)) state_norm = w;
      if (!(w <= norm)) norm = w, worst = i;
    }
    attempt_iterations_ = it;
    if (!std::isfinite(norm)) {
      return newton_failure(FailureKind::NewtonDiverged, 0, -1, worst, norm);
    }
    // The contraction rate: measured in this attempt, else the last one seen with this matrix
    // (NaN right after a refresh). Full Newton: the ratio of consecutive updates of the attempt.
    // (An exact update, prev_norm = 0, contracts perfectly.)
    double theta = theta_;
    const bool measured = full_newton_ ? it > 1 : since_refresh > 0;  // in this attempt
    if (measured) theta = theta_ = prev_norm > 0.0 ? norm / prev_norm : 0.0;
    // A new matrix is the exact Newton matrix at the iterate it was made at: its first update
    // leaves an error of about K |dx|^2 (quadratic convergence). K is measured at each new
    // matrix's first contraction, theta = K |dx_1|.
    const bool first_fresh = !full_newton_ && matrix_fresh_ && since_refresh == 0;
    if (!full_newton_ && matrix_fresh_ && since_refresh == 1 && prev_norm > 0.0)
      newton_k_ = theta / prev_norm;
    since_refresh = full_newton_ ? it : since_refresh + 1;
    prev_norm = norm;
    if (verbosity_ >= 2) [[unlikely]] {
      fmt::print(stderr,
                 "{}: t = {:.9g}: Newton iteration {}, update {:.3e}, contraction {:.3g}, worst "
                 "{}\n",
                 name(), t_ + h, it, norm, theta, unknown_name(m, worst));
    }
    // Converged when the update is within the tolerance. The first update after a refresh is
    // only trusted once a second one has shown that the iteration contracts (at small steps q
    // hardly depends on qdd, so a single small update proves nothing).
    if (!std::isnan(theta) && norm <= 1.0) {
      return converged(theta);
    }
    // Without constraint multipliers, also when the error left in the iterate, estimated from
    // the rate measured in this attempt as theta / (1 - theta) |dx| (the test of production DAE
    // codes), is within the tolerance. With multipliers that test loses the margins of the
    // constraint and multiplier checks (docs/solvers.md, "Newton strategy").
    // The first update with a new matrix is judged by the constant K of the last new matrix
    // (carried across steps, as production codes carry the rate), with a margin of 2.
    if (estimate_test_ && measured && theta < 1.0 && theta / (1.0 - theta) * norm <= 1.0) {
      return converged(theta);
    }
    if (estimate_test_ && first_fresh && newton_k_ * norm <= kThetaRefresh &&
        2.0 * newton_k_ * norm / (1.0 - newton_k_ * norm) * norm <= 1.0) {
      return converged(newton_k_ * norm);
    }
    // Multipliers of index-3 constraints are only determined to O(eps / (beta' h^2)): at small
    // steps their updates stagnate above the tolerance. With a fresh matrix, the rest converged
    // and no more progress in the multipliers, they have reached that floor: accept.
    if (matrix_fresh_ && since_refresh >= 2 && state_norm <= 1.0 && theta >= kThetaStagnant) {
      return converged(theta);
    }
    // A kept matrix is recomputed at the current iterate when it contracts slowly or, at the
    // measured rate, would need more than kStaleMaxIterations iterations in all (the test above
    // holds after j more when theta^(j+1) / (1 - theta) norm <= 1).
    bool slow = theta > kThetaRefresh;
    if (!slow && measured && !matrix_fresh_ && norm > 1.0) {
      const double more =
          theta > 0.0 ? std::log((1.0 - theta) / (theta * norm)) / std::log(theta) : 0.0;
      slow = static_cast<double>(it) + more > static_cast<double>(kStaleMaxIterations);
    }
    if (norm > 1.0 && (slow || (!matrix_fresh_ && it >= kStaleMaxIterations))) {
      if (!matrix_fresh_ && !full_newton_) {
        if (!refresh_newton_matrix()) return false;
        since_refresh = 0;
        kept_failed = true;
        continue;
      }
      if (theta > kThetaDiverge) {
        return newton_failure(FailureKind::NewtonDiverged, 0, -1, worst, norm);
      }
    }
    if (it == options_.newton_max_iter) {
      return newton_failure(FailureKind::NewtonMaxIterations, 0, -1, worst, norm);
    }
  }
  return newton_failure(FailureKind::NewtonMaxIterations, 0, -1, -1, kNaN);
}

void NewmarkFamily::accept(double h) {
  if (n_directions_ > 0) advance_sensitivities(h);
  const auto& m = model_;
  const double* v = ws_.v.data();
  const double* x = ws_.x.data();
  const double am = p_.alpha_m, af = p_.alpha_f;
  for (int32_t i = 0; i < m.n_q; ++i) {
    a0_[i] = ((1.0 - af) * x[i] + af * x0_[i] - am * a0_[i]) / (1.0 - am);
    q0_[i] = v[m.q_slot[i]];
    qd0_[i] = v[m.qd_slot[i]];
  }
  for (int32_t j = 0; j < m.n_y; ++j) y0_[j] = v[m.y_slot[j]];
  x_prev2_.swap(x_prev_);
  x_prev_.swap(x0_);
  std::copy(ws_.x.begin(), ws_.x.end(), x0_.begin());
  h_prev2_ = h_prev_;
  h_prev_ = h;
  n_history_ = std::min(n_history_ + 1, 2);
  if (verbosity_ >= 1) [[unlikely]] {
    fmt::print(stderr, "{}: t = {:.9g}, h = {:.3e}, Newton iterations: {}\n", name(), t_ + h, h,
               attempt_iterations_);
  }
}

// ---- exact sensitivities
//
// The discrete solution of a step is x = [qdd | yd | z] with F(q_base + c_q x_q, qd_base +
// c_qd x_q, x_q, y_base + c_y x_y, x_y, x_z, p) = 0, q_base etc. linear in the last point's
// state. Along a direction with parameter derivative dp, differentiating gives
//   J S_x = -(F_p dp + F_q S_qbase + F_qd S_qdbase + F_y S_ybase),
// J the Newton matrix at the converged point, S_qbase etc. from the same recurrences as q_base.
// At t0 the initial system gives S_x0 the same way. docs/studies.md, "Exact sensitivities".

namespace {

// y += scale * K x for a sparse kernel's values
void spmv(const SparseKernel& k, const double* values, const double* x, double* y,
          double scale = 1.0) {
  const int32_t nnz = k.nnz();
  for (int32_t e = 0; e < nnz; ++e) y[k.row[e]] += scale * values[e] * x[k.col[e]];
}

}  // namespace

void NewmarkFamily::prepare_sensitivities() {
  const auto& m = model_;
  if (index2_) throw SolverSetupError("exact sensitivities are not available with --index2");
  const auto nd = directions_.size();
  const auto n = static_cast<size_t>(m.n_eq()), nq = static_cast<size_t>(m.n_q),
             ny = static_cast<size_t>(m.n_y);
  sq_.assign(nd * nq, 0.0);
  sqd_.assign(nd * nq, 0.0);
  sa_.assign(nd * nq, 0.0);
  sy_.assign(nd * ny, 0.0);
  sx_.assign(nd * n, 0.0);
  fp_values_.assign(static_cast<size_t>(m.sens_F_p.nnz()), 0.0);
  jq_values_.assign(static_cast<size_t>(m.jac_q.nnz()), 0.0);
  jqd_values_.assign(static_cast<size_t>(m.jac_qd.nnz()), 0.0);
  jy_values_.assign(static_cast<size_t>(m.jac_y.nnz()), 0.0);
  j_exact_.assign(static_cast<size_t>(matrix_->nnz()), 0.0);
  sb_q_.assign(nq, 0.0);
  sb_qd_.assign(nq, 0.0);
  sb_y_.assign(ny, 0.0);
  rhs_.assign(n, 0.0);
  refine_r_.assign(n, 0.0);
  refine_x_.assign(n, 0.0);
}

bool NewmarkFamily::initialize_sensitivities() {
  const auto& m = model_;
  const double* v = ws_.v.data();
  const int32_t nq = m.n_q, ny = m.n_y, n = m.n_eq();
  const auto np = static_cast<int32_t>(m.parameters.size());
  for (int32_t k = 0; k < n_directions_; ++k) {
    const auto& d = directions_[static_cast<size_t>(k)];
    std::copy_n(d.start.begin(), nq, sq_.begin() + k * nq);
    std::copy_n(d.start.begin() + nq, nq, sqd_.begin() + k * nq);
    std::copy_n(d.start.begin() + 2 * nq, ny, sy_.begin() + k * ny);
  }
  if (options_.initial_accelerations && n > 0) {
    // init_matrix S_x0 = -d init_residual / d[q | qd | y | p] [S_q | S_qd | S_y | dp]
    const SparseKernel& A = m.init_matrix;
    std::vector<double> a_values(static_cast<size_t>(A.nnz())),
        g_values(static_cast<size_t>(m.sens_init.nnz()));
    if (A.values(v, a_values.data()) != 0 || m.sens_init.values(v, g_values.data()) != 0) {
      attempt_failure_ = AttemptFailure{};
      attempt_failure_.kind = FailureKind::NonFiniteJacobian;
      fail(attempt_failure_, FailurePhase::InitialValues, 0.0, 0);
      return false;
    }
    LinearSolver solver;
    solver.setup(n, A.row, A.col);
    if (solver.factor(a_values.data()) != 0) {
      attempt_failure_ = AttemptFailure{};
      attempt_failure_.kind = FailureKind::SingularMatrix;
      fail(attempt_failure_, FailurePhase::InitialValues, 0.0, 0);
      return false;
    }
    std::vector<double> w(static_cast<size_t>(2 * nq + ny + np));
    for (int32_t k = 0; k < n_directions_; ++k) {
      std::copy_n(sq_.begin() + k * nq, nq, w.begin());
      std::copy_n(sqd_.begin() + k * nq, nq, w.begin() + nq);
      std::copy_n(sy_.begin() + k * ny, ny, w.begin() + 2 * nq);
      const auto& dp = directions_[static_cast<size_t>(k)].dp;
      std::copy(dp.begin(), dp.end(), w.begin() + 2 * nq + ny);
      double* sx = sx_.data() + static_cast<size_t>(k) * static_cast<size_t>(n);
      std::fill_n(sx, n, 0.0);
      spmv(m.sens_init, g_values.data(), w.data(), sx, -1.0);
      solver.solve(sx);
    }
  }
  for (int32_t k = 0; k < n_directions_; ++k)
    std::copy_n(sx_.begin() + k * n, nq, sa_.begin() + k * nq);
  return true;
}

void NewmarkFamily::solve_exact(std::vector<double>& b) {
  // row-scaled as the factored Newton matrix: A = diag(s) J; refine x on the factorization
  // (possibly of an earlier iterate or step) until A x = s b to rounding, else refactor
  const auto& m = model_;
  const int32_t n = m.n_eq();
  const SparseKernel& J = *matrix_;
  for (int32_t i = 0; i < n; ++i) b[static_cast<size_t>(i)] *= row_scale_[i];
  double b_norm = 0;
  for (double x : b) b_norm = std::max(b_norm, std::fabs(x));
  std::vector<double>& x = refine_x_;
  std::vector<double>& r = refine_r_;
  std::fill(x.begin(), x.end(), 0.0);
  r = b;
  double r_norm = b_norm;
  const double tol = 1e-12 * b_norm;
  bool refactored = !matrix_valid_;
  if (refactored) {
    for (int32_t e = 0; e < J.nnz(); ++e) matrix_values_[e] = j_exact_[e] * row_scale_[J.row[e]];
    newton_.factor(matrix_values_);
    ++stats_.factorizations;
    matrix_valid_ = true;
    matrix_cq_ = cq_;
    theta_ = kNaN;
  }
  for (int it = 0; it < 30 && r_norm > tol; ++it) {
    newton_.solve(r.data());
    ++stats_.linear_solves;
    for (int32_t i = 0; i < n; ++i) x[i] += r[i];
    r = b;
    for (int32_t e = 0; e < J.nnz(); ++e)
      r[J.row[e]] -= row_scale_[J.row[e]] * j_exact_[e] * x[J.col[e]];
    double norm = 0;
    for (double y : r) norm = std::max(norm, std::fabs(y));
    // a slow contraction (more than about four refinements to go) or none: the factorization is
    // too far from J here; factor J itself (Newton's next steps profit from it too)
    if (!(norm < 1e-3 * r_norm) && !refactored) {
      for (int32_t e = 0; e < J.nnz(); ++e) matrix_values_[e] = j_exact_[e] * row_scale_[J.row[e]];
      newton_.factor(matrix_values_);
      ++stats_.factorizations;
      matrix_cq_ = cq_;
      theta_ = kNaN;
      refactored = true;
      std::fill(x.begin(), x.end(), 0.0);
      r = b;
      norm = b_norm;
    }
    r_norm = norm;
  }
  b = x;
}

void NewmarkFamily::advance_sensitivities(double h) {
  const auto& m = model_;
  const double* v = ws_.v.data();
  const int32_t nq = m.n_q, ny = m.n_y, n = m.n_eq();
  const double am = p_.alpha_m, af = p_.alpha_f, beta = p_.beta, gamma = p_.gamma, h2 = h * h;
  m.sens_F_p.values(v, fp_values_.data());
  m.jac_q.values(v, jq_values_.data());
  m.jac_qd.values(v, jqd_values_.data());
  m.jac_y.values(v, jy_values_.data());
  matrix_->values(v, j_exact_.data());
  for (int32_t k = 0; k < n_directions_; ++k) {
    double* sq = sq_.data() + k * nq;
    double* sqd = sqd_.data() + k * nq;
    double* sa = sa_.data() + k * nq;
    double* sy = sy_.data() + k * ny;
    double* sx = sx_.data() + static_cast<size_t>(k) * static_cast<size_t>(n);
    for (int32_t i = 0; i < nq; ++i) {
      const double a_known = (af * sx[i] - am * sa[i]) / (1.0 - am);
      sb_q_[i] = sq[i] + h * sqd[i] + h2 * (0.5 - beta) * sa[i] + h2 * beta * a_known;
      sb_qd_[i] = sqd[i] + h * (1.0 - gamma) * sa[i] + h * gamma * a_known;
    }
    for (int32_t j = 0; j < ny; ++j) sb_y_[j] = sy[j] + 0.5 * h * sx[nq + j];
    std::fill(rhs_.begin(), rhs_.end(), 0.0);
    spmv(m.sens_F_p, fp_values_.data(), directions_[static_cast<size_t>(k)].dp.data(), rhs_.data(),
         -1.0);
    spmv(m.jac_q, jq_values_.data(), sb_q_.data(), rhs_.data(), -1.0);
    spmv(m.jac_qd, jqd_values_.data(), sb_qd_.data(), rhs_.data(), -1.0);
    spmv(m.jac_y, jy_values_.data(), sb_y_.data(), rhs_.data(), -1.0);
    solve_exact(rhs_);
    for (int32_t i = 0; i < nq; ++i) {
      sa[i] = ((1.0 - af) * rhs_[i] + af * sx[i] - am * sa[i]) / (1.0 - am);
      sq[i] = sb_q_[i] + cq_ * rhs_[i];
      sqd[i] = sb_qd_[i] + cqd_ * rhs_[i];
    }
    for (int32_t j = 0; j < ny; ++j) sy[j] = sb_y_[j] + cy_ * rhs_[nq + j];
    std::copy_n(rhs_.begin(), n, sx);
  }
}

void NewmarkFamily::sensitivity_state(size_t k, double* w) const {
  const auto& m = model_;
  const auto nq = static_cast<size_t>(m.n_q), ny = static_cast<size_t>(m.n_y),
             nz = static_cast<size_t>(m.n_z), n = static_cast<size_t>(m.n_eq());
  const double* sx = sx_.data() + k * n;  // [qdd | yd | z]
  w = std::copy_n(sq_.data() + k * nq, nq, w);
  w = std::copy_n(sqd_.data() + k * nq, nq, w);
  w = std::copy_n(sx, nq, w);
  w = std::copy_n(sy_.data() + k * ny, ny, w);
  w = std::copy_n(sx + nq, ny, w);
  std::copy_n(sx + nq + ny, nz, w);
}

}  // namespace mbs::rt
