// Inverse dynamics of the example manipulator (examples/mechanics/hybrid_manipulator.mbs, seven
// active joints, four loops, one of them redundant): the whole 30 s trajectory sampled every
// 1 ms, motion reconstruction plus the uniqueness analysis (scaled SVD) at every sample, on one
// core, without writing a file. Issue 5's target: under one second for the 30,001 samples.
//
//   build/release/bench/bench_invdyn --benchmark_repetitions=3
// (the second benchmark: the body-wise balance, --balance bodies, on 601 samples)
#include <benchmark/benchmark.h>

#include <sstream>
#include <string>

#include "compiler/driver/Compile.h"
#include "runtime/invdyn/InverseDynamics.h"

namespace {

std::shared_ptr<const mbs::rt::CompiledModel> compile_manipulator() {
  mbs::CompileOptions o;
  o.file = std::string(MBS_SOURCE_DIR) + "/examples/mechanics/hybrid_manipulator.mbs";
  o.inverse_dynamics = true;
  std::ostringstream emit, diag;
  return mbs::compile(o, emit, diag).model;
}

void BM_ManipulatorInverseDynamics30s(benchmark::State& state) {
  auto model = compile_manipulator();
  if (!model) {
    state.SkipWithError("compile failed");
    return;
  }
  mbs::rt::InverseDynamicsOptions o;
  int64_t unique = 0;
  for (auto _ : state) {
    mbs::rt::InverseDynamics id(model, o);
    mbs::rt::InverseSample s;
    for (int k = 0; k <= 30000; ++k) {
      if (!id.sample(k * 1e-3, s)) {
        state.SkipWithError(id.message().c_str());
        return;
      }
    }
    unique = 0;
    for (uint8_t u : s.unique) unique += u;
    benchmark::DoNotOptimize(s.value.data());
  }
  state.counters["samples"] = 30001;
  state.counters["outputs"] =
      static_cast<double>(model ? mbs::rt::InverseDynamics(model, o).outputs().size() : 0);
  state.counters["unique_at_end"] = static_cast<double>(unique);
}
BENCHMARK(BM_ManipulatorInverseDynamics30s)->Unit(benchmark::kMillisecond)->Iterations(1);

// The same trajectory with the body-wise balance (--balance bodies: 84 x 97, one block), every
// 50 ms: 601 samples. The cross-check's cost per sample.
void BM_ManipulatorBodyWiseBalance601(benchmark::State& state) {
  auto model = compile_manipulator();
  if (!model) {
    state.SkipWithError("compile failed");
    return;
  }
  mbs::rt::InverseDynamicsOptions o;
  o.balance = mbs::rt::BalanceForm::Bodies;
  for (auto _ : state) {
    mbs::rt::InverseDynamics id(model, o);
    mbs::rt::InverseSample s;
    for (int k = 0; k <= 600; ++k) {
      if (!id.sample(k * 0.05, s)) {
        state.SkipWithError(id.message().c_str());
        return;
      }
    }
    benchmark::DoNotOptimize(s.value.data());
  }
  state.counters["samples"] = 601;
}
BENCHMARK(BM_ManipulatorBodyWiseBalance601)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
