// The optimisers and finite-difference sensitivities of runtime/drivers on analytic functions,
// through a fake batch evaluator (no model): known minima with and without active bounds,
// reproducibility of the genetic optimisation with 1 and 2 threads, derivatives against exact
// ones, and failed runs in the middle of a study.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <functional>
#include <mutex>
#include <thread>

#include "runtime/drivers/Genetic.h"
#include "runtime/drivers/Minimize.h"
#include "runtime/drivers/Sensitivity.h"

namespace mbs::rt {
namespace {

using Point = std::vector<double>;
using Function = std::function<std::vector<double>(const Point&)>;  // objectives at a point

RunOutcome outcome_of(const std::vector<double>& objectives) {
  RunOutcome o;
  o.objectives = objectives;
  o.status = RunOutcome::Status::Ok;
  for (double v : objectives)
    if (std::isnan(v)) {
      o.status = RunOutcome::Status::Failed;
      o.message = "the model failed";
    }
  return o;
}

// A batch evaluator over an analytic function on `threads` threads; the points are taken by the
// threads in whatever order they come, as in run_parallel. `fail_run` (>= 0): the run with that
// running number (in batch order) fails.
struct Fake {
  Function f;
  int threads = 1;
  long fail_run = -1;
  size_t runs = 0;

  std::vector<std::optional<RunOutcome>> operator()(const std::vector<Point>& points) {
    std::vector<std::optional<RunOutcome>> out(points.size());
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i; (i = next++) < points.size();) out[i] = outcome_of(f(points[i]));
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (std::thread& t : pool) t.join();
    for (size_t i = 0; i < points.size(); ++i, ++runs)
      if (static_cast<long>(runs) == fail_run) out[i] = outcome_of({std::nan("")});
    return out;
  }
  BatchEvaluator batch() {
    return [this](const std::vector<Point>& p) { return (*this)(p); };
  }
};

double rosenbrock(const Point& x) {
  return 100 * std::pow(x[1] - x[0] * x[0], 2) + std::pow(1 - x[0], 2);
}
// minimum (3, -1) without bounds
double quadratic(const Point& x) {
  return std::pow(x[0] - 3, 2) + 10 * std::pow(x[1] + 1, 2);
}

std::vector<StudyVariable> box(std::vector<std::pair<double, double>> bounds) {
  std::vector<StudyVariable> v;
  for (size_t i = 0; i < bounds.size(); ++i)
    v.push_back({"x" + std::to_string(i), false, bounds[i].first, bounds[i].second});
  return v;
}

// ---- genetic optimisation

TEST(Genetic, FindsTheMinimumOfAQuadratic) {
  Fake fake{[](const Point& x) { return std::vector<double>{quadratic(x)}; }};
  GeneticOptions o;
  o.seed = 1;
  o.generations = 30;  // 0.7^29 ~ 3e-5 of the range left for the last mutation
  GeneticResult r = genetic_optimize(fake.batch(), box({{0, 10}, {-5, 5}}), o);
  ASSERT_EQ(r.best_point.size(), 2u);
  EXPECT_NEAR(r.best_point[0], 3, 1e-3);
  EXPECT_NEAR(r.best_point[1], -1, 1e-3);
  EXPECT_LT(r.best_value, 1e-5);
  EXPECT_EQ(r.evaluations, 100u + 29u * 100u);
  EXPECT_EQ(r.generations, 30);
  EXPECT_EQ(r.seed, 1u);
}

TEST(Genetic, ActiveBoundIsReached) {
  Fake fake{[](const Point& x) { return std::vector<double>{quadratic(x)}; }};
  GeneticOptions o;
  o.seed = 7;
  o.generations = 30;
  GeneticResult r = genetic_optimize(fake.batch(), box({{0, 2}, {-5, 5}}), o);
  EXPECT_NEAR(r.best_point[0], 2, 1e-3);
  EXPECT_LE(r.best_point[0], 2);
  EXPECT_NEAR(r.best_point[1], -1, 1e-3);
}

TEST(Genetic, RosenbrockNearItsMinimum) {
  Fake fake{[](const Point& x) { return std::vector<double>{rosenbrock(x)}; }};
  GeneticOptions o;
  o.seed = 3;
  o.generations = 40;
  o.distance_factor = 0;
  GeneticResult r = genetic_optimize(fake.batch(), box({{-2, 2}, {-1, 3}}), o);
  EXPECT_NEAR(r.best_point[0], 1, 2e-2);
  EXPECT_NEAR(r.best_point[1], 1, 4e-2);
  EXPECT_LT(r.best_value, 1e-3);
}

struct Trace {
  std::vector<Point> points;
  std::vector<int> generations;
  std::mutex m;
  EvaluationSink sink() {
    return [this](const EvaluationRecord& e) {
      std::lock_guard lock(m);
      EXPECT_EQ(e.index, points.size());  // reported in index order
      points.emplace_back(e.point.begin(), e.point.end());
      generations.push_back(e.round);
    };
  }
};

GeneticResult traced_run(uint64_t seed, int threads, Trace& trace) {
  Fake fake{[](const Point& x) { return std::vector<double>{rosenbrock(x)}; }, threads};
  GeneticOptions o;
  o.seed = seed;
  o.generations = 5;
  o.population = 40;
  return genetic_optimize(fake.batch(), box({{-2, 2}, {-1, 3}}), o, trace.sink());
}

TEST(Genetic, SameSeedSamePointsWithOneAndTwoThreads) {
  Trace one, two;
  GeneticResult a = traced_run(42, 1, one);
  GeneticResult b = traced_run(42, 2, two);
  ASSERT_EQ(one.points.size(), 100u + 4u * 40u);
  EXPECT_EQ(one.points, two.points);  // exactly, bit for bit
  EXPECT_EQ(one.generations, two.generations);
  EXPECT_EQ(one.generations.back(), 4);
  EXPECT_EQ(a.best_point, b.best_point);
  EXPECT_EQ(a.best_value, b.best_value);
  EXPECT_EQ(a.best_index, b.best_index);
  EXPECT_EQ(rosenbrock(one.points[a.best_index]), a.best_value);
}

TEST(Genetic, DifferentSeedDifferentPoints) {
  Trace one, two;
  traced_run(42, 1, one);
  traced_run(43, 1, two);
  ASSERT_EQ(one.points.size(), two.points.size());
  size_t equal = 0;
  for (size_t i = 0; i < one.points.size(); ++i) equal += one.points[i] == two.points[i];
  EXPECT_EQ(equal, 0u);
}

TEST(Genetic, UnsetSeedIsReportedAndRepeatsTheStudy) {
  Trace first, again;
  Fake fake{[](const Point& x) { return std::vector<double>{quadratic(x)}; }};
  GeneticOptions o;
  o.generations = 3;
  GeneticResult r = genetic_optimize(fake.batch(), box({{0, 10}, {-5, 5}}), o, first.sink());
  o.seed = r.seed;
  genetic_optimize(fake.batch(), box({{0, 10}, {-5, 5}}), o, again.sink());
  EXPECT_EQ(first.points, again.points);
}

TEST(Genetic, PointsStayInTheBounds) {
  Trace t;
  traced_run(5, 1, t);
  for (const Point& p : t.points) {
    EXPECT_GE(p[0], -2);
    EXPECT_LE(p[0], 2);
    EXPECT_GE(p[1], -1);
    EXPECT_LE(p[1], 3);
  }
}

TEST(Genetic, FailedRunsDoNotStopIt) {
  // every 7th run fails, including ones near the minimum
  Fake fake{[n = std::make_shared<std::atomic<int>>(0)](const Point& x) {
    return std::vector<double>{(*n)++ % 7 == 3 ? std::nan("") : quadratic(x)};
  }};
  GeneticOptions o;
  o.seed = 11;
  o.generations = 30;
  GeneticResult r = genetic_optimize(fake.batch(), box({{0, 10}, {-5, 5}}), o);
  EXPECT_EQ(r.generations, 30);
  EXPECT_GT(r.failed, 300u);
  EXPECT_NEAR(r.best_point[0], 3, 1e-3);
  EXPECT_NEAR(r.best_point[1], -1, 1e-3);
}

TEST(Genetic, ObjectiveIndexChoosesTheObjective) {
  Fake fake{[](const Point& x) {
    return std::vector<double>{-std::pow(x[0] - 3, 2), std::pow(x[0] - 1, 2)};
  }};
  GeneticOptions o;
  o.seed = 2;
  o.generations = 20;
  o.objective = 1;
  GeneticResult r = genetic_optimize(fake.batch(), box({{0, 10}}), o);
  EXPECT_NEAR(r.best_point[0], 1, 1e-3);
}

TEST(Genetic, RejectsMissingBounds) {
  Fake fake{[](const Point& x) { return std::vector<double>{x[0]}; }};
  std::vector<StudyVariable> v{{"k"}};
  EXPECT_THROW(genetic_optimize(fake.batch(), v, {}), std::invalid_argument);
}

// ---- minimisation

MinimizeResult minimize_on(Function f, MinimizeMethod method,
                           std::vector<std::pair<double, double>> bounds, Point start,
                           long fail_run = -1, size_t* fd_runs = nullptr) {
  Fake fake{std::move(f), 1, fail_run};
  MinimizeOptions o;
  o.method = method;
  o.start = std::move(start);
  o.x_rel_tol = 1e-10;
  o.max_evaluations = 20000;
  size_t fd = 0;
  MinimizeResult r = minimize(fake.batch(), box(std::move(bounds)), o,
                              [&](const EvaluationRecord& e) { fd += e.finite_difference; });
  EXPECT_EQ(r.runs, fake.runs);
  if (fd_runs) *fd_runs = fd;
  return r;
}

class Methods : public testing::TestWithParam<MinimizeMethod> {};

TEST_P(Methods, Rosenbrock) {
  MinimizeResult r = minimize_on([](const Point& x) { return std::vector<double>{rosenbrock(x)}; },
                                 GetParam(), {{-2, 2}, {-1, 3}}, {-1.2, 1});
  ASSERT_EQ(r.best_point.size(), 2u) << r.status;
  EXPECT_NEAR(r.best_point[0], 1, 1e-4) << r.status;
  EXPECT_NEAR(r.best_point[1], 1, 2e-4) << r.status;
  EXPECT_LT(r.best_value, 1e-8) << r.status;
}

TEST_P(Methods, QuadraticInsideTheBounds) {
  size_t fd = 0;
  MinimizeResult r = minimize_on([](const Point& x) { return std::vector<double>{quadratic(x)}; },
                                 GetParam(), {{0, 5}, {-5, 5}}, {1, 2}, -1, &fd);
  EXPECT_NEAR(r.best_point[0], 3, 1e-5) << r.status;
  EXPECT_NEAR(r.best_point[1], -1, 1e-5) << r.status;
  // finite-difference runs only for gradient-based methods, 2 per variable and evaluation
  // (SLSQP's line search asks for values without the gradient)
  if (minimize_method_uses_gradient(GetParam())) {
    EXPECT_GT(fd, 0u);
    EXPECT_EQ(fd % 4, 0u);
    EXPECT_LE(fd, 4u * static_cast<size_t>(r.evaluations));
  } else
    EXPECT_EQ(fd, 0u);
}

TEST_P(Methods, QuadraticWithAnActiveBound) {
  MinimizeResult r = minimize_on([](const Point& x) { return std::vector<double>{quadratic(x)}; },
                                 GetParam(), {{0, 2}, {-5, 5}}, {1, 2});
  EXPECT_NEAR(r.best_point[0], 2, 1e-6) << r.status;
  EXPECT_LE(r.best_point[0], 2);
  EXPECT_NEAR(r.best_point[1], -1, 1e-5) << r.status;
}

TEST_P(Methods, FailedRunInTheMiddleDoesNotStopIt) {
  for (long fail_run : {5L, 6L}) {  // for gradient methods: a center and a perturbed point
    MinimizeResult r = minimize_on([](const Point& x) { return std::vector<double>{quadratic(x)}; },
                                   GetParam(), {{0, 5}, {-5, 5}}, {1, 2}, fail_run);
    EXPECT_EQ(r.failed, 1u) << r.status;
    EXPECT_NEAR(r.best_point[0], 3, 1e-5) << r.status;
    EXPECT_NEAR(r.best_point[1], -1, 1e-5) << r.status;
    EXPECT_FALSE(r.interrupted);
  }
}

INSTANTIATE_TEST_SUITE_P(Minimize, Methods,
                         testing::Values(MinimizeMethod::NelderMead, MinimizeMethod::Bobyqa,
                                         MinimizeMethod::Cobyla, MinimizeMethod::Lbfgs,
                                         MinimizeMethod::Slsqp),
                         [](const auto& param_info) {
                           std::string s(minimize_method_name(param_info.param));
                           std::erase(s, '-');
                           return s;
                         });

TEST(Minimize, FailedStartStopsWithAMessage) {
  MinimizeResult r = minimize_on([](const Point&) { return std::vector<double>{std::nan("")}; },
                                 MinimizeMethod::NelderMead, {{0, 5}, {-5, 5}}, {1, 2});
  EXPECT_TRUE(r.best_point.empty());
  EXPECT_EQ(r.runs, 1u);
  EXPECT_NE(r.status.find("start point failed"), std::string::npos) << r.status;
}

TEST(Minimize, DefaultStartIsTheMiddleOfTheBounds) {
  Fake fake{[](const Point& x) { return std::vector<double>{quadratic(x)}; }};
  Point first;
  MinimizeResult r =
      minimize(fake.batch(), box({{0, 10}, {-4, 2}}), {}, [&](const EvaluationRecord& e) {
        if (e.index == 0) first.assign(e.point.begin(), e.point.end());
      });
  EXPECT_EQ(first, (Point{5, -1}));
  EXPECT_NEAR(r.best_point[0], 3, 1e-3);  // default x_rel_tol 1e-4
  EXPECT_LE(r.evaluations, 400);          // 200 per variable
}

TEST(Minimize, GradientFunctionReplacesFiniteDifferences) {
  Fake fake{[](const Point& x) { return std::vector<double>{quadratic(x)}; }};
  int calls = 0;
  GradientFunction exact = [&](const Point& x) {
    ++calls;
    return PointGradient{outcome_of({quadratic(x)}), {2 * (x[0] - 3), 20 * (x[1] + 1)}};
  };
  MinimizeOptions o;
  o.method = MinimizeMethod::Lbfgs;
  o.start = {1, 2};
  MinimizeResult r = minimize(fake.batch(), box({{0, 5}, {-5, 5}}), o, nullptr, exact);
  EXPECT_GT(calls, 0);
  EXPECT_EQ(fake.runs, 0u);  // every value came from the gradient function
  EXPECT_NEAR(r.best_point[0], 3, 1e-6);
  EXPECT_NEAR(r.best_point[1], -1, 1e-6);
}

TEST(Minimize, MethodNames) {
  for (auto m : {MinimizeMethod::NelderMead, MinimizeMethod::Bobyqa, MinimizeMethod::Cobyla,
                 MinimizeMethod::Lbfgs, MinimizeMethod::Slsqp})
    EXPECT_EQ(minimize_method_from_name(minimize_method_name(m)), m);
  EXPECT_FALSE(minimize_method_from_name("newton"));
}

TEST(Minimize, InterruptStops) {
  int batches = 0;
  BatchEvaluator batch = [&](const std::vector<Point>& p) {
    std::vector<std::optional<RunOutcome>> out(p.size());
    if (++batches < 10)
      for (size_t i = 0; i < p.size(); ++i) out[i] = outcome_of({quadratic(p[i])});
    return out;
  };
  MinimizeOptions o;
  o.start = {1, 2};
  MinimizeResult r = minimize(batch, box({{0, 5}, {-5, 5}}), o);
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.runs, 9u);
  EXPECT_NE(r.status.find("interrupted"), std::string::npos);
}

