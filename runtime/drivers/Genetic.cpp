#include "runtime/drivers/Genetic.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>

namespace mbs::rt {
namespace {

// Random numbers whose sequence is fixed by the seed on every platform: std::mt19937_64 is
// specified exactly, the distributions of <random> are not, so the two draws used here are
// written out.
class Random {
 public:
  explicit Random(uint64_t seed) : engine_(seed) {}
  // uniform in [0, 1), 53 random bits
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  double uniform(double a, double b) { return a + (b - a) * uniform(); }
  // uniform in {0, ..., n-1}
  size_t index(size_t n) {
    return std::min(n - 1, static_cast<size_t>(uniform() * static_cast<double>(n)));
  }

 private:
  std::mt19937_64 engine_;
};

struct Individual {
  std::vector<double> x;
  double value;  // NaN: failed
  size_t index;  // EvaluationRecord::index
};

void check_options(const std::vector<StudyVariable>& variables, const GeneticOptions& o) {
  auto fail = [](const std::string& what) {
    throw std::invalid_argument("genetic optimisation: " + what);
  };
  if (variables.empty()) fail("no variables to optimise");
  for (const StudyVariable& v : variables)
    if (!std::isfinite(v.lower) || !std::isfinite(v.upper) || !(v.lower < v.upper))
      fail("variable '" + v.name + "' needs finite bounds with lower < upper");
  if (o.initial_population < 1) fail("initial-population must be at least 1");
  if (o.population < 1) fail("population must be at least 1");
  if (o.generations < 1) fail("generations must be at least 1");
  if (o.survivors < 1) fail("survivors must be at least 1");
  if (!(o.crossover_amount >= 0 && o.crossover_amount <= 1))
    fail("crossover-amount must lie in [0, 1]");
  if (!(o.range_reduction > 0 && o.range_reduction <= 1))
    fail("range-reduction must lie in (0, 1]");
  if (!(o.distance_factor >= 0 && o.distance_factor < 1))
    fail("distance-factor must lie in [0, 1)");
  if (o.objective < 0) fail("objective index must not be negative");
}

// Distance relative to the ranges, independent of the number of variables.
double relative_distance(const std::vector<double>& a, const std::vector<double>& b,
                         const std::vector<double>& range) {
  double s = 0;
  for (size_t j = 0; j < a.size(); ++j) {
    double d = (a[j] - b[j]) / range[j];
    s += d * d;
  }
  return std::sqrt(s / static_cast<double>(a.size()));
}

// The best of `candidates` (failed ones never), ordered by value, ties by evaluation index;
// with distance_factor > 0 each survivor is farther than that from every survivor before it.
std::vector<Individual> select_survivors(std::vector<Individual> candidates,
                                         const GeneticOptions& o,
                                         const std::vector<double>& range) {
  std::erase_if(candidates, [](const Individual& c) { return std::isnan(c.value); });
  std::sort(candidates.begin(), candidates.end(), [](const Individual& a, const Individual& b) {
    return a.value != b.value ? a.value < b.value : a.index < b.index;
  });
  std::vector<Individual> survivors;
  for (Individual& c : candidates) {
    if (survivors.size() >= static_cast<size_t>(o.survivors)) break;
    bool far = true;
    if (o.distance_factor > 0)
      for (const Individual& s : survivors)
        if (relative_distance(c.x, s.x, range) <= o.distance_factor) {
          far = false;
          break;
        }
    if (far) survivors.push_back(std::move(c));
  }
  return survivors;
}

}  // namespace

GeneticResult genetic_optimize(const BatchEvaluator& evaluate,
                               const std::vector<StudyVariable>& variables,
                               const GeneticOptions& options, const EvaluationSink& report) {
  check_options(variables, options);
  const size_t n = variables.size();
  std::vector<double> lower(n), upper(n), range(n);
  for (size_t j = 0; j < n; ++j) {
    lower[j] = variables[j].lower;
    upper[j] = variables[j].upper;
    range[j] = upper[j] - lower[j];
  }

  GeneticResult result;
  result.seed =
      options.seed ? *options.seed
                   : (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  Random random(result.seed);

  auto uniform_in_bounds = [&](size_t count) {
    std::vector<std::vector<double>> points(count, std::vector<double>(n));
    for (auto& x : points)
      for (size_t j = 0; j < n; ++j) x[j] = random.uniform(lower[j], upper[j]);
    return points;
  };

  std::vector<std::vector<double>> points =
      uniform_in_bounds(static_cast<size_t>(options.initial_population));
  std::vector<Individual> survivors;
  for (int g = 0; g < options.generations; ++g) {
    std::vector<std::optional<RunOutcome>> outcomes = evaluate(points);
    if (outcomes.size() != points.size())
      throw std::logic_error("genetic optimisation: the batch evaluator returned " +
                             std::to_string(outcomes.size()) + " outcomes for " +
                             std::to_string(points.size()) + " points");
    std::vector<Individual> candidates;
    for (size_t i = 0; i < points.size(); ++i) {
      if (!outcomes[i]) {
        result.interrupted = true;
        continue;
      }
      Individual c{points[i], objective_value(*outcomes[i], options.objective),
                   result.evaluations++};
      if (report) report({c.index, g, false, c.x, &*outcomes[i]});
      if (std::isnan(c.value))
        ++result.failed;
      else if (result.best_point.empty() || c.value < result.best_value) {
        result.best_point = c.x;
        result.best_value = c.value;
        result.best_index = c.index;
      }
      candidates.push_back(std::move(c));
    }
    result.generations = g + 1;
    if (result.interrupted || g + 1 == options.generations) break;

    for (Individual& s : survivors) candidates.push_back(std::move(s));
    survivors = select_survivors(std::move(candidates), options, range);

    // the next generation, drawn entirely before it is evaluated
    const size_t population = static_cast<size_t>(options.population);
    if (survivors.empty()) {  // every run failed so far: start afresh
      points = uniform_in_bounds(population);
      continue;
    }
    const double relative_range = std::pow(options.range_reduction, g + 1);
    points.clear();
    auto mutate = [&](std::vector<double> x) {
      for (size_t j = 0; j < n; ++j) {
        double half = 0.5 * relative_range * range[j];
        x[j] = random.uniform(std::max(lower[j], x[j] - half), std::min(upper[j], x[j] + half));
      }
      return x;
    };
    while (points.size() < population) {
      for (const Individual& s : survivors) {
        if (points.size() >= population) break;
        if (random.uniform() < options.crossover_amount) {
          std::vector<double> a = survivors[random.index(survivors.size())].x;
          std::vector<double> b = survivors[random.index(survivors.size())].x;
          for (size_t j = 0; j < n; ++j)
            if (random.uniform() < 0.5) std::swap(a[j], b[j]);
          points.push_back(mutate(std::move(a)));
          // the second child is drawn in any case, so the random sequence does not depend
          // on where the population ends
          std::vector<double> second = mutate(std::move(b));
          if (points.size() < population) points.push_back(std::move(second));
        } else {
          points.push_back(mutate(s.x));
        }
      }
    }
  }
  return result;
}

}  // namespace mbs::rt
