#include "runtime/analysis/Static.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

#include "runtime/analysis/Linearize.h"
#include "runtime/io/Interrupt.h"
#include "runtime/linalg/LinearSolver.h"
#include "runtime/solvers/ModelCheck.h"

namespace mbs::rt {

namespace {

class StaticSolver {
 public:
  StaticSolver(const CompiledModel& m, const SolverOptions& o, std::span<const double> start)
      : m_(m), o_(o) {
    n_ = m.n_eq();
    auto check = [&](const SparseKernel& k, const char* name, int32_t cols) {
      if (k.rows != n_ || k.cols != cols) {
        throw SolverSetupError(fmt::format("static solver: kernel {} is {} x {}, expected {} x {}",
                                           name, k.rows, k.cols, n_, cols));
      }
    };
    check(m.jac_q, "jac_q", m.n_q);
    check(m.jac_y, "jac_y", m.n_y);
    check(m.jac_z, "jac_z", m.n_z);
    // [jac_q | jac_y | jac_z] side by side: the concatenation of compressed-column patterns is
    // the compressed-column pattern of the whole, and its values are the three kernels' values
    // one after the other.
    for (const auto* k : {&m.jac_q, &m.jac_y, &m.jac_z}) {
      const int32_t offset = k == &m.jac_q ? 0 : k == &m.jac_y ? m.n_q : m.n_q + m.n_y;
      for (int32_t e = 0; e < k->nnz(); ++e) {
        row_.push_back(k->row[e]);
        col_.push_back(k->col[e] + offset);
      }
    }
    values_.assign(row_.size(), 0.0);
    for (const SparseKernel* k : {&m.jac_q, &m.jac_y, &m.jac_z})
      if (k->nnz() > 0 && !k->values.fn)
        throw SolverSetupError("static solver: the model has no code for a jac_* kernel");
    if (start.empty())
      v_ = m.v0;
    else
      v_.assign(start.begin(), start.end());
    for (int32_t i = 0; i < m.n_q; ++i) v_[m.qd_slot[i]] = v_[m.qdd_slot[i]] = 0.0;
    for (int32_t i = 0; i < m.n_y; ++i) v_[m.yd_slot[i]] = 0.0;
    f0_.assign(static_cast<size_t>(n_), 0.0);
    r_.assign(static_cast<size_t>(n_), 0.0);
    dx_.assign(static_cast<size_t>(n_), 0.0);
    outputs_.assign(static_cast<size_t>(std::max(m.outputs.n_out, 0)), 0.0);
    if (n_ > 0) ls_.setup(n_, row_, col_);
  }

  StaticResult run(const std::function<int(double, std::span<const double>)>& observer,
                   ProgressSink* progress) {
    const auto start = std::chrono::steady_clock::now();
    StaticResult res;
    progress_sink_ = progress;
    progress_.start(progress, "static", "load", 0.0, 1.0);
    res.status = solve(observer);
    progress_.finish();
    res.warnings = std::move(warnings_);
    stats_.wall_time =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    res.statistics = stats_;
    res.failure = std::move(failure_);
    res.v = v_;
    return res;
  }

 private:
  struct Attempt {
    FailureKind kind = FailureKind::NewtonMaxIterations;
    int32_t kernel_status = 0;
    int32_t equation = -1;
    double residual = std::numeric_limits<double>::quiet_NaN();
    int32_t unknown = -1;
    double update = std::numeric_limits<double>::quiet_NaN();
    bool at_start = false;  // failed before the first update: independent of the increment
    double value = std::numeric_limits<double>::quiet_NaN();  // Diverged: the unknown's value
  };

  double& x(int32_t i) {
    if (i < m_.n_q) return v_[m_.q_slot[i]];
    if (i < m_.n_q + m_.n_y) return v_[m_.y_slot[i - m_.n_q]];
    return v_[m_.z_slot[i - m_.n_q - m_.n_y]];
  }