// ---- sensitivities

// f(x) = (sin x0 * exp(x1), x0^3 x1) and its derivatives
std::vector<double> smooth(const Point& x) {
  return {std::sin(x[0]) * std::exp(x[1]), x[0] * x[0] * x[0] * x[1]};
}
std::vector<std::vector<double>> smooth_derivative(const Point& x) {
  return {{std::cos(x[0]) * std::exp(x[1]), std::sin(x[0]) * std::exp(x[1])},
          {3 * x[0] * x[0] * x[1], x[0] * x[0] * x[0]}};
}

double max_error(const SensitivityResult& r, const Point& x) {
  auto exact = smooth_derivative(x);
  double e = 0;
  for (size_t k = 0; k < 2; ++k)
    for (size_t i = 0; i < 2; ++i) e = std::max(e, std::abs(r.derivative[k][i] - exact[k][i]));
  return e;
}

TEST(Sensitivity, DefaultStepsAreAccurate) {
  Fake fake{smooth, 2};
  Point x{0.7, -0.3};
  SensitivityResult r = compute_sensitivities(fake.batch(), box({{-9, 9}, {-9, 9}}), x);
  ASSERT_EQ(r.derivative.size(), 2u);
  ASSERT_EQ(r.points.size(), 5u);  // the reference and 2n perturbed points, one batch
  EXPECT_EQ(r.points[0], x);
  EXPECT_EQ(r.reference_objectives, smooth(x));
  EXPECT_NEAR(r.steps[0], std::cbrt(2.220446049250313e-16) * 1.0, 1e-20);  // |x| < typical 1
  EXPECT_LT(max_error(r, x), 1e-9);
  EXPECT_TRUE(r.warnings.empty());
}

