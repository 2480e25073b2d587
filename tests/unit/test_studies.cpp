// Parameter variation (compiler/driver/Studies, runtime/drivers): objectives against closed
// forms, failed runs recorded, the same file with 1 and 2 threads, resume after a kill, values
// the compiler uses recompiled per run, and the command line with `mbsc monitor`.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/driver/Objectives.h"
#include "compiler/driver/Studies.h"
#include "runtime/drivers/StudyFile.h"
#include "runtime/drivers/Variation.h"
#include "runtime/io/Csv.h"
#include "tests/unit/cli_test_util.h"

namespace {

using mbs::Session;

std::string temp(const std::string& name) {
  return testing::TempDir() + std::to_string(getpid()) + "_" + name;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = temp(name);
  std::ofstream(path) << text;
  return path;
}

// x' = -a x, x(0) = x0: x(t) = x0 e^{-a t}
const char* kDecay = R"(
model Decay
  parameter Real a(min = 0) = 1;
  Real x(start = 1);
equation
  der(x) = -a*x;
end Decay;
)";

std::unique_ptr<Session> session_for(const std::string& file, std::ostringstream& diag) {
  mbs::CompileOptions o;
  o.file = file;
  auto s = std::make_unique<Session>(o, diag);
  std::ostringstream emit;
  EXPECT_TRUE(s->compile(emit)) << diag.str();
  s->options().t_end = 1.0;
  s->options().h = 1e-3;
  return s;
}

std::vector<mbs::rt::StudyRow> rows_of(const std::string& csv, const mbs::rt::StudyDescription& d) {
  return mbs::rt::read_study_rows(csv, d);
}

TEST(Variation, AxesAndGrid) {
  auto a = mbs::rt::parse_variation_axis("k=1:3:5");
  EXPECT_EQ(a.name, "k");
  EXPECT_EQ(a.values, (std::vector<double>{1, 1.5, 2, 2.5, 3}));
  auto l = mbs::rt::parse_variation_axis("d=1e-3:1:4:log");
  ASSERT_EQ(l.values.size(), 4u);
  EXPECT_EQ(l.values[0], 1e-3);
  EXPECT_NEAR(l.values[1], 1e-2, 1e-16);
  EXPECT_NEAR(l.values[2], 1e-1, 1e-15);
  EXPECT_EQ(l.values[3], 1.0);
  EXPECT_EQ(mbs::rt::parse_variation_axis("m=2,5,7").values, (std::vector<double>{2, 5, 7}));
  EXPECT_THROW(mbs::rt::parse_variation_axis("m=2,x"), std::invalid_argument);
  EXPECT_THROW(mbs::rt::parse_variation_axis("m=0:1:2.5"), std::invalid_argument);
  EXPECT_THROW(mbs::rt::parse_variation_axis("m=-1:1:3:log"), std::invalid_argument);
  EXPECT_THROW(mbs::rt::parse_variation_axis("=1"), std::invalid_argument);
  auto g = mbs::rt::variation_points({{"a", {1, 2}}, {"b", {10, 20, 30}}}, false);
  ASSERT_EQ(g.size(), 6u);
  EXPECT_EQ(g[0], (std::vector<double>{1, 10}));
  EXPECT_EQ(g[1], (std::vector<double>{1, 20}));  // the last fastest
  EXPECT_EQ(g[3], (std::vector<double>{2, 10}));
  auto p = mbs::rt::variation_points({{"a", {1, 2}}, {"b", {10, 20}}}, true);
  EXPECT_EQ(p, (std::vector<std::vector<double>>{{1, 10}, {2, 20}}));
  EXPECT_THROW(mbs::rt::variation_points({{"a", {1, 2}}, {"b", {10}}}, true),
               std::invalid_argument);
}