  // F(v) into r_; false (attempt_ filled) on a non-finite or fatal status.
  bool residual() {
    ++stats_.residual_evaluations;
    const int32_t st = m_.residual(v_.data(), r_.data());
    if (st == 0) return true;
    attempt_.kernel_status = st;
    attempt_.kind = st > 0 ? FailureKind::NonFiniteResidual : FailureKind::KernelFatal;
    attempt_.equation = st > 0 ? st - 1 : -1;
    attempt_.residual = st > 0 ? r_[st - 1] : attempt_.residual;
    return false;
  }

  bool jacobian() {
    ++stats_.jacobian_evaluations;
    size_t offset = 0;
    int32_t col_offset = 0;
    const SparseKernel* kernels[] = {&m_.jac_q, &m_.jac_y, &m_.jac_z};
    for (int b = 0; b < 3; ++b) {
      const SparseKernel* k = kernels[b];
      if (k->nnz() > 0) {
        const int32_t st = k->values(v_.data(), values_.data() + offset);
        if (st != 0) {
          attempt_.kernel_status = st;
          attempt_.kind = st > 0 ? FailureKind::NonFiniteJacobian : FailureKind::KernelFatal;
          if (st > 0) {
            attempt_.equation = k->row[st - 1];
            attempt_.unknown = k->col[st - 1] + col_offset;
          }
          return false;
        }
      }
      offset += static_cast<size_t>(k->nnz());
      col_offset += k->cols;
    }
    return true;
  }

  void largest_residual() {
    attempt_.equation = -1;
    double worst = -1.0;
    for (int32_t i = 0; i < n_; ++i) {
      const double a = std::isfinite(r_[i]) ? std::fabs(r_[i]) : std::numeric_limits<double>::max();
      if (a > worst) worst = a, attempt_.equation = i, attempt_.residual = r_[i];
    }
  }

  // Newton on H(x, s) = F(x) - (1 - s) F0 from the current x. False: attempt_ says why, x is
  // restored to its value on entry.
  bool newton(double s) {
    attempt_ = Attempt{};
    saved_ = v_;
    const double f0_factor = 1.0 - s;
    for (int32_t it = 0; it < o_.newton_max_iter; ++it) {
      ++stats_.newton_iterations;
      attempt_.at_start = it == 0;
      if (!residual()) return restore();
      for (int32_t i = 0; i < n_; ++i) r_[i] -= f0_factor * f0_[i];
      if (!jacobian()) return restore();
      ++stats_.factorizations;
      const int32_t k = ls_.factor(values_.data());
      if (k != 0) {
        attempt_.kind = FailureKind::SingularMatrix;
        attempt_.unknown = k - 1;
        largest_residual();
        return restore();
      }
      for (int32_t i = 0; i < n_; ++i) dx_[i] = -r_[i];
      ++stats_.linear_solves;
      ls_.solve(dx_.data());
      double norm = 0.0;
      int32_t worst = -1;
      for (int32_t i = 0; i < n_; ++i) {
        const double w = std::fabs(dx_[i]) / (o_.atol + o_.rtol * std::fabs(x(i)));
        if (!(w <= norm)) norm = w, worst = i;  // NaN counts as the worst
      }
      if (o_.verbosity >= 2) {
        std::fprintf(stderr, "static:   s = %.9g  Newton %d: |dx|/tol = %.3g (%s)\n", s, it + 1,
                     norm, worst >= 0 ? unknown_name(m_, worst).c_str() : "-");
      }
      if (!std::isfinite(norm)) {
        attempt_.kind = FailureKind::NewtonDiverged;
        attempt_.at_start = false;
        attempt_.unknown = worst;
        attempt_.update = norm;
        largest_residual();
        return restore();
      }
      bool beyond = false;
      for (int32_t i = 0; i < n_; ++i) {
        x(i) += dx_[i];
        beyond |= !(std::fabs(x(i)) <= o_.divergence_limit);
      }
      attempt_.unknown = worst;
      attempt_.update = norm;
      progress_.tick(s, s - s_start_);
      if (beyond) {
        // the iterate runs away: no equilibrium near this load (or none at all)
        attempt_.kind = FailureKind::Diverged;
        attempt_.at_start = false;
        int32_t far = 0;
        for (int32_t i = 0; i < n_; ++i)
          if (!(std::fabs(x(i)) <= std::fabs(x(far)))) far = i;
        attempt_.unknown = far;
        attempt_.update = std::numeric_limits<double>::quiet_NaN();
        attempt_.value = x(far);
        largest_residual();
        return restore();
      }
      if (norm <= 1.0) return true;
    }
    attempt_.kind = FailureKind::NewtonMaxIterations;
    attempt_.at_start = false;
    // Report the residual at the last iterate.
    if (residual()) {
      for (int32_t i = 0; i < n_; ++i) r_[i] -= f0_factor * f0_[i];
      largest_residual();
    }
    return restore();
  }