TEST(Sensitivity, ErrorIsSecondOrderInTheStep) {
  Fake fake{smooth};
  Point x{0.7, -0.3};
  std::vector<double> errors;
  for (double h : {1e-1, 5e-2, 2.5e-2}) {
    SensitivityOptions o;
    o.steps = {h, h};
    errors.push_back(
        max_error(compute_sensitivities(fake.batch(), box({{-9, 9}, {-9, 9}}), x, o), x));
  }
  // halving h divides the error by 4
  EXPECT_NEAR(errors[0] / errors[1], 4, 0.2);
  EXPECT_NEAR(errors[1] / errors[2], 4, 0.2);
}

TEST(Sensitivity, SecondOrderAtAndNearABound) {
  // d/dx1 of sin(x0) exp(x1): its third derivative is f itself, so the three-point error at the
  // nodes 0, a, b is -f a b / 6 to leading order when the formula is second order
  Fake fake{smooth};
  const Point x{-0.3, 0.7};
  for (double lower : {0.7, 0.69}) {  // at the bound; 0.01 from it
    for (double h : {1e-1, 5e-2}) {
      SensitivityOptions o;
      o.steps = {h / 5, h};
      o.evaluate_reference = false;  // needed anyway: evaluated
      SensitivityResult r = compute_sensitivities(fake.batch(), box({{-9, 9}, {lower, 9}}), x, o);
      ASSERT_EQ(r.points.size(), 5u);
      for (const Point& p : r.points) EXPECT_GE(p[1], lower);
      const double a = r.points[3][1] - x[1], b = r.points[4][1] - x[1];
      EXPECT_NE(a, -b);  // really unequal steps
      const double error = r.derivative[0][1] - smooth_derivative(x)[0][1];
      const double expected = -smooth(x)[0] * a * b / 6;
      EXPECT_NEAR(error, expected, 0.2 * std::abs(expected)) << lower << " " << h;
    }
  }
}

