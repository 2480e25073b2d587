// The pendulum of examples/pendulum.mbs as users run it: compiled from source by the whole
// pipeline (parse, flatten, DAE, kernels, LLVM JIT), then stepped by generalized-alpha with
// output off. Issue targets: kernels ready in under 150 ms from process start (see
// bench/startup.sh for the whole process), at least 1,000,000 steps per second at h = 1e-3.
//
//   build/release/bench/bench_pendulum
#include <benchmark/benchmark.h>

#include <sstream>
#include <string>

#include "compiler/driver/Compile.h"
#include "runtime/solvers/Integrator.h"

namespace {

std::shared_ptr<const mbs::rt::CompiledModel> compile_pendulum() {
  mbs::CompileOptions o;
  o.file = std::string(MBS_SOURCE_DIR) + "/examples/pendulum.mbs";
  o.cache_dir = "off";  // measure the compilation, not the object cache
  std::ostringstream emit, diag;
  return mbs::compile(o, emit, diag).model;
}

// source text to native kernels, in process (the driver's whole pipeline)
void BM_CompilePendulum(benchmark::State& state) {
  for (auto _ : state) {
    auto m = compile_pendulum();
    if (!m) state.SkipWithError("compile failed");
    benchmark::DoNotOptimize(m);
  }
}
BENCHMARK(BM_CompilePendulum)->Unit(benchmark::kMillisecond);

void BM_GenAlphaCompiledPendulum(benchmark::State& state) {
  auto model = compile_pendulum();
  if (!model) {
    state.SkipWithError("compile failed");
    return;
  }
  mbs::rt::SolverOptions o;
  o.h = 1e-3;
  o.t_end = 1e9;  // the benchmark decides how many steps
  auto solver = mbs::rt::make_integrator(model, o);
  if (solver->initialize() != mbs::rt::SolveStatus::Ok) state.SkipWithError("initialize failed");
  for (auto _ : state) {
    if (solver->step() != mbs::rt::SolveStatus::Ok) {
      state.SkipWithError("step failed");
      break;
    }
  }
  const auto& s = solver->statistics();
  state.counters["steps/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["newton/step"] =
      double(s.newton_iterations) / double(std::max<int64_t>(1, s.steps));
  state.counters["factor/step"] = double(s.factorizations) / double(std::max<int64_t>(1, s.steps));
}
BENCHMARK(BM_GenAlphaCompiledPendulum);

}  // namespace

BENCHMARK_MAIN();