TEST(Variation, ObjectivesMatchTheClosedForms) {
  std::ostringstream diag;
  auto s = session_for(write_temp("decay.mbs", kDecay), diag);
  mbs::VariationOptions v;
  v.axes = {"a=1,2,4", "x=1,2"};  // a parameter and a start value
  mbs::StudyOptions o;
  o.objectives = {"final(x)", "integral(x)", "max(x)"};
  o.output = temp("decay_variation.csv");
  o.threads = 2;
  auto r = mbs::run_variation(*s, v, o, diag);
  ASSERT_TRUE(r.ok) << r.error << diag.str();
  EXPECT_EQ(r.total, 6);
  EXPECT_EQ(r.run_now, 6);
  EXPECT_EQ(r.failed, 0);
  mbs::rt::StudyDescription d;
  d.variables = {"a", "x"};
  d.objectives = o.objectives;
  auto rows = rows_of(o.output, d);
  ASSERT_EQ(rows.size(), 6u);
  for (const auto& row : rows) {
    ASSERT_EQ(row.status, "ok") << row.message;
    const double a = row.values[0], x0 = row.values[1];
    // the run index says which point: a outermost
    EXPECT_EQ(a, (std::vector<double>{1, 2, 4})[static_cast<size_t>(row.run / 2)]);
    EXPECT_EQ(x0, (std::vector<double>{1, 2})[static_cast<size_t>(row.run % 2)]);
    EXPECT_NEAR(row.objectives[0], x0 * std::exp(-a), 1e-5 * x0);
    // trapezoidal rule on h = 1e-3: error ~ h^2/12 * a^2 * integral
    EXPECT_NEAR(row.objectives[1], x0 * (1 - std::exp(-a)) / a, 1e-5 * x0);
    EXPECT_EQ(row.objectives[2], x0);
  }
  // the smallest final(x): a = 4, x0 = 1
  EXPECT_EQ(r.best, 4);
  EXPECT_NEAR(r.best_value, std::exp(-4.0), 1e-5);
}

// A top-level input varies like a parameter, at run time: x' = -x + u, x(0) = 0.
TEST(Variation, ATopLevelInputVariesWithoutACompile) {
  std::ostringstream diag;
  auto s = session_for(write_temp("lag.mbs",
                                  "model Lag\n  input Real u;\n  Real x(start = 0);\nequation\n"
                                  "  der(x) = -x + u;\nend Lag;\n"),
                       diag);
  mbs::VariationOptions v;
  v.axes = {"u=0.5,2"};
  mbs::StudyOptions o;
  o.objectives = {"final(x)"};
  o.output = temp("lag_variation.csv");
  auto r = mbs::run_variation(*s, v, o, diag);
  ASSERT_TRUE(r.ok) << r.error << diag.str();
  EXPECT_EQ(r.failed, 0);
  mbs::rt::StudyDescription d;
  d.variables = {"u"};
  d.objectives = o.objectives;
  auto rows = rows_of(o.output, d);
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& row : rows) {
    ASSERT_EQ(row.status, "ok") << row.message;
    EXPECT_NEAR(row.objectives[0], row.values[0] * (1 - std::exp(-1.0)), 1e-5);
  }
}

TEST(Variation, AFailedRunIsARecordedResult) {
  std::ostringstream diag;
  auto s = session_for(write_temp("decay_fail.mbs", kDecay), diag);
  mbs::VariationOptions v;
  v.axes = {"a=1,-1,2"};
  mbs::StudyOptions o;
  o.objectives = {"final(x)"};
  o.output = temp("decay_fail.csv");
  auto r = mbs::run_variation(*s, v, o, diag);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.failed, 1);
  mbs::rt::StudyDescription d;
  d.variables = {"a"};
  d.objectives = o.objectives;
  auto rows = rows_of(o.output, d);
  ASSERT_EQ(rows.size(), 3u);
  for (const auto& row : rows) {
    if (row.values[0] < 0) {
      EXPECT_EQ(row.status, "failed");
      EXPECT_NE(row.message.find("violates min = 0"), std::string::npos) << row.message;
      EXPECT_TRUE(std::isnan(row.objectives[0]));
    } else {
      EXPECT_EQ(row.status, "ok");
    }
  }
}

