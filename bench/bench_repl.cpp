// The edit-simulate-look loop of the REPL (issue 12), through mbs::repl::Repl as `mbsc repl`
// runs it (the commands' text parsed, the session's run, the rows kept in memory):
//   BM_ReplSetSimulateVal   set a parameter at run time, simulate 1 s (1,000 steps), read a value
//   BM_ReplSetCompileTime   set values the compiler uses (a recompile, object cache warm), simulate
//   BM_ReplLoad             load a model (object cache warm)
// Figures: docs/performance.md, "The REPL".
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <sstream>
#include <string>

#include "runtime/io/Progress.h"
#include "tools/repl/Repl.h"

namespace {

struct Session {
  std::ostringstream out, err;
  mbs::rt::StderrProgress progress{mbs::rt::StderrProgress::Mode::Off, 1.0};
  mbs::repl::Repl repl{{}, out, err, progress};
  explicit Session(const std::string& model) {
    if (::chdir(MBS_SOURCE_DIR) != 0) std::abort();
    run("load " + model);
  }
  void run(const std::string& line) {
    if (repl.execute(line) != mbs::repl::Status::Ok) {
      std::fputs(err.str().c_str(), stderr);
      std::abort();
    }
    out.str("");
  }
};

void BM_ReplSetSimulateVal(benchmark::State& state) {
  Session s("examples/mass_spring_damper.mbs");
  int i = 0;
  for (auto _ : state) {
    s.run("set k = " + std::to_string(100 + (i++ % 50)));
    s.run("simulate 1");
    s.run("val x 0.5");
  }
}
BENCHMARK(BM_ReplSetSimulateVal)->Unit(benchmark::kMillisecond);

void BM_ReplSetCompileTime(benchmark::State& state) {
  Session s("examples/pendulum.mbs");
  int i = 0;
  for (auto _ : state) {
    const double L = (i++ % 2) ? 1.0 : 2.0;  // two variants: the object cache has both
    s.run("set L = " + std::to_string(L) + ", x = " + std::to_string(L));
    s.run("simulate 1");
  }
}
BENCHMARK(BM_ReplSetCompileTime)->Unit(benchmark::kMillisecond);

void BM_ReplLoad(benchmark::State& state) {
  Session s("examples/mass_spring_damper.mbs");
  for (auto _ : state) s.run("load examples/mechanics/slider_crank.mbs");
}
BENCHMARK(BM_ReplLoad)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
