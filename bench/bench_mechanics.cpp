// Scaling of the multibody pipeline with the size of a mechanism: an N-link planar pendulum chain
// (Revolute + Body + FixedTranslation per link, a FrameSensor at the tip) for N = 1, 10, 100.
// Compile time (source to native kernels), kernel sizes (expression nodes) and generalized-alpha
// steps per second. The counters of BM_CompileChain are the kernel sizes:
//   residual     F (equations of motion; in the recursive form also the kinematic recursion)
//   newton       the Newton matrix (dF/dqdd + c_q dF/dq + c_qd dF/dqd + dF/dz)
//   mass         dF/dqdd
//   outputs      every variable and the tip sensor's pose, velocity and acceleration
//
//   build/release/bench/bench_mechanics --benchmark_repetitions=3
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "compiler/driver/Compile.h"
#include "runtime/solvers/Integrator.h"

namespace {

const char* kChain = R"(
model Chain "N-link pendulum chain"
  import Mechanics.*;
  parameter Integer N = 3;
  parameter Real L = 0.5;
  World world;
  Revolute j[N](each n = {0, 0, 1}, each phi(start = 0.1));
  Body link[N](each m = 1, each r_cm = {L/2, 0, 0}, each I = diag({1e-3, 1e-3, 1e-3}));
  FixedTranslation tip[N](each r = {L, 0, 0});
  FrameSensor tipSensor;
equation
  connect(world.frame, j[1].frame_a);
  for i in 1:N loop
    connect(j[i].frame_b, link[i].frame_a);
    connect(j[i].frame_b, tip[i].frame_a);
  end for;
  for i in 1:N-1 loop
    connect(tip[i].frame_b, j[i+1].frame_a);
  end for;
  connect(tip[N].frame_b, tipSensor.frame);
end Chain;
)";

// form: 0 condensed (every kinematic quantity substituted), 1 recursive (kept as unknowns)
mbs::CompileResult compile_chain(int n, int form) {
  static const std::string path = [] {
    std::string p = "/tmp/mbs_bench_chain_" + std::to_string(getpid()) + ".mbs";
    std::ofstream(p) << kChain;
    return p;
  }();
  mbs::CompileOptions o;
  o.file = path;
  o.overrides["N"] = n;
  o.recursive_depth = form == 0 ? 1000000 : 0;
  o.cache_dir = "off";  // measure the compilation, not the object cache
  std::ostringstream emit, diag;
  return mbs::compile(o, emit, diag);
}

void BM_CompileChain(benchmark::State& state) {
  mbs::CompileResult r;
  for (auto _ : state) {
    r = compile_chain(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
    if (!r.model) state.SkipWithError("compile failed");
  }
  for (const auto& k : r.kernel_sizes) {
    if (k.name == "residual") state.counters["residual"] = static_cast<double>(k.nodes);
    if (k.name == "newton_matrix") state.counters["newton"] = static_cast<double>(k.nodes);
    if (k.name == "mass_matrix") state.counters["mass"] = static_cast<double>(k.nodes);
    if (k.name == "outputs") state.counters["outputs"] = static_cast<double>(k.nodes);
  }
  if (r.model) {
    state.counters["unknowns"] = r.model->n_eq();
    state.counters["nnz_newton"] = r.model->newton_matrix.nnz();
  }
}
// {N, form}: the condensed form up to N = 20 (its kernels grow quadratically and faster), the
// recursive form up to N = 100
#define MBS_CHAIN_ARGS         \
  ArgNames({"N", "recursive"}) \
      ->Args({1, 0})           \
      ->Args({10, 0})          \
      ->Args({20, 0})          \
      ->Args({1, 1})           \
      ->Args({10, 1})          \
      ->Args({100, 1})
BENCHMARK(BM_CompileChain)->MBS_CHAIN_ARGS->Unit(benchmark::kMillisecond);

void BM_StepChain(benchmark::State& state) {
  auto r = compile_chain(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  if (!r.model) {
    state.SkipWithError("compile failed");
    return;
  }
  mbs::rt::SolverOptions o;
  o.h = 1e-3;
  o.t_end = 1e9;
  auto solver = mbs::rt::make_integrator(r.model, o);
  if (solver->initialize() != mbs::rt::SolveStatus::Ok) {
    state.SkipWithError("initialize failed");
    return;
  }
  int64_t steps = 0;
  for (auto _ : state) {
    // restart every 2 s of simulated time: a long chain released from rest whips after a few
    // seconds, and the benchmark measures the regular step, not the halving of a violent one
    if (++steps % 2000 == 0) {
      state.PauseTiming();
      solver = mbs::rt::make_integrator(r.model, o);
      if (solver->initialize() != mbs::rt::SolveStatus::Ok)
        state.SkipWithError("initialize failed");
      state.ResumeTiming();
    }
    if (solver->step() != mbs::rt::SolveStatus::Ok) {
      state.SkipWithError("step failed");
      break;
    }
  }
  state.counters["steps/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_StepChain)->MBS_CHAIN_ARGS->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
