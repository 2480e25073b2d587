// Time and work of the compiler's symbolic passes against model size, without code generation
// (docs/performance.md, "Compile time against model size"): the condensed form of the N-link
// chain of examples/mechanics/chain.mbs (a dense M(q)) and the chain of first-order equations
// der(x[i]) = x[i-1] - x[i] of bench/compile_scaling.sh. Counters per pass: its time in ms,
// the expression nodes after it and the nodes differentiated up to it (PassTiming).
//   build/release/bench/bench_symbolic_passes --benchmark_repetitions=3
//     --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <sstream>
#include <string>

#include "compiler/driver/Compile.h"

namespace {

void report(benchmark::State& state, const mbs::CompileResult& r) {
  if (!r.ok) state.SkipWithError("the model did not compile");
  for (const mbs::PassTiming& t : r.timings) {
    if (t.pass != "flatten" && t.pass != "mech" && t.pass != "dae" && t.pass != "kernels") continue;
    state.counters[t.pass + "_ms"] = t.ms;
    state.counters[t.pass + "_nodes"] = static_cast<double>(t.nodes);
    state.counters[t.pass + "_dsteps"] = static_cast<double>(t.derivative_steps);
  }
}

mbs::CompileResult compile_passes(mbs::CompileOptions o) {
  o.cache_dir = "off";
  o.codegen = false;
  std::ostringstream emit, diag;
  return mbs::compile(o, emit, diag);
}

void BM_CondensedChainPasses(benchmark::State& state) {
  mbs::CompileOptions o;
  o.file = MBS_SOURCE_DIR "/examples/mechanics/chain.mbs";
  o.overrides["N"] = static_cast<double>(state.range(0));
  o.recursive_depth = 1000;
  mbs::CompileResult r;
  for (auto _ : state) r = compile_passes(o);
  report(state, r);
}
BENCHMARK(BM_CondensedChainPasses)
    ->Arg(10)
    ->Arg(20)
    ->Arg(40)
    ->Arg(80)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

void BM_OdeChainPasses(benchmark::State& state) {
  mbs::CompileOptions o;
  o.file = "OdeChain.mbs";
  o.source = "model OdeChain\n  parameter Integer n = " + std::to_string(state.range(0)) +
             ";\n  Real x[n](each start = 1);\nequation\n  der(x[1]) = -x[1];\n"
             "  for i in 2:n loop\n    der(x[i]) = x[i-1] - x[i];\n  end for;\nend OdeChain;\n";
  mbs::CompileResult r;
  for (auto _ : state) r = compile_passes(o);
  report(state, r);
}
BENCHMARK(BM_OdeChainPasses)
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(100000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
