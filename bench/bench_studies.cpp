// Studies: runs per second of a small model (the pendulum of examples/pendulum.mbs, 1 s at
// h = 1e-3, one objective) with 1 and 2 threads, against one plain simulation of the same run
// (the overhead of a study run: an Instance, the objective, the results row is not written).
//
//   build/release/bench/bench_studies
#include <benchmark/benchmark.h>

#include <sstream>
#include <string>
#include <vector>

#include "compiler/driver/Compile.h"
#include "compiler/driver/Objectives.h"
#include "compiler/driver/Session.h"
#include "runtime/drivers/Study.h"
#include "runtime/solvers/Integrator.h"

namespace {

std::shared_ptr<const mbs::rt::CompiledModel> pendulum() {
  mbs::CompileOptions o;
  o.file = std::string(MBS_SOURCE_DIR) + "/examples/pendulum.mbs";
  std::ostringstream emit, diag;
  return mbs::compile(o, emit, diag).model;
}

mbs::rt::SolverOptions options() {
  mbs::rt::SolverOptions o;
  o.t_end = 1.0;
  o.h = 1e-3;
  return o;
}

// one simulation, output to a no-op observer
void BM_PendulumSimulation(benchmark::State& state) {
  auto model = pendulum();
  for (auto _ : state) {
    auto solver = mbs::rt::make_integrator(model, options());
    if (solver->run([](double, std::span<const double>) { return 0; }) !=
        mbs::rt::SolveStatus::Finished)
      state.SkipWithError("run failed");
  }
  state.counters["runs/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PendulumSimulation)->Unit(benchmark::kMillisecond)->UseRealTime();

// a variation of the mass over 64 values with threads = state.range(0)
void BM_PendulumVariation(benchmark::State& state) {
  auto model = pendulum();
  std::ostringstream diag;
  auto compiled = mbs::compile_objectives(*model, {"maxabs(x)"}, "", diag);
  auto objectives = compiled.objectives;
  if (!compiled.ok) {
    state.SkipWithError("objective");
    return;
  }
  const mbs::rt::Evaluator evaluator(model, {{"m"}}, objectives, options());
  std::vector<std::vector<double>> points;
  for (int i = 0; i < 64; ++i) points.push_back({0.5 + 0.01 * i});
  for (auto _ : state) {
    int64_t failed = 0;
    mbs::rt::run_parallel(evaluator, points, static_cast<int>(state.range(0)),
                          [&](size_t, const mbs::rt::RunOutcome& r) {
                            failed += r.status != mbs::rt::RunOutcome::Status::Ok;
                          });
    if (failed) state.SkipWithError("a run failed");
  }
  state.counters["runs/s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * 64), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PendulumVariation)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// a run with exact sensitivities with respect to state.range(1) parameters, against the same
// run without (range(1) = 0): the cost per parameter. range(0): 0 the pendulum (m, g, L; 1 s),
// 1 the slider-crank of examples/mechanics (torque and two masses; 1 s).
void BM_ExactSensitivities(benchmark::State& state) {
  const bool crank = state.range(0) == 1;
  mbs::CompileOptions o;
  o.file = std::string(MBS_SOURCE_DIR) +
           (crank ? "/examples/mechanics/slider_crank.mbs" : "/examples/pendulum.mbs");
  o.sensitivities = true;
  std::ostringstream emit, diag;
  auto model = mbs::compile(o, emit, diag).model;
  auto compiled =
      mbs::compile_objectives(*model, {crank ? "final(slider.s)" : "final(x)"}, "", diag);
  std::vector<mbs::rt::StudyVariable> vars;
  const std::vector<std::string> names =
      crank ? std::vector<std::string>{"torque", "rod_body.m", "slider_body.m"}
            : std::vector<std::string>{"m", "g", "L"};
  const std::vector<double> values =
      crank ? std::vector<double>{0.5, 1, 1} : std::vector<double>{1, 9.81, 1};
  for (int64_t i = 0; i < state.range(1); ++i) vars.push_back({names[static_cast<size_t>(i)]});
  const mbs::rt::Evaluator evaluator(model, vars, compiled.objectives, options());
  std::vector<double> x(values.begin(), values.begin() + state.range(1));
  std::vector<std::vector<double>> g;
  for (auto _ : state) {
    auto r = vars.empty() ? evaluator.evaluate(x) : evaluator.evaluate_with_gradient(x, g);
    if (r.status != mbs::rt::RunOutcome::Status::Ok) state.SkipWithError(r.message.c_str());
  }
}
BENCHMARK(BM_ExactSensitivities)
    ->ArgsProduct({{0, 1}, {0, 1, 2, 3}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