TEST(Variation, ThreadsGiveTheSameResults) {
  std::ostringstream diag;
  auto s = session_for(write_temp("decay_threads.mbs", kDecay), diag);
  mbs::VariationOptions v;
  v.axes = {"a=0.5:5:12"};
  mbs::StudyOptions o;
  o.objectives = {"final(x)", "rms(x)"};
  std::map<int64_t, std::vector<double>> by_threads[2];
  mbs::rt::StudyDescription d;
  d.variables = {"a"};
  d.objectives = o.objectives;
  for (int k = 0; k < 2; ++k) {
    o.threads = k + 1;
    o.output = temp("decay_threads_" + std::to_string(k) + ".csv");
    ASSERT_TRUE(mbs::run_variation(*s, v, o, diag).ok);
    for (const auto& row : rows_of(o.output, d)) by_threads[k][row.run] = row.objectives;
  }
  EXPECT_EQ(by_threads[0].size(), 12u);
  EXPECT_EQ(by_threads[0], by_threads[1]);  // bit for bit
  // and the files are the same byte for byte (rows in run order, nothing timed)
  EXPECT_EQ(mbs::clitest::slurp(temp("decay_threads_0.csv")),
            mbs::clitest::slurp(temp("decay_threads_1.csv")));
}

TEST(Variation, AKilledStudyResumesWithoutRepeatingRuns) {
  std::ostringstream diag;
  auto s = session_for(write_temp("decay_resume.mbs", kDecay), diag);
  mbs::VariationOptions v;
  v.axes = {"a=1:4:7"};
  mbs::StudyOptions o;
  o.objectives = {"final(x)"};
  o.output = temp("decay_resume.csv");
  o.threads = 1;
  ASSERT_TRUE(mbs::run_variation(*s, v, o, diag).ok);
  std::string full;
  {
    std::ifstream in(o.output);
    full.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  // as if killed: the header, three whole rows and half a row
  size_t cut = 0;
  for (int lines = 0; lines < 4; ++lines) cut = full.find('\n', cut) + 1;
  const size_t next = full.find('\n', cut);
  std::ofstream(o.output, std::ios::trunc) << full.substr(0, cut + (next - cut) / 2);
  o.resume = true;
  auto r = mbs::run_variation(*s, v, o, diag);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.resumed, 3);
  EXPECT_EQ(r.run_now, 4);
  std::ifstream in(o.output);
  std::string resumed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  mbs::rt::StudyDescription d;
  d.variables = {"a"};
  d.objectives = o.objectives;
  auto rows = rows_of(o.output, d);
  ASSERT_EQ(rows.size(), 7u);
  std::vector<int> seen(7, 0);
  for (const auto& row : rows) ++seen[static_cast<size_t>(row.run)];
  EXPECT_EQ(seen, std::vector<int>(7, 1));
  // a study with other values refuses the file
  v.axes = {"a=1:5:7"};
  auto other = mbs::run_variation(*s, v, o, diag);
  EXPECT_FALSE(other.ok);
  EXPECT_NE(other.error.find("cannot resume"), std::string::npos) << other.error;
}

TEST(Variation, CompileTimeValuesAreRecompiledPerRun) {
  std::ostringstream diag;
  auto s = session_for(write_temp("arr.mbs", R"(
model Arr
  parameter Integer n = 2;
  Real x[n](each start = 1);
equation
  for i in 1:n loop
    der(x[i]) = -n*x[i];
  end for;
end Arr;
)"),
                       diag);
  mbs::VariationOptions v;
  v.axes = {"n=1,2,3"};
  mbs::StudyOptions o;
  o.objectives = {"final(x[1])"};
  o.output = temp("arr_variation.csv");
  auto r = mbs::run_variation(*s, v, o, diag);
  ASSERT_TRUE(r.ok) << r.error << diag.str();
  mbs::rt::StudyDescription d;
  d.variables = {"n"};
  d.objectives = o.objectives;
  for (const auto& row : rows_of(o.output, d)) {
    ASSERT_EQ(row.status, "ok") << row.message;
    EXPECT_NEAR(row.objectives[0], std::exp(-row.values[0]), 1e-5);
  }
}

