// The progress reporter (runtime/io/Progress.h): the meter reads the clock rarely, reports to its
// sink, and the integrators and the static solver drive it. No test asserts on wall-clock time.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "runtime/io/Progress.h"
#include "runtime/solvers/Integrator.h"
#include "runtime_models.h"

namespace mbs::rt {
namespace {

struct RecordingSink final : ProgressSink {
  std::vector<ProgressInfo> reports;
  std::vector<std::string> warnings;
  int finished = 0;
  void progress(const ProgressInfo& info) override { reports.push_back(info); }
  void warning(std::string_view text) override { warnings.emplace_back(text); }
  void finish() override { ++finished; }
  double interval() const override { return 0.0; }  // every clock read reports
};

TEST(Progress, MeterReadsTheClockFarLessOftenThanItTicks) {
  RecordingSink sink;
  ProgressMeter meter;
  meter.start(&sink, "test", "t", 0.0, 1.0);
  constexpr int64_t kTicks = 20'000'000;
  for (int64_t i = 0; i < kTicks; ++i) meter.tick(static_cast<double>(i) / kTicks, 1e-6);
  meter.finish();
  EXPECT_GE(meter.clock_reads(), 1);
  EXPECT_LT(meter.clock_reads(), kTicks / 100);  // the stride grows to ~20 ms of ticks
  ASSERT_FALSE(sink.reports.empty());
  EXPECT_EQ(sink.reports.back().task, "test");
  EXPECT_GT(sink.reports.back().steps, 0);
  EXPECT_EQ(sink.finished, 1);
}

TEST(Progress, WithoutSinkTickDoesNothing) {
  ProgressMeter meter;
  meter.start(nullptr, "test", "t", 0.0, 1.0);
  for (int i = 0; i < 1000; ++i) meter.tick(0.5, 1e-3);
  EXPECT_EQ(meter.clock_reads(), 0);
}

TEST(Progress, FormatSaysWhereWhenAndHowFast) {
  ProgressInfo i;
  i.task = "gen-alpha";
  i.what = "t";
  i.t = 0.42;
  i.t0 = 0.0;
  i.t_end = 2.0;
  i.h = 1e-6;
  i.steps = 360000;
  i.elapsed = 3.0;
  EXPECT_EQ(StderrProgress::format(i),
            "t = 0.42 of 2 (21 %), 120000 steps/s, h = 1e-06, 3.0 s elapsed, ~11 s left "
            "[gen-alpha]");
}

TEST(Progress, UpdatingLineIsErasedAtTheEnd) {
  char* buf = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&buf, &size);
  {
    StderrProgress p(StderrProgress::Mode::Updating, 1.0, "mbsc: ", out, 0.0);
    ProgressInfo i;
    i.what = "t";
    i.t = 1;
    i.t_end = 2;
    i.elapsed = 1;
    p.progress(i);
    p.finish();
  }
  std::fclose(out);
  const std::string text(buf, size);
  std::free(buf);
  EXPECT_EQ(text.substr(0, 12), "\rmbsc: t = 1");
  EXPECT_EQ(text.find('\n'), std::string::npos);  // one line, rewritten, never ended
  EXPECT_EQ(text.back(), '\r');                   // erased: spaces, back to the start
}

TEST(Progress, IntegratorsReportToTheSink) {
  for (SolverKind kind : {SolverKind::GenAlpha, SolverKind::Rk44, SolverKind::Dopri5}) {
    RecordingSink sink;
    SolverOptions o;
    o.solver = kind;
    o.t_end = 2.0;
    o.h = 1e-3;
    auto solver = make_integrator(testmodels::msd::make(), o);
    solver->set_progress(&sink);
    ASSERT_EQ(solver->run(nullptr), SolveStatus::Finished);
    EXPECT_FALSE(sink.reports.empty()) << solver_name(kind);
    EXPECT_EQ(sink.finished, 1);
    for (const auto& r : sink.reports) {
      EXPECT_EQ(r.what, "t");
      EXPECT_GE(r.t, 0.0);
      EXPECT_LE(r.t, 2.0);
    }
  }
}

}  // namespace
}  // namespace mbs::rt
