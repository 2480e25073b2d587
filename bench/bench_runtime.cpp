// Runtime benchmarks: generalized-alpha steps per second on the hand-written Cartesian pendulum
// (index 3, 3 unknowns) with output off, RK4 on an oscillator, and the dense-vs-KLU crossover of
// the linear solver that sets LinearSolver::kDenseMaxSize.
//
//   build/release/bench/bench_runtime
//   build/release/bench/bench_runtime --benchmark_filter=LinearSolver
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "runtime/linalg/LinearSolver.h"
#include "runtime/solvers/Integrator.h"
#include "tests/unit/runtime_models.h"

namespace {

using namespace mbs::rt;
namespace tm = mbs::rt::testmodels;

void run_steps(benchmark::State& state, const CompiledModel& model, SolverOptions o) {
  o.t_end = 1e9;  // never reached: the benchmark decides how many steps
  auto solver = make_integrator(model, o);
  if (solver->initialize() != SolveStatus::Ok) state.SkipWithError("initialize failed");
  for (auto _ : state) {
    if (solver->step() != SolveStatus::Ok) {
      state.SkipWithError("step failed");
      break;
    }
  }
  const Statistics& s = solver->statistics();
  state.SetItemsProcessed(state.iterations());
  state.counters["steps/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["newton/step"] =
      double(s.newton_iterations) / double(std::max<int64_t>(1, s.steps));
  state.counters["factor/step"] = double(s.factorizations) / double(std::max<int64_t>(1, s.steps));
}

void BM_GenAlphaPendulum(benchmark::State& state) {
  SolverOptions o;
  o.h = 1e-3;
  run_steps(state, tm::pendulum::make(0.5), o);
}
BENCHMARK(BM_GenAlphaPendulum);

void BM_GenAlphaOscillator(benchmark::State& state) {
  SolverOptions o;
  run_steps(state, tm::msd::make(1.0, 0.1, 4.0), o);
}
BENCHMARK(BM_GenAlphaOscillator);

void BM_Rk4Oscillator(benchmark::State& state) {
  SolverOptions o;
  o.solver = SolverKind::Rk4;
  run_steps(state, tm::msd::make(1.0, 0.1, 4.0), o);
}
BENCHMARK(BM_Rk4Oscillator);

// A pattern like a multibody Newton matrix: a chain of bodies (tridiagonal blocks) with a few
// loop closures coupling distant unknowns; diagonally dominant so any pivot order works.
struct SparseSystem {
  int32_t n;
  std::vector<int32_t> row, col;
  std::vector<double> values, rhs;
};

SparseSystem make_system(int32_t n) {
  std::vector<std::vector<char>> a(n, std::vector<char>(n, 0));
  for (int32_t i = 0; i < n; ++i) {
    a[i][i] = 1;
    for (int32_t d : {1, 2}) {
      if (i + d < n) a[i][i + d] = a[i + d][i] = 1;
    }
    if (i % 7 == 0 && i + 11 < n) a[i][i + 11] = a[i + 11][i] = 1;  // closures
  }
  SparseSystem s{n, {}, {}, {}, {}};
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int32_t j = 0; j < n; ++j) {
    for (int32_t i = 0; i < n; ++i) {
      if (!a[i][j]) continue;
      s.row.push_back(i);
      s.col.push_back(j);
      s.values.push_back(i == j ? 10.0 + u(rng) : u(rng));
    }
  }
  s.rhs.assign(n, 1.0);
  return s;
}

void BM_LinearSolver(benchmark::State& state, LinearSolverKind kind) {
  const SparseSystem s = make_system(static_cast<int32_t>(state.range(0)));
  LinearSolver solver;
  solver.setup(s.n, s.row, s.col, kind);
  std::vector<double> b = s.rhs;
  std::vector<double> values = s.values;
  solver.factor(values.data());  // the first (analysing) factorization is not timed
  for (auto _ : state) {
    values[0] += 1e-12;  // a new matrix every time
    solver.factor(values.data());
    b = s.rhs;
    solver.solve(b.data());
    benchmark::DoNotOptimize(b.data());
  }
  state.counters["nnz"] = static_cast<double>(s.row.size());
}
BENCHMARK_CAPTURE(BM_LinearSolver, Dense, LinearSolverKind::Dense)
    ->Arg(3)
    ->Arg(6)
    ->Arg(10)
    ->Arg(15)
    ->Arg(20)
    ->Arg(30)
    ->Arg(50)
    ->Arg(100);
BENCHMARK_CAPTURE(BM_LinearSolver, Klu, LinearSolverKind::Klu)
    ->Arg(3)
    ->Arg(6)
    ->Arg(10)
    ->Arg(15)
    ->Arg(20)
    ->Arg(30)
    ->Arg(50)
    ->Arg(100);

}  // namespace

BENCHMARK_MAIN();