TEST(Variation, UnknownNamesAreUsageErrors) {
  std::ostringstream diag;
  auto s = session_for(write_temp("decay_names.mbs", kDecay), diag);
  mbs::VariationOptions v;
  v.axes = {"aa=1,2"};
  mbs::StudyOptions o;
  o.output = temp("decay_names.csv");
  auto r = mbs::run_variation(*s, v, o, diag);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("did you mean 'a'"), std::string::npos) << r.error;
}

TEST(Variation, CommandLineStudyFileAndMonitor) {
  using mbs::clitest::mbsc;
  const auto has = [](const std::string& text, const std::string& what) {
    return text.find(what) != std::string::npos;
  };
  const std::string model = write_temp("decay_cli.mbs", kDecay);
  const std::string out = temp("decay_cli.csv");
  const std::string study = write_temp("decay.study", R"(# a study file: one option per line
vary a=1,2,4
vary x=1:2:2
objective final(x)
objective integral(x)
t-end 1
threads 2
)");
  const std::string cache = "MBS_CACHE_DIR='" + temp("cache") + "' ";
  auto r = mbsc("'" + model + "' --study '" + study + "' --output '" + out + "'", cache);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.err, "6 runs")) << r.err;
  EXPECT_TRUE(has(r.err, "smallest final(x)")) << r.err;
  auto m = mbsc("monitor '" + out + "' --once");
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_TRUE(has(m.out, "6 of 6 runs done (100 %), 0 failed")) << m.out;
  EXPECT_TRUE(has(m.out, "best so far: run 4, final(x) =")) << m.out;
  // without a file: the most recent study's (noted in the cache directory)
  auto last = mbsc("monitor --once", cache);
  ASSERT_EQ(last.code, 0) << last.err;
  EXPECT_TRUE(has(last.out, "6 of 6 runs done")) << last.out;
  // a bad line of the study file names the file and the line
  const std::string bad = write_temp("bad.study", "vary a=1\n--objective final(x)\n");
  auto b = mbsc("'" + model + "' --study '" + bad + "' --output '" + out + "'");
  EXPECT_EQ(b.code, 2);
  EXPECT_TRUE(has(b.err, "bad.study:2: error")) << b.err;
}

TEST(Variation, AStudyFileLineWithAnUnknownKeyNamesItsFileAndLine) {
  using mbs::clitest::mbsc;
  const std::string model = write_temp("decay_key.mbs", kDecay);
  const std::string bad = write_temp("key.study", "vary a=1,2\n\nobjectiv final(x)\n");
  auto r = mbsc("'" + model + "' --study '" + bad + "' --output '" + temp("key.csv") + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("key.study:3: error: 'objectiv' is no option of mbsc; did you mean "
                       "'objective'?"),
            std::string::npos)
      << r.err;
}

TEST(Variation, ResumeRefusesAFileWithARunTwice) {
  std::ostringstream diag;
  auto s = session_for(write_temp("decay_twice.mbs", kDecay), diag);
  mbs::VariationOptions v;
  v.axes = {"a=1:2:2"};
  mbs::StudyOptions o;
  o.objectives = {"final(x)"};
  o.output = temp("decay_twice.csv");
  o.threads = 1;
  ASSERT_TRUE(mbs::run_variation(*s, v, o, diag).ok);
  const std::string text = mbs::clitest::slurp(o.output);
  const size_t last = text.rfind('\n', text.size() - 2) + 1;
  std::ofstream(o.output, std::ios::app) << text.substr(last);  // the last run once more
  o.resume = true;
  auto r = mbs::run_variation(*s, v, o, diag);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("run 1 is in the file twice"), std::string::npos) << r.error;
}