  bool restore() {
    v_ = saved_;
    return false;
  }

  // 0 go on, else stop; kEmitFailed: a non-finite output (failure_ set, nothing written)
  static constexpr int kEmitFailed = -1000000;
  int emit(const std::function<int(double, std::span<const double>)>& observer, double s,
           double inc) {
    if (!observer) return 0;
    if (m_.outputs.fn) {
      const int32_t st = m_.outputs(v_.data(), outputs_.data());
      if (st > 0) {
        FailureRecord f =
            nonfinite_output_failure(m_, outputs_, "static", s, inc, FailureAxis::Load);
        if (o_.nonfinite == NonFiniteAction::Error) {
          failure_ = std::move(f);
          return kEmitFailed;
        }
        if (!warned_) {
          warned_ = true;
          warnings_.push_back(nonfinite_output_warning(f, m_));
          if (progress_sink_) progress_sink_->warning(warnings_.back());
        }
      }
    }
    return observer(s, outputs_);
  }

  void fail(double s, double inc, double inc_min, int32_t halvings) {
    FailureRecord f;
    f.kind = attempt_.kind;
    f.phase = FailurePhase::Step;
    f.solver = "static";
    f.t = s;
    f.h = inc;
    f.h_min = inc_min;
    f.halvings = halvings;
    f.kernel_status = attempt_.kernel_status;
    f.equation = attempt_.equation;
    f.residual = attempt_.residual;
    f.unknown = attempt_.unknown;
    f.update = attempt_.update;
    std::string& out = f.message;
    out = fmt::format("error: static: {} in the load step from s = {:.9g} to s = {:.9g}\n",
                      failure_summary(f.kind), s, s + inc);
    if (attempt_.at_start || f.kind == FailureKind::KernelFatal) {
      out += fmt::format(
          "note: this happens at the start point of the load step, so a smaller load increment "
          "cannot help (increment {:.6g})\n",
          inc);
    } else {
      out += fmt::format(
          "note: the load increment was halved {} times to {:.6g}; a further halving would go "
          "below the minimum {:.6g} = (1/load_steps) / 2^{}\n",
          halvings, inc, inc_min, kMaxLoadHalvings);
    }
    if (f.kind == FailureKind::Diverged) {
      out += fmt::format(
          "note: the Newton iterate of '{}' reached {:.3g}, beyond --divergence-limit = {:.3g}\n",
          unknown_name(m_, f.unknown), attempt_.value, o_.divergence_limit);
    }
    out += render_failure_notes(f, m_);
    if (f.kind == FailureKind::SingularMatrix) {
      out +=
          "help: a static solution needs every coordinate held in place by a spring, a "
          "constraint or a position-dependent force: a free rigid-body motion, a mechanism or a "
          "velocity-level constraint (0 = 0 at rest) makes the Jacobian singular; a start point "
          "where a stiffness vanishes (e.g. a multiplier starting at 0) does too\n";
    } else if (f.kind == FailureKind::NewtonDiverged || f.kind == FailureKind::Diverged ||
               f.kind == FailureKind::NewtonMaxIterations) {
      out +=
          "help: use more load steps (--load-steps), start values closer to the equilibrium or "
          "a larger --newton-max-iter; if the load factor stays at the same s, the structure may "
          "have no equilibrium beyond it (a limit point: buckling, snap-through)\n";
    } else {
      out += fmt::format("help: {}\n", failure_hint(f.kind));
    }
    failure_ = std::move(f);
  }

