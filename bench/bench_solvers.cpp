// Solver benchmarks: steps per second of every explicit Runge-Kutta method and of
// generalized-alpha on a 10-DOF unconstrained spring chain (10 masses, 11 springs between two
// walls; hand-written kernels tests/unit/runtime_models.h, namespace chain10), output off.
//
//   build/release/bench/bench_solvers
//   build/release/bench/bench_solvers --benchmark_filter=Dopri5
//
// Fixed-step methods and gen-alpha run at h = 1e-3. The adaptive pairs (ode23, dopri5) run with
// their default tolerances (rtol = 1e-8, atol = 1e-10) and an output grid of 1e-2; "steps/s"
// counts their accepted steps, "grid/s" the output grid points. "evals/step" is residual
// evaluations (= factorizations) per accepted step; "err" the error of the first normal mode
// at the end of the benchmarked interval, relative to its amplitude.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "runtime/solvers/Integrator.h"
#include "tests/unit/runtime_models.h"

namespace {

using namespace mbs::rt;
namespace tm = mbs::rt::testmodels;

void run_chain(benchmark::State& state, SolverKind kind, double h) {
  const CompiledModel model = tm::chain10::make(1.0, 100.0);
  SolverOptions o;
  o.solver = kind;
  o.h = h;
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
  const double steps = static_cast<double>(s.steps);
  state.counters["steps/s"] = benchmark::Counter(steps, benchmark::Counter::kIsRate);
  state.counters["grid/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["evals/step"] = static_cast<double>(s.residual_evaluations) / std::max(1.0, steps);
  state.counters["rejected"] = static_cast<double>(s.rejected_steps);
  // First normal mode: q_i = shape_i cos(w1 t).
  const double t = solver->time(), w1 = tm::chain10::omega1(1.0, 100.0);
  double err = 0.0;
  for (int32_t i = 0; i < tm::chain10::N; ++i) {
    const double exact = tm::chain10::mode_shape(i) * std::cos(w1 * t);
    err = std::max(err, std::fabs(solver->symbols()[tm::chain10::L.q(i)] - exact));
  }
  state.counters["err"] = err;
}

void BM_Chain10(benchmark::State& state) {
  const auto kind = static_cast<SolverKind>(state.range(0));
  state.SetLabel(std::string(solver_name(kind)));
  run_chain(state, kind, 1e-3);
}
void BM_Chain10Adaptive(benchmark::State& state) {
  const auto kind = static_cast<SolverKind>(state.range(0));
  state.SetLabel(std::string(solver_name(kind)));
  run_chain(state, kind, 1e-2);
}
BENCHMARK(BM_Chain10)
    ->ArgName("solver")
    ->Arg(static_cast<int>(SolverKind::GenAlpha))
    ->Arg(static_cast<int>(SolverKind::Euler))
    ->Arg(static_cast<int>(SolverKind::Midpoint))
    ->Arg(static_cast<int>(SolverKind::Rk33))
    ->Arg(static_cast<int>(SolverKind::Rk44))
    ->Arg(static_cast<int>(SolverKind::Rk6))
    // 100 s of simulated time for every method (euler would overflow on long runs).
    ->Iterations(100000);
BENCHMARK(BM_Chain10Adaptive)
    ->ArgName("solver")
    ->Arg(static_cast<int>(SolverKind::Ode23))
    ->Arg(static_cast<int>(SolverKind::Dopri5))
    ->Iterations(10000);

}  // namespace

BENCHMARK_MAIN();