TEST(Variation, MonitorOfAFinishedStudyStopsItsClock) {
  std::ostringstream diag;
  auto s = session_for(write_temp("decay_clock.mbs", kDecay), diag);
  mbs::VariationOptions v;
  v.axes = {"a=1,2"};
  mbs::StudyOptions o;
  o.output = temp("decay_clock.csv");
  o.threads = 1;
  ASSERT_TRUE(mbs::run_variation(*s, v, o, diag).ok);
  double started = 0;
  mbs::rt::read_study_description(o.output, &started);
  ASSERT_GT(started, 0);
  // the last row was written 5 s after the start (set, not waited for): a study that has ended
  // took that long, however long ago it ended
  const auto at = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::duration<double>(started + 5.0)));
  std::filesystem::last_write_time(o.output, std::chrono::file_clock::from_sys(at));
  const mbs::rt::StudySummary sum = mbs::rt::summarize_study(o.output);
  EXPECT_FALSE(sum.running);
  EXPECT_NEAR(sum.elapsed_s, 5.0, 1e-3);
}

// Identification: data made by the model with k = 100, d = 0.4 plus noise; every optimiser
// recovers both from fit(x, "data.csv").
class Identification : public testing::Test {
 protected:
  void SetUp() override {
    model_ = std::string(MBS_SOURCE_DIR) + "/examples/mass_spring_damper.mbs";
    data_ = temp("msd_measured.csv");
    std::ostringstream diag;
    mbs::CompileOptions o;
    o.file = model_;
    Session truth(o, diag);
    std::ostringstream emit;
    ASSERT_TRUE(truth.compile(emit)) << diag.str();
    truth.options().t_end = 3;
    truth.options().h = 1e-3;
    int x = -1;
    for (size_t i = 0; i < truth.model()->output_names.size(); ++i)
      if (truth.model()->output_names[i] == "x") x = static_cast<int>(i);
    std::ofstream out(data_);
    out << "time,x\n";
    int64_t n = 0;
    truth.simulate([&](double t, std::span<const double> y) {
      if (n++ % 20 == 0)  // every 20 ms, with a deterministic noise of 1 mm
        out << fmt::format("{:.17g},{:.17g}\n", t,
                           y[static_cast<size_t>(x)] + 1e-3 * std::sin(12345.678 * t * t + 1));
      return 0;
    });
  }
  mbs::StudyReport identify(mbs::OptimizerKind kind, const std::string& method,
                            std::vector<std::string> ranges, int threads = 0, bool exact = false) {
    std::ostringstream diag;
    mbs::CompileOptions o;
    o.file = model_;
    o.sensitivities = exact;
    Session s(o, diag);
    std::ostringstream emit;
    EXPECT_TRUE(s.compile(emit)) << diag.str();
    s.options().t_end = 3;
    s.options().h = 1e-3;
    mbs::OptimizeOptions opt;
    opt.kind = kind;
    opt.ranges = std::move(ranges);
    opt.minimize.method = *mbs::rt::minimize_method_from_name(method);
    opt.genetic.seed = 11;
    opt.genetic.generations = 15;
    mbs::StudyOptions so;
    so.objectives = {"fit(x, \"" + data_ + "\")"};
    so.output = temp("identify_" + method + ".csv");
    so.threads = threads;
    auto r = mbs::run_optimization(s, opt, so, diag);
    EXPECT_TRUE(r.ok) << r.error << diag.str();
    return r;
  }
  std::string model_, data_;
};

TEST_F(Identification, EveryMinimiserRecoversTheSpringRateAndTheDamping) {
  for (const char* method : {"nelder-mead", "bobyqa", "cobyla", "lbfgs", "slsqp"}) {
    // gradient methods need a start in the valley of the true k: the fit of an oscillation is
    // not convex in its frequency
    auto r = identify(mbs::OptimizerKind::Minimize, method, {"k=80:120", "d=0.1:1"});
    ASSERT_EQ(r.best_values.size(), 2u) << method;
    EXPECT_NEAR(r.best_values[0], 100, 0.1) << method;
    EXPECT_NEAR(r.best_values[1], 0.4, 0.01) << method;
  }
}

