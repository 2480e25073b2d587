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
#include "runtime/fmi/Unit.h"
#include "runtime/fmi/Variables.h"
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

// The same steps as an FMU's co-simulation takes them (rt::fmi::Unit, under fmi2DoStep /
// fmi3DoStep): one communication step per solver step, the outputs read after each (issue 13:
// doStep throughput within 20 % of the solver's own stepping).
void BM_DoStepCompiledPendulum(benchmark::State& state) {
  auto model = compile_pendulum();
  if (!model) {
    state.SkipWithError("compile failed");
    return;
  }
  auto table = std::make_shared<mbs::rt::fmi::VariableTable>();
  if (!mbs::rt::fmi::fmu_variables(*model, {"x", "y"}, *table).empty()) {
    state.SkipWithError("variables failed");
    return;
  }
  mbs::rt::SolverOptions o;
  o.h = 1e-3;
  mbs::rt::fmi::Unit unit(model, table, o, mbs::rt::fmi::Unit::Kind::CoSimulation);
  if (unit.exit_initialization() != mbs::rt::fmi::Status::Ok) {
    state.SkipWithError("initialize failed");
    return;
  }
  const uint32_t vrs[] = {static_cast<uint32_t>(table->vars[table->outputs[0]].vr),
                          static_cast<uint32_t>(table->vars[table->outputs[1]].vr)};
  double values[2];
  double t = unit.time();
  for (auto _ : state) {
    if (unit.do_step(t, 1e-3) != mbs::rt::fmi::Status::Ok ||
        unit.get_float64(vrs, values) != mbs::rt::fmi::Status::Ok) {
      state.SkipWithError("doStep failed");
      break;
    }
    t = unit.time();
    benchmark::DoNotOptimize(values);
  }
  state.counters["steps/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_DoStepCompiledPendulum);

}  // namespace

BENCHMARK_MAIN();