  SolveStatus solve(const std::function<int(double, std::span<const double>)>& observer) {
    if (n_ == 0) {
      const int e = emit(observer, 1.0, 1.0);
      return e == kEmitFailed ? SolveStatus::Failed
             : e != 0         ? SolveStatus::Stopped
                              : SolveStatus::Finished;
    }
    // F0 = F(x0): the part of the residual the homotopy removes at s = 0.
    attempt_ = Attempt{};
    attempt_.at_start = true;
    if (!residual()) {
      fail(0.0, 0.0, 0.0, 0);
      return SolveStatus::Failed;
    }
    f0_ = r_;
    const int32_t n_steps = o_.load_steps;
    const double inc_max = 1.0 / n_steps;
    const double inc_min = std::ldexp(inc_max, -kMaxLoadHalvings);
    double s = 0.0, inc = inc_max;
    int32_t streak = 0;
    for (int32_t k = 1; k <= n_steps; ++k) {
      const double target = k == n_steps ? 1.0 : static_cast<double>(k) / n_steps;
      while (s < target) {
        if (interrupt_requested()) return SolveStatus::Interrupted;
        const double remaining = target - s;
        const bool last = inc >= remaining * (1.0 - 1e-3);
        const double step = last ? remaining : inc;
        const double s_new = last ? target : s + inc;
        const int64_t iterations_before = stats_.newton_iterations;
        s_start_ = s;
        if (newton(s_new)) {
          stats_.record_accepted_step(step);
          if (o_.verbosity >= 1) {
            std::fprintf(stderr, "static: s = %.9g (increment %.3g): %lld Newton iterations\n",
                         s_new, step,
                         static_cast<long long>(stats_.newton_iterations - iterations_before));
          }
          s = s_new;
          if (inc < inc_max && ++streak >= 2) {
            inc = std::min(2.0 * inc, inc_max);
            streak = 0;
          }
          continue;
        }
        ++stats_.rejected_steps;
        streak = 0;
        const auto halvings = static_cast<int32_t>(std::lround(std::log2(inc_max / step)));
        if (o_.verbosity >= 1) {
          std::fprintf(stderr, "static: s = %.9g (increment %.3g) failed: %s\n", s_new, step,
                       std::string(failure_summary(attempt_.kind)).c_str());
        }
        if (attempt_.at_start || attempt_.kind == FailureKind::KernelFatal ||
            0.5 * step < inc_min * (1.0 - 1e-9)) {
          fail(s, step, inc_min, std::max(halvings, 0));
          return SolveStatus::Failed;
        }
        inc = 0.5 * step;
      }
      if (const int e = emit(observer, target, inc)) {
        return e == kEmitFailed ? SolveStatus::Failed : SolveStatus::Stopped;
      }
    }
    return SolveStatus::Finished;
  }

  const CompiledModel& m_;
  SolverOptions o_;
  int32_t n_ = 0;
  std::vector<int32_t> row_, col_;
  std::vector<double> values_, v_, saved_, f0_, r_, dx_, outputs_;
  LinearSolver ls_;
  Statistics stats_;
  Attempt attempt_;
  std::optional<FailureRecord> failure_;
  ProgressMeter progress_;
  ProgressSink* progress_sink_ = nullptr;
  std::vector<std::string> warnings_;
  bool warned_ = false;
  double s_start_ = 0.0;  // the load factor at the start of the current load step
};

}  // namespace

StaticResult solve_static(
    std::shared_ptr<const CompiledModel> model, const SolverOptions& options,
    const std::function<int(double load, std::span<const double> outputs)>& observer,
    ProgressSink* progress, std::span<const double> start) {
  if (!model) throw SolverSetupError("static solver: no model");
  if (!start.empty() && start.size() != model->v0.size())
    throw SolverSetupError("static solver: the start vector has the wrong size");
  if (auto err = validate(options)) throw SolverSetupError(*err);
  if (options.load_steps < 1) {
    throw SolverSetupError(fmt::format("option --load-steps (load_steps) = {} must be at least 1",
                                       options.load_steps));
  }
  check_model(*model);
  StaticSolver solver(*model, options, start);
  return solver.run(observer, progress);
}

}  // namespace mbs::rt
