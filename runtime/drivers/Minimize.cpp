#include "runtime/drivers/Minimize.h"

#include <nlopt.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <exception>
#include <memory>
#include <stdexcept>

namespace mbs::rt {
namespace {

struct MethodInfo {
  MinimizeMethod method;
  std::string_view name;
  nlopt_algorithm algorithm;
  bool gradient;
};
constexpr std::array<MethodInfo, 5> kMethods{{
    {MinimizeMethod::NelderMead, "nelder-mead", NLOPT_LN_NELDERMEAD, false},
    {MinimizeMethod::Bobyqa, "bobyqa", NLOPT_LN_BOBYQA, false},
    {MinimizeMethod::Cobyla, "cobyla", NLOPT_LN_COBYLA, false},
    {MinimizeMethod::Lbfgs, "lbfgs", NLOPT_LD_LBFGS, true},
    {MinimizeMethod::Slsqp, "slsqp", NLOPT_LD_SLSQP, true},
}};

const MethodInfo& info(MinimizeMethod m) {
  for (const MethodInfo& i : kMethods)
    if (i.method == m) return i;
  throw std::invalid_argument("minimize: unknown method");
}

std::string describe(nlopt_result r) {
  switch (r) {
    case NLOPT_SUCCESS:
      return "converged";
    case NLOPT_STOPVAL_REACHED:
      return "converged: the stop value was reached";
    case NLOPT_FTOL_REACHED:
      return "converged: the change of f is below its tolerance";
    case NLOPT_XTOL_REACHED:
      return "converged: the change of x is below its tolerance";
    case NLOPT_MAXEVAL_REACHED:
      return "stopped: max-evaluations reached";
    case NLOPT_MAXTIME_REACHED:
      return "stopped: the time limit was reached";
    case NLOPT_FAILURE:
      return "failed: NLopt reported a failure";
    case NLOPT_INVALID_ARGS:
      return "failed: NLopt rejected the arguments";
    case NLOPT_OUT_OF_MEMORY:
      return "failed: out of memory";
    case NLOPT_ROUNDOFF_LIMITED:
      return "stopped: rounding errors limit progress (the result is usually near the minimum)";
    case NLOPT_FORCED_STOP:
      return "stopped";
    default:
      return "NLopt result " + std::to_string(static_cast<int>(r));
  }
}

// Everything the NLopt objective callback needs; NLopt calls it from the calling thread.
class Problem {
 public:
  Problem(const BatchEvaluator& evaluate, const std::vector<StudyVariable>& variables,
          const MinimizeOptions& options, const EvaluationSink& report,
          const GradientFunction& gradient, nlopt_opt opt)
      : evaluate_(evaluate),
        variables_(variables),
        options_(options),
        report_(report),
        gradient_(gradient),
        opt_(opt) {}

  static double call(unsigned n, const double* x, double* grad, void* data) noexcept {
    auto& p = *static_cast<Problem*>(data);
    try {
      return p.value(std::vector<double>(x, x + n), grad);
    } catch (...) {
      p.error_ = std::current_exception();
      p.stop("stopped by an error");
      return 0;
    }
  }

  MinimizeResult result;
  std::exception_ptr error_;
  std::string stop_reason_;

 private:
  void stop(std::string why) {
    if (stop_reason_.empty()) stop_reason_ = std::move(why);
    nlopt_force_stop(opt_);
  }

  // Reports one run under the study's running index.
  void record(const EvaluationRecord& r, int round) {
    EvaluationRecord mine = r;
    mine.index = result.runs++;
    mine.round = round;
    if (std::isnan(objective_value(*r.outcome, options_.objective))) ++result.failed;
    if (!r.finite_difference) center_index_ = mine.index;
    if (report_) report_(mine);
  }

  double value(const std::vector<double>& x, double* grad) {
    const int round = result.evaluations++;
    const size_t n = x.size();
    RunOutcome at_x;
    std::vector<double> g(n, std::numeric_limits<double>::quiet_NaN());
    if (grad && gradient_) {
      PointGradient pg = gradient_(x);
      if (pg.interrupted) return interrupted();
      at_x = std::move(pg.outcome);
      if (pg.gradient.size() == n) g = std::move(pg.gradient);
      record({0, 0, false, x, &at_x}, round);
    } else if (grad) {
      SensitivityOptions fd = options_.gradient;
      fd.evaluate_reference = true;
      SensitivityResult s = compute_sensitivities(
          evaluate_, variables_, x, fd, [&](const EvaluationRecord& r) { record(r, round); });
      if (s.interrupted) return interrupted();
      at_x = s.outcomes[0];
      if (static_cast<size_t>(options_.objective) < s.derivative.size())
        g = s.derivative[static_cast<size_t>(options_.objective)];
    } else {
      std::vector<std::optional<RunOutcome>> out = evaluate_({x});
      if (out.size() != 1 || !out[0]) return interrupted();
      at_x = std::move(*out[0]);
      record({0, 0, false, x, &at_x}, round);
    }

    double f = objective_value(at_x, options_.objective);
    const bool ok = !std::isnan(f);
    if (ok) {
      worst_ = std::max(worst_, f);
      if (result.best_point.empty() || f < result.best_value) {
        result.best_point = x;
        result.best_value = f;
        result.best_index = center_index_;
      }
    } else if (!std::isnan(options_.failed_value)) {
      f = options_.failed_value;
    } else if (std::isfinite(worst_)) {
      f = worst_ + std::max(1.0, std::abs(worst_));
    } else {
      stop("stopped: the start point failed, so there is no value to compare a failed run with" +
           (at_x.message.empty() ? std::string() : " (" + at_x.message + ")"));
      return 0;
    }
    if (grad) {
      for (size_t i = 0; i < n; ++i) {
        if (!std::isnan(g[i])) continue;
        if (ok) {
          stop("stopped: the derivative with respect to " + variables_[i].name +
               " could not be computed at a successful point (the runs of its finite "
               "difference failed)");
          return f;
        }
        g[i] = 0;  // a failed point: only its (worse) value matters to the method
      }
      std::copy(g.begin(), g.end(), grad);
    }
    return f;
  }