TEST_F(Identification, GradientMethodsWithExactSensitivities) {
  for (const char* method : {"lbfgs", "slsqp"}) {
    auto fd = identify(mbs::OptimizerKind::Minimize, method, {"k=80:120", "d=0.1:1"});
    auto exact = identify(mbs::OptimizerKind::Minimize, method, {"k=80:120", "d=0.1:1"}, 0, true);
    ASSERT_EQ(exact.best_values.size(), 2u) << method;
    EXPECT_NEAR(exact.best_values[0], 100, 0.1) << method;
    EXPECT_NEAR(exact.best_values[1], 0.4, 0.01) << method;
    // one run per objective call instead of 1 + 2 per variable
    EXPECT_LT(exact.run_now * 3, fd.run_now) << method;
  }
}

TEST_F(Identification, GeneticOptimisationRecoversThemAndIsReproducible) {
  auto r = identify(mbs::OptimizerKind::Genetic, "genetic", {"k=50:200", "d=0.05:2"});
  ASSERT_EQ(r.best_values.size(), 2u);
  EXPECT_NEAR(r.best_values[0], 100, 0.5);
  EXPECT_NEAR(r.best_values[1], 0.4, 0.05);
  const std::string first = mbs::clitest::slurp(temp("identify_genetic.csv"));
  // the same seed on one thread: the same file byte for byte
  auto again = identify(mbs::OptimizerKind::Genetic, "genetic", {"k=50:200", "d=0.05:2"}, 1);
  EXPECT_EQ(mbs::clitest::slurp(temp("identify_genetic.csv")), first);
  EXPECT_EQ(again.best, r.best);
}

TEST(Sensitivity, CentralDifferencesAgainstTheClosedForm) {
  // final(x) = x0 e^{-a T}: d/da = -T x0 e^{-a T}, d/dx0 = e^{-a T}
  std::ostringstream diag;
  auto s = session_for(write_temp("decay_sens.mbs", kDecay), diag);
  s->options().solver = mbs::rt::SolverKind::Rk44;
  s->set_parameter("a", 1.5);
  mbs::StudyOptions o;
  o.objectives = {"final(x)", "integral(x)"};
  o.output = temp("decay_sens.csv");
  auto r = mbs::run_sensitivity(*s, {"a", "x"}, {}, false, o, diag);
  ASSERT_TRUE(r.study.ok) << r.study.error << diag.str();
  ASSERT_EQ(r.result.derivative.size(), 2u);
  const double a = 1.5, T = 1;
  EXPECT_NEAR(r.result.derivative[0][0], -T * std::exp(-a * T), 1e-8);
  EXPECT_NEAR(r.result.derivative[0][1], std::exp(-a * T), 1e-8);
  // integral = x0 (1 - e^{-aT}) / a (the trapezoidal rule's error is O(h^2) = 1e-7)
  EXPECT_NEAR(r.result.derivative[1][0],
              (T * a * std::exp(-a * T) - (1 - std::exp(-a * T))) / (a * a), 1e-6);
  EXPECT_NEAR(r.result.derivative[1][1], (1 - std::exp(-a * T)) / a, 1e-6);
  EXPECT_EQ(r.study.run_now, 5);  // the reference and two points per variable
}

