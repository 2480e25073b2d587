#include "runtime/drivers/Sensitivity.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace mbs::rt {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The two perturbed coordinates of one variable (offsets a != b, both non-zero, from x).
// `symmetric`: the same step on both sides (a and -b may still differ in their last bits, as
// x + h and x - h round differently; the central formula divides by their true distance).
struct Stencil {
  double a, b;
  bool symmetric;
};

Stencil stencil_for(const StudyVariable& v, double x, double h, bool respect_bounds) {
  double up = h, down = h;
  if (respect_bounds) {
    if (std::isfinite(v.upper)) up = std::clamp(v.upper - x, 0.0, h);
    if (std::isfinite(v.lower)) down = std::clamp(x - v.lower, 0.0, h);
  }
  // the offsets as the rounded points have them, so the difference divides by the true distance
  auto offset = [x](double d) { return (x + d) - x; };
  if (up > 0 && down > 0) return {offset(up), offset(-down), up == down};
  double room = 0;  // at a bound: both points on the inner side
  if (up > 0)
    room = respect_bounds && std::isfinite(v.upper) ? std::min(2 * h, v.upper - x) : 2 * h;
  else if (down > 0)
    room = -(respect_bounds && std::isfinite(v.lower) ? std::min(2 * h, x - v.lower) : 2 * h);
  Stencil s{offset(room / 2), offset(room), false};
  if (s.a == 0 || s.b == 0 || s.a == s.b)
    throw std::invalid_argument("sensitivities: variable '" + v.name +
                                "' has no room for a finite difference inside its bounds at " +
                                std::to_string(x));
  return s;
}

}  // namespace

SensitivityResult compute_sensitivities(const BatchEvaluator& evaluate,
                                        const std::vector<StudyVariable>& variables,
                                        const std::vector<double>& x,
                                        const SensitivityOptions& options,
                                        const EvaluationSink& report) {
  const size_t n = variables.size();
  auto fail = [](const std::string& what) {
    throw std::invalid_argument("sensitivities: " + what);
  };
  if (x.size() != n)
    fail("the point has " + std::to_string(x.size()) + " values for " + std::to_string(n) +
         " variables");
  if (!options.typical.empty() && options.typical.size() != n)
    fail("typical needs one value per variable (" + std::to_string(n) + ")");
  if (!options.steps.empty() && options.steps.size() != n)
    fail("steps needs one value per variable (" + std::to_string(n) + ")");
  if (!(options.relative_step > 0) || !std::isfinite(options.relative_step))
    fail("relative-step must be positive");

  SensitivityResult r;
  r.reference = x;
  std::vector<Stencil> stencils;
  bool need_reference = options.evaluate_reference;
  for (size_t i = 0; i < n; ++i) {
    double typical = options.typical.empty() ? 1.0 : std::abs(options.typical[i]);
    double h = options.steps.empty() ? options.relative_step * std::max(std::abs(x[i]), typical)
                                     : options.steps[i];
    if (!(h > 0) || !std::isfinite(h) || !std::isfinite(x[i]))
      fail("variable '" + variables[i].name + "': the step must be positive and finite");
    r.steps.push_back(h);
    stencils.push_back(stencil_for(variables[i], x[i], h, options.respect_bounds));
    need_reference = need_reference || !stencils.back().symmetric;
  }

  const size_t first = need_reference ? 1 : 0;  // index of the first perturbed point
  if (need_reference) r.points.push_back(x);
  for (size_t i = 0; i < n; ++i)
    for (double d : {stencils[i].a, stencils[i].b}) {
      r.points.push_back(x);
      r.points.back()[i] += d;
    }

  std::vector<std::optional<RunOutcome>> outcomes = evaluate(r.points);
  if (outcomes.size() != r.points.size())
    throw std::logic_error(
        "sensitivities: the batch evaluator returned a wrong number of outcomes");
  for (size_t p = 0; p < outcomes.size(); ++p) {
    if (!outcomes[p]) {
      r.interrupted = true;
      RunOutcome not_run;
      not_run.message = "not run: the study was interrupted";
      r.outcomes.push_back(std::move(not_run));
      continue;
    }
    r.outcomes.push_back(*outcomes[p]);
    if (report) report({p, 0, p >= first, r.points[p], &r.outcomes.back()});
  }

  size_t objectives = 0;
  for (const RunOutcome& o : r.outcomes)
    if (o.status == RunOutcome::Status::Ok) {
      objectives = o.objectives.size();
      break;
    }
  auto value = [&](size_t point, size_t k) {
    return objective_value(r.outcomes[point], static_cast<int>(k));
  };
  if (need_reference)
    for (size_t k = 0; k < objectives; ++k) r.reference_objectives.push_back(value(0, k));

  r.derivative.assign(objectives, std::vector<double>(n, kNaN));
  for (size_t i = 0; i < n; ++i) {
    const double a = stencils[i].a, b = stencils[i].b;
    const size_t pa = first + 2 * i, pb = pa + 1;
    const bool ok_a = r.outcomes[pa].status == RunOutcome::Status::Ok;
    const bool ok_b = r.outcomes[pb].status == RunOutcome::Status::Ok;
    if (!ok_a || !ok_b)
      r.warnings.push_back("d/d " + variables[i].name + ": the run at " + variables[i].name +
                           " = " + std::to_string(x[i] + (ok_a ? b : a)) + " failed (" +
                           r.outcomes[ok_a ? pb : pa].message + ")" +
                           ((ok_a || ok_b) && need_reference ? "; one-sided difference, first order"
                                                             : "; no derivative"));
    for (size_t k = 0; k < objectives; ++k) {
      const double fa = value(pa, k), fb = value(pb, k);
      const double f0 = need_reference ? value(0, k) : kNaN;
      double d = kNaN;
      if (!std::isnan(fa) && !std::isnan(fb)) {
        if (stencils[i].symmetric)
          d = (fa - fb) / (a - b);
        else  // the derivative at 0 of the parabola through (0, f0), (a, fa), (b, fb)
          d = -(1 / a + 1 / b) * f0 - b / (a * (a - b)) * fa - a / (b * (b - a)) * fb;
      } else if (!std::isnan(fa)) {
        d = (fa - f0) / a;
      } else if (!std::isnan(fb)) {
        d = (fb - f0) / b;
      }
      r.derivative[k][i] = d;
    }
  }
  return r;
}

}  // namespace mbs::rt