TEST(Sensitivity, WithoutReferenceOnly2nPoints) {
  Fake fake{smooth};
  SensitivityOptions o;
  o.evaluate_reference = false;
  SensitivityResult r = compute_sensitivities(fake.batch(), box({{-9, 9}, {-9, 9}}), {2, 3}, o);
  EXPECT_EQ(r.points.size(), 4u);
  EXPECT_TRUE(r.reference_objectives.empty());
  // h = eps^(1/3) * |x_i| for |x_i| > 1
  EXPECT_DOUBLE_EQ(r.steps[1], 3 * o.relative_step);
  EXPECT_LT(max_error(r, {2, 3}), 1e-6 * 3 * 8);
}

TEST(Sensitivity, FailedPerturbedRunFallsBackToOneSided) {
  Fake fake{smooth, 1, 3};  // run 3 = x - h e_1
  Point x{0.7, -0.3};
  SensitivityOptions o;
  o.steps = {1e-3, 1e-3};
  SensitivityResult r = compute_sensitivities(fake.batch(), box({{-9, 9}, {-9, 9}}), x, o);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("one-sided"), std::string::npos) << r.warnings[0];
  auto exact = smooth_derivative(x);
  // variable 0 central (error ~ h^2), variable 1 one-sided (error ~ h)
  EXPECT_NEAR(r.derivative[0][0], exact[0][0], 1e-6);
  EXPECT_NEAR(r.derivative[0][1], exact[0][1], 1e-3);
  EXPECT_GT(std::abs(r.derivative[0][1] - exact[0][1]), 1e-6);  // really first order
}

TEST(Sensitivity, RejectsWrongSizes) {
  Fake fake{smooth};
  EXPECT_THROW(compute_sensitivities(fake.batch(), box({{-9, 9}, {-9, 9}}), {1}),
               std::invalid_argument);
  SensitivityOptions o;
  o.steps = {1};
  EXPECT_THROW(compute_sensitivities(fake.batch(), box({{-9, 9}, {-9, 9}}), {1, 2}, o),
               std::invalid_argument);
}

}  // namespace
}  // namespace mbs::rt