TEST(Variation, TheSpringDamperExampleAgainstItsClosedForms) {
  // examples/studies/msd_variation.study, run from the command line as its header says
  using mbs::clitest::mbsc;
  const std::string out = temp("msd_variation.csv");
  auto r = mbsc(
      "examples/mass_spring_damper.mbs --study examples/studies/msd_variation.study "
      "--output '" +
      out + "' -q");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("smallest maxabs(x)"), std::string::npos) << r.err;
  mbs::rt::StudyDescription d;
  d.variables = {"k", "d"};
  d.objectives = {"maxabs(x)", "final(x)", "integral(x)", "maxabs(v)"};
  const auto rows = rows_of(out, d);
  ASSERT_EQ(rows.size(), 12u);
  const double m = 1, x0 = 0.1, T = 2;
  double best = 1e300;
  int64_t best_run = -1;
  for (const auto& row : rows) {
    ASSERT_EQ(row.status, "ok") << row.message;
    const double k = row.values[0], c = row.values[1];
    const double w = std::sqrt(k / m), zeta = c / (2 * std::sqrt(k * m));
    const double wd = w * std::sqrt(1 - zeta * zeta), s = zeta * w;
    const double x = x0 * std::exp(-s * T) * (std::cos(wd * T) + s / wd * std::sin(wd * T));
    const double v = -x0 * std::exp(-s * T) * (w * w / wd) * std::sin(wd * T);
    EXPECT_EQ(row.objectives[0], x0);
    EXPECT_NEAR(row.objectives[1], x, 1e-5 * x0) << k << " " << c;
    EXPECT_NEAR(row.objectives[2], -(m * v + c * (x - x0)) / k, 1e-6) << k << " " << c;
    if (row.objectives[3] < best) best = row.objectives[3], best_run = row.run;
  }
  EXPECT_EQ(best_run, 2);  // k = 50, d = 1.6
}

// Exact sensitivities of the discrete solution against closed forms and central differences.
struct Gradients {
  std::vector<std::vector<double>> exact, fd;
};

Gradients exact_and_fd(const std::string& file, const std::vector<std::string>& names,
                       const std::vector<std::string>& objectives, double t_end, double h,
                       std::map<std::string, double> set = {},
                       mbs::rt::SolverKind solver = mbs::rt::SolverKind::GenAlpha) {
  std::ostringstream diag, emit;
  mbs::CompileOptions o;
  o.file = file;
  o.sensitivities = true;
  Session s(o, diag);
  EXPECT_TRUE(s.compile(emit)) << diag.str();
  s.options().t_end = t_end;
  s.options().h = h;
  s.options().rtol = 1e-12;
  s.options().atol = 1e-14;
  s.options().solver = solver;
  for (const auto& [n, x] : set) s.set_parameter(n, x);
  auto compiled = mbs::compile_objectives(*s.model(), objectives, "", diag);
  EXPECT_TRUE(compiled.ok) << diag.str();
  auto vars = mbs::study_variables(*s.model(), names);
  mbs::rt::Evaluator ev(s.model(), vars, compiled.objectives, s.options());
  // the values: the model's (with `set`); start values from the first output row
  std::vector<double> x;
  std::vector<double> first;
  s.simulate([&](double, std::span<const double> out) {
    if (first.empty()) first.assign(out.begin(), out.end());
    return 1;
  });
  for (const auto& v : vars) {
    if (!v.start) {
      x.push_back(s.instance().parameter(v.name));
      continue;
    }
    const auto& columns = s.model()->output_names;
    const auto it = std::find(columns.begin(), columns.end(), v.name);
    EXPECT_NE(it, columns.end()) << v.name;
    x.push_back(first[static_cast<size_t>(it - columns.begin())]);
  }
  Gradients g;
  auto r = ev.evaluate_with_gradient(x, g.exact);
  EXPECT_EQ(r.status, mbs::rt::RunOutcome::Status::Ok) << r.message;
  g.fd.assign(objectives.size(), std::vector<double>(names.size()));
  for (size_t i = 0; i < names.size(); ++i) {
    const double step = 1e-5 * std::max(1.0, std::fabs(x[i]));
    auto xp = x, xm = x;
    xp[i] += step;
    xm[i] -= step;
    auto rp = ev.evaluate(xp), rm = ev.evaluate(xm);
    EXPECT_EQ(rp.status, mbs::rt::RunOutcome::Status::Ok) << rp.message;
    for (size_t k = 0; k < objectives.size(); ++k)
      g.fd[k][i] = (rp.objectives[k] - rm.objectives[k]) / (2 * step);
  }
  return g;
}

