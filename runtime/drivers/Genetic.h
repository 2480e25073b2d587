// Genetic optimisation (seed 002, "Genetic optimization"): minimise one objective over a box of
// study variables by generations of randomly generated individuals.
//
//   generation 0: `initial_population` individuals uniformly distributed in the bounds;
//   then for every further generation g = 1, 2, ...:
//     selection: the `survivors` best individuals of the last generation and the previous
//       survivors (failed runs never survive); with distance_factor > 0 an individual survives
//       only if its distance sqrt(mean_j ((x_j - y_j) / range_j)^2) to every survivor chosen
//       before it exceeds distance_factor, so several local minima are searched at once;
//     crossover: for each survivor in turn, with probability crossover_amount two randomly
//       selected survivors are the parents of two children that take each gene from one parent or
//       the other with equal probability (uniform crossover); otherwise the survivor is the one
//       parent of one child;
//     mutation: every gene of a child is drawn uniformly from the interval of width
//       range_reduction^g * range around it, clipped to the bounds;
//   until `population` children are made. Survivors are not evaluated again.
//
// Reproducible: all random numbers come from one std::mt19937_64 seeded with `seed`, and a
// generation's points are all drawn before the generation is evaluated as one batch, so the same
// seed gives the same points and the same result with any number of threads.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "runtime/drivers/Batch.h"

namespace mbs::rt {

// Each field is one command-line option of the same name (with '-' for '_'). Defaults are those
// of the seed's GeneticOptimization (populationSize 100, numberOfGenerations 10, elitistRatio
// 0.1, i.e. 10 survivors, crossoverAmount 0.5, rangeReductionFactor 0.7, distanceFactor 0.1).
struct GeneticOptions {
  int initial_population = 100;  // random individuals of generation 0 (initialPopulationSize)
  int population = 100;          // children per later generation (populationSize)
  int generations = 10;          // generations, the initial one included (numberOfGenerations)
  int survivors = 10;            // best individuals kept per generation (elitistRatio * population)
  double crossover_amount = 0.5;  // share of the children made by crossover of two parents
  double range_reduction = 0.7;   // mutation range of generation g: range_reduction^g * range
  double distance_factor = 0.1;   // least relative distance between survivors; 0: none
  // The random seed (randomizerInitialization); none: drawn from std::random_device and
  // reported in GeneticResult::seed, so that any study can be repeated.
  std::optional<uint64_t> seed;
  int objective = 0;  // index of the objective to minimise
};

struct GeneticResult {
  std::vector<double> best_point;  // empty when no evaluation succeeded
  double best_value = std::numeric_limits<double>::quiet_NaN();
  size_t best_index = 0;  // EvaluationRecord::index of the best run
  size_t evaluations = 0;
  size_t failed = 0;    // evaluations whose objective was NaN (failed runs included)
  int generations = 0;  // generations evaluated
  uint64_t seed = 0;    // the seed used
  bool interrupted = false;
};

// Minimises objective `options.objective` over `variables`, which must all have finite bounds
// with lower < upper. `report` (optional) is called for every evaluation in index order as soon
// as its generation is done. Throws std::invalid_argument for invalid options or bounds.
GeneticResult genetic_optimize(const BatchEvaluator& evaluate,
                               const std::vector<StudyVariable>& variables,
                               const GeneticOptions& options,
                               const EvaluationSink& report = nullptr);

}  // namespace mbs::rt