  double interrupted() {
    result.interrupted = true;
    stop("stopped: interrupted");
    return 0;
  }

  const BatchEvaluator& evaluate_;
  const std::vector<StudyVariable>& variables_;
  const MinimizeOptions& options_;
  const EvaluationSink& report_;
  const GradientFunction& gradient_;
  nlopt_opt opt_;
  double worst_ = -std::numeric_limits<double>::infinity();
  size_t center_index_ = 0;
};

}  // namespace

std::string_view minimize_method_name(MinimizeMethod m) {
  return info(m).name;
}

std::optional<MinimizeMethod> minimize_method_from_name(std::string_view name) {
  for (const MethodInfo& i : kMethods)
    if (i.name == name) return i.method;
  return std::nullopt;
}

bool minimize_method_uses_gradient(MinimizeMethod m) {
  return info(m).gradient;
}

MinimizeResult minimize(const BatchEvaluator& evaluate, const std::vector<StudyVariable>& variables,
                        const MinimizeOptions& options, const EvaluationSink& report,
                        const GradientFunction& gradient) {
  const size_t n = variables.size();
  auto fail = [](const std::string& what) { throw std::invalid_argument("minimize: " + what); };
  if (n == 0) fail("no variables to optimise");
  if (options.objective < 0) fail("objective index must not be negative");
  if (options.max_evaluations < 0) fail("max-evaluations must not be negative");
  for (double t : {options.x_rel_tol, options.x_abs_tol, options.f_rel_tol, options.f_abs_tol})
    if (!(t >= 0)) fail("tolerances must not be negative");
  if (!options.start.empty() && options.start.size() != n)
    fail("start needs one value per variable (" + std::to_string(n) + ")");
  std::vector<double> lower(n), upper(n), x(n);
  for (size_t i = 0; i < n; ++i) {
    const StudyVariable& v = variables[i];
    lower[i] = std::isnan(v.lower) ? -HUGE_VAL : v.lower;
    upper[i] = std::isnan(v.upper) ? HUGE_VAL : v.upper;
    if (!(lower[i] <= upper[i])) fail("variable '" + v.name + "' has lower > upper");
    if (!options.start.empty()) {
      x[i] = options.start[i];
    } else if (std::isfinite(lower[i]) && std::isfinite(upper[i])) {
      x[i] = 0.5 * (lower[i] + upper[i]);
    } else {
      fail("variable '" + v.name + "' needs a start value or both bounds");
    }
    if (!(x[i] >= lower[i] && x[i] <= upper[i]))
      fail("the start value of '" + v.name + "' lies outside its bounds");
  }

  std::unique_ptr<nlopt_opt_s, decltype(&nlopt_destroy)> owner(
      nlopt_create(info(options.method).algorithm, static_cast<unsigned>(n)), &nlopt_destroy);
  nlopt_opt opt = owner.get();
  if (!opt) throw std::runtime_error("minimize: NLopt could not create the optimiser");
  Problem problem(evaluate, variables, options, report, gradient, opt);
  nlopt_set_min_objective(opt, &Problem::call, &problem);
  nlopt_set_lower_bounds(opt, lower.data());
  nlopt_set_upper_bounds(opt, upper.data());
  nlopt_set_xtol_rel(opt, options.x_rel_tol);
  nlopt_set_xtol_abs1(opt, options.x_abs_tol);
  nlopt_set_ftol_rel(opt, options.f_rel_tol);
  nlopt_set_ftol_abs(opt, options.f_abs_tol);
  nlopt_set_maxeval(
      opt, options.max_evaluations > 0 ? options.max_evaluations : 200 * static_cast<int>(n));
  double f = 0;
  nlopt_result code = nlopt_optimize(opt, x.data(), &f);
  if (problem.error_) std::rethrow_exception(problem.error_);

  MinimizeResult result = std::move(problem.result);
  result.converged = code == NLOPT_SUCCESS || code == NLOPT_STOPVAL_REACHED ||
                     code == NLOPT_FTOL_REACHED || code == NLOPT_XTOL_REACHED;
  result.status = code == NLOPT_FORCED_STOP && !problem.stop_reason_.empty() ? problem.stop_reason_
                                                                             : describe(code);
  return result;
}

}  // namespace mbs::rt