void expect_agree(const Gradients& g, double rel) {
  for (size_t k = 0; k < g.exact.size(); ++k)
    for (size_t i = 0; i < g.exact[k].size(); ++i)
      EXPECT_NEAR(g.exact[k][i], g.fd[k][i], rel * (1e-3 + std::fabs(g.fd[k][i])))
          << "objective " << k << " variable " << i;
}

TEST(ExactSensitivity, OdeModelAgainstTheClosedFormAndDifferences) {
  const std::string file = write_temp("decay_exact.mbs", kDecay);
  auto g = exact_and_fd(file, {"a", "x"}, {"final(x)", "integral(x)", "rms(x)", "max(x)"}, 1.0,
                        1e-3, {{"a", 1.5}});
  const double a = 1.5;
  EXPECT_NEAR(g.exact[0][0], -std::exp(-a), 1e-5);
  EXPECT_NEAR(g.exact[0][1], std::exp(-a), 1e-5);
  EXPECT_NEAR(g.exact[1][1], (1 - std::exp(-a)) / a, 1e-5);
  EXPECT_NEAR(g.exact[3][1], 1.0, 1e-12);  // max(x) = x0
  expect_agree(g, 1e-6);
}

TEST(ExactSensitivity, SpringDamperWithADerivedParameter) {
  // d = 2 zeta sqrt(k m): the sensitivity with respect to k goes through d
  const std::string file = write_temp("msd_derived.mbs", R"(
model Msd
  parameter Real m = 1;
  parameter Real k = 100;
  parameter Real zeta = 0.05;
  parameter Real d = 2*zeta*sqrt(k*m);
  parameter Real x0 = 0.1;
  Real x(start = x0), v(start = 0);
equation
  v = der(x);
  m*der(v) + d*v + k*x = 0;
end Msd;
)");
  auto g = exact_and_fd(file, {"k", "m", "x0", "v"}, {"final(x)", "maxabs(v)", "integral(x^2)"},
                        1.0, 1e-3);
  expect_agree(g, 1e-5);
}

TEST(ExactSensitivity, Index3Pendulum) {
  const std::string file = std::string(MBS_SOURCE_DIR) + "/examples/pendulum.mbs";
  auto g = exact_and_fd(file, {"m", "g"}, {"final(x)", "final(y)", "integral(lambda)"}, 1.0, 1e-3);
  expect_agree(g, 1e-5);
}

TEST(ExactSensitivity, SliderCrankClosedLoop) {
  const std::string file = std::string(MBS_SOURCE_DIR) + "/examples/mechanics/slider_crank.mbs";
  auto g =
      exact_and_fd(file, {"torque", "rod_body.m", "slider_body.m"},
                   {"final(slider.s)", "final(crank.w)", "integral(rod_joint.phi)"}, 0.5, 1e-3);
  expect_agree(g, 1e-5);
}

TEST(ExactSensitivity, ExplicitMethodsDifferentiateTheirStages) {
  const std::string file = write_temp("msd_explicit.mbs", R"(
model Msd
  parameter Real m = 1;
  parameter Real k = 100;
  parameter Real d = 0.4;
  Real x(start = 0.1), v(start = 0);
equation
  v = der(x);
  m*der(v) + d*v + k*x = 0;
end Msd;
)");
  for (auto solver :
       {mbs::rt::SolverKind::Rk44, mbs::rt::SolverKind::Midpoint, mbs::rt::SolverKind::Dopri5}) {
    auto g = exact_and_fd(file, {"k", "d", "m", "x"}, {"final(x)", "integral(v^2)"}, 1.0, 1e-3, {},
                          solver);
    expect_agree(g, 1e-5);
  }
}

}  // namespace
