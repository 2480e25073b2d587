// "Never a silently wrong number" (docs/diagnostics.md, "Guarantees of the results"): every
// value written is checked, divergence is never hidden, nothing hangs silently. These tests run
// the built mbsc on small models written to temporary files.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "pty_util.h"

namespace {

using namespace mbs::clitest;  // NOLINT(google-build-using-namespace)

std::string write_model(const std::string& name, const std::string& text) {
  const std::string path = tmp(name);
  std::ofstream(path) << text;
  return path;
}

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

// x = 1 - t; r = sqrt(x - 0.495) is NaN for t > 0.505 while x stays fine.
const char* kSqrtModel =
    "model SqrtNeg\n"
    "  Real x(start = 1);\n"
    "  Real r;\n"
    "equation\n"
    "  der(x) = -1;\n"
    "  r = sqrt(x - 0.495);\n"
    "end SqrtNeg;\n";

// x' = x^2, x(0) = 1: x = 1/(1 - t) blows up at t = 1.
const char* kBlowUpModel =
    "model BlowUp\n"
    "  Real x(start = 1);\n"
    "equation\n"
    "  der(x) = x^2;\n"
    "end BlowUp;\n";

// x' = -1e6 x: stiff; an explicit method at h = 1e-3 is far outside its stability region.
const char* kStiffModel =
    "model Stiff\n"
    "  Real x(start = 1);\n"
    "equation\n"
    "  der(x) = -1e6*x;\n"
    "end Stiff;\n";

TEST(Guards, NonFiniteAuxiliaryStopsTheRunAndNamesItsEquation) {
  const std::string model = write_model("sqrtneg.mbs", kSqrtModel);
  for (const char* solver : {"gen-alpha", "rk4", "dopri5"}) {
    SCOPED_TRACE(solver);
    const std::string csv = tmp("sqrtneg.csv");
    const Result r = mbsc("'" + model + "' --simulate --t-end 1 --step 0.01 --solver " + solver +
                          " --output '" + csv + "'");
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_TRUE(contains(r.err, "'r'")) << r.err;
    EXPECT_TRUE(contains(r.err, "sqrtneg.mbs:6:3: r = sqrt(x - 0.495)")) << r.err;
    EXPECT_TRUE(contains(r.err, "t = 0.51")) << r.err;
    EXPECT_TRUE(contains(r.err, "h = 0.01")) << r.err;
    const auto rows = read_csv(csv);
    ASSERT_EQ(rows.size(), 52u);  // header, t = 0, 0.01, ..., 0.5
    for (size_t i = 1; i < rows.size(); ++i) {
      ASSERT_EQ(rows[i].size(), 3u);
      for (const auto& cell : rows[i]) EXPECT_TRUE(std::isfinite(std::stod(cell))) << cell;
    }
    EXPECT_NEAR(std::stod(rows.back()[0]), 0.5, 1e-12);
  }
}

TEST(Guards, NonFiniteAtTheStartTimeWritesNoRow) {
  const std::string model = write_model("divzero.mbs",
                                        "model DivZero\n  Real x(start = 0);\n  Real w;\n"
                                        "equation\n  der(x) = 1;\n  w = 1/x;\nend DivZero;\n");
  const std::string csv = tmp("divzero.csv");
  const Result r = mbsc("'" + model + "' --simulate --output '" + csv + "'");
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_TRUE(contains(r.err, "'w' is inf at t = 0")) << r.err;
  EXPECT_TRUE(contains(r.err, "divzero.mbs:6:3: w = 1/x")) << r.err;
  EXPECT_EQ(read_csv(csv).size(), 1u);  // the header only
}

// Issue 36: x/x was simplified to 1 at compile time, so y = x/x wrote 1 where x = 0. The
// cancelled factor stays evaluated (docs/diagnostics.md, "Simplification"): NaN at x = 0, stopping
// the run as y = 1/x does; 1 (and z = x) wherever x is finite and non-zero.
TEST(Guards, CancelledDivisionIsNotSimplifiedAway) {
  const std::string model =
      write_model("cancelled.mbs",
                  "model Cancelled\n  Real x(start = 0);\n  Real y;\n  Real z;\nequation\n"
                  "  der(x) = 1;\n  y = x/x;\n  z = x^2/x;\nend Cancelled;\n");
  const std::string csv = tmp("cancelled.csv");
  const Result r = mbsc("'" + model + "' --simulate --t-end 0.1 --output '" + csv + "'");
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_TRUE(contains(r.err, "'y' is nan at t = 0")) << r.err;
  EXPECT_TRUE(contains(r.err, "cancelled.mbs:7:3: y = x/x")) << r.err;
  EXPECT_EQ(read_csv(csv).size(), 1u);  // the header only
  const Result ok = mbsc("'" + model + "' --simulate --t-end 0.1 --step 0.01 --start x=-0.055" +
                         " --output '" + csv + "'");
  ASSERT_EQ(ok.code, 0) << ok.err;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 12u);
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(std::stod(rows[i][2]), 1.0) << "t = " << rows[i][0];
    EXPECT_EQ(std::stod(rows[i][3]), std::stod(rows[i][1])) << "t = " << rows[i][0];
  }
}

// Issue 36: --stats-csv and --fmu given a device replaced it by a regular file (temporary file
// and rename; as root, `--stats-csv /dev/null` replaced the system's /dev/null). Reached through a
// link here, so that the old code damaged only the link: now the device is written in place and
// the link stays; a directory is refused with a message.
TEST(Guards, OutputToADeviceIsWrittenInPlaceNeverReplaced) {
  const std::string dir = tmp("device_out");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string link = dir + "/null";
  std::filesystem::create_symlink("/dev/null", link);
  const std::string model = std::string(MBS_SOURCE_DIR) + "/examples/pendulum.mbs";
  const Result r = mbsc("'" + model + "' --simulate --t-end 0.01 --output '" + link +
                        "' --stats-csv '" + link + "'");
  EXPECT_EQ(r.code, 0) << r.err;
  const Result f = mbsc("'" + model + "' --fmu '" + link + "'");
  EXPECT_EQ(f.code, 0) << f.err;
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 1u);  // no temporary file left
  const Result d = mbsc("'" + model + "' --simulate --t-end 0.01 --stats-csv '" + dir + "'");
  EXPECT_NE(d.code, 0);
  EXPECT_TRUE(contains(d.err, "it is a directory")) << d.err;
  std::filesystem::remove_all(dir);
}

// Issue 36: x' = -1 above 0 and +1 below slides along x = 0 from t = 0.5. rk4 exited 0 with x
// frozen at 3.3e-4 (its stages' slopes cancel), midpoint and rk33 near 0: no integrator may
// report success past the sliding point.
TEST(Guards, SlidingModeFailsWithEveryIntegrator) {
  const std::string model = write_model("slide.mbs",
                                        "model Slide\n  Real x(start = 0.5);\nequation\n"
                                        "  der(x) = if x > 0 then -1 else 1;\nend Slide;\n");
  for (const char* solver : {"gen-alpha", "newmark", "trapezoidal", "euler", "midpoint", "rk33",
                             "rk44", "rk6", "ode23", "dopri5"}) {
    SCOPED_TRACE(solver);
    const Result r = mbsc("'" + model + "' --simulate --t-end 1 --solver " + solver +
                          " --output '" + tmp("slide.csv") + "'");
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_TRUE(contains(r.err, "chattering") || contains(r.err, "sliding mode")) << r.err;
    const auto rows = read_csv(tmp("slide.csv"));
    ASSERT_GE(rows.size(), 2u);
    EXPECT_LE(std::stod(rows.back()[0]), 0.5 + 1e-3) << "rows past the sliding point";
  }
}

TEST(Guards, NonFiniteWarnKeepsGoingWithOneWarning) {
  const std::string model = write_model("sqrtneg_warn.mbs", kSqrtModel);
  const std::string csv = tmp("sqrtneg_warn.csv");
  const Result r = mbsc("'" + model + "' --simulate --t-end 1 --step 0.01 --nonfinite warn" +
                        " --output '" + csv + "'");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "warning:")) << r.err;
  EXPECT_TRUE(contains(r.err, "'r'")) << r.err;
  EXPECT_TRUE(contains(r.err, "t = 0.51")) << r.err;
  EXPECT_EQ(r.err.find("warning:"), r.err.rfind("warning:")) << "one warning only\n" << r.err;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 102u);
  EXPECT_TRUE(std::isnan(std::stod(rows.back()[2]))) << rows.back()[2];
}

TEST(Guards, StiffModelWithAnExplicitMethodDivergesInsteadOfWritingHugeValues) {
  const std::string model = write_model("stiff.mbs", kStiffModel);
  for (const char* solver : {"rk4", "euler", "rk6"}) {
    SCOPED_TRACE(solver);
    const std::string csv = tmp("stiff.csv");
    const Result r = mbsc("'" + model + "' --simulate --t-end 1 --step 1e-3 --solver " + solver +
                          " --output '" + csv + "'");
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_TRUE(contains(r.err, "the solution grows without bound")) << r.err;
    EXPECT_TRUE(contains(r.err, "implicit solver")) << r.err;
    const auto rows = read_csv(csv);
    for (size_t i = 1; i < rows.size(); ++i) EXPECT_LE(std::fabs(std::stod(rows[i][1])), 1e100);
  }
}

TEST(Guards, StiffModelWithDopri5StopsAtTheRejectionLimit) {
  const std::string model = write_model("stiff_dopri.mbs", kStiffModel);
  const Result r = mbsc("'" + model + "' --simulate --t-end 1 --step 1e-3 --solver dopri5 " +
                        "--max-rejections 3 --output '" + tmp("stiff_dopri.csv") + "'");
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_TRUE(contains(r.err, "too many rejected step attempts")) << r.err;
  EXPECT_TRUE(contains(r.err, "--max-rejections")) << r.err;
}

TEST(Guards, BlowUpIsReportedAsDivergenceByEveryIntegrator) {
  const std::string model = write_model("blowup.mbs", kBlowUpModel);
  for (const char* solver :
       {"gen-alpha", "newmark", "trapezoidal", "euler", "rk4", "rk6", "ode23", "dopri5"}) {
    SCOPED_TRACE(solver);
    const std::string csv = tmp("blowup.csv");
    const Result r = mbsc("'" + model + "' --simulate --t-end 2 --step 1e-3 --solver " + solver +
                          " --output '" + csv + "'");
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_TRUE(contains(r.err, "the solution grows without bound")) << r.err;
    EXPECT_TRUE(contains(r.err, "'x'")) << r.err;
    const auto rows = read_csv(csv);
    ASSERT_GT(rows.size(), 900u);
    EXPECT_LT(std::stod(rows.back()[0]), 1.05);  // euler lags the exact pole a little
  }
}

TEST(Guards, DivergenceOfAnImplicitRunDoesNotAdviseAnImplicitSolver) {
  const std::string model = write_model("blowup_hint.mbs", kBlowUpModel);
  for (const char* solver : {"gen-alpha", "trapezoidal"}) {
    SCOPED_TRACE(solver);
    const Result r = mbsc("'" + model + "' --simulate --t-end 2 --step 1e-2 --solver " + solver +
                          " --output '" + tmp("blowup_hint.csv") + "'");
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_TRUE(contains(r.err, "the solution grows without bound")) << r.err;
    const std::string help = r.err.substr(r.err.find("help:"));
    EXPECT_FALSE(contains(help, "--solver gen-alpha")) << r.err;
    EXPECT_FALSE(contains(help, "implicit solver")) << r.err;
    EXPECT_TRUE(contains(help, std::string(solver) + " is implicit")) << r.err;
  }
}

TEST(Guards, StaticSolverReportsARunawayNewtonIterateAsDivergence) {
  // atan(x) = 2 s has no solution for s > pi/4: Newton runs off to infinity
  const std::string model = write_model("noequilibrium.mbs",
                                        "model NoEq\n  Real x(start = 0);\nequation\n"
                                        "  der(x) = atan(x) - 2;\nend NoEq;\n");
  const Result r = mbsc("'" + model + "' --static --output '" + tmp("noeq.csv") + "'");
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_TRUE(contains(r.err, "error: static: the solution grows without bound")) << r.err;
  EXPECT_TRUE(contains(r.err, "beyond --divergence-limit")) << r.err;
}

TEST(Guards, StaticSolverStopsAtANonFiniteValueAndNamesTheLoadFactor) {
  // x = 2 at full load, but r = log(x - 2) is log(negative) along the load path
  const std::string model = write_model("static_nan.mbs",
                                        "model SN\n  Real x(start = 1);\n  Real r;\nequation\n"
                                        "  x = 2;\n  r = log(x - 2);\nend SN;\n");
  const std::string csv = tmp("static_nan.csv");
  const Result r = mbsc("'" + model + "' --static --output '" + csv + "'");
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_TRUE(contains(r.err, "the value of 'r' is")) << r.err;
  EXPECT_TRUE(contains(r.err, "at load factor")) << r.err;
  EXPECT_TRUE(contains(r.err, "static_nan.mbs:6:3: r = log(x - 2)")) << r.err;
  EXPECT_EQ(slurp(csv).find("nan"), std::string::npos);
}

TEST(Guards, TinyStepIsAUsageError) {
  for (const char* step : {"1e-300", "1e-17"}) {
    SCOPED_TRACE(step);
    const Result r = mbsc(std::string("examples/pendulum.mbs --simulate --step ") + step);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_TRUE(contains(r.err, std::string("option --step (h) = ") + step + " is too small"))
        << r.err;
    EXPECT_FALSE(contains(r.err, "singular")) << r.err;
  }
  // issue 36: --h-max 1e-300 with dopri5 was accepted and ran without end
  const Result r =
      mbsc("examples/pendulum_first_order.mbs --simulate --solver dopri5 --h-max 1e-300");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "option --h-max (h_max) = 1e-300 is too small")) << r.err;
}

TEST(Guards, TinyHMinEndsAsACollapsedStepNotAnOverflow) {
  // log(0.5 - x) has no value beyond t = 0.5: halving goes on down to the floor relative to t
  const std::string model = write_model("collapse.mbs",
                                        "model Collapse\n  Real x(start = 0);\n"
                                        "  Real z(start = 0);\nequation\n  der(x) = 1;\n"
                                        "  der(z) = log(0.5 - x);\nend Collapse;\n");
  const Result r = mbsc("'" + model + "' --simulate --step 1e-2 --h-min 1e-300 --output '" +
                        tmp("collapse.csv") + "'");
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_TRUE(contains(r.err, "the step size collapsed")) << r.err;
  EXPECT_TRUE(contains(r.err, "a residual is not finite")) << r.err;  // the cause
  EXPECT_TRUE(contains(r.err, "log(0.5 - x)")) << r.err;
}

TEST(Guards, VerboseRunPrintsProgressLines) {
  // about a million steps; --progress-interval 0.001 makes any run long enough for a line
  const std::string csv = tmp("progress.csv");
  const Result r = mbsc(
      "examples/pendulum.mbs --simulate --t-end 100 --step 1e-4 --output-every 100000 "
      "-v --progress-interval 0.001 --output '" +
      csv + "'");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "mbsc: t = ")) << r.err;
  EXPECT_TRUE(contains(r.err, " of 100 (")) << r.err;
  EXPECT_TRUE(contains(r.err, "steps/s")) << r.err;
  // --quiet silences it; not a terminal and no -v: nothing either
  const Result q = mbsc(
      "examples/pendulum.mbs --simulate --t-end 100 --step 1e-4 --output-every 100000 -v -q "
      "--progress-interval 0.001 --output '" +
      csv + "'");
  EXPECT_EQ(q.code, 0) << q.err;
  EXPECT_FALSE(contains(q.err, "mbsc: t = ")) << q.err;
}

TEST(Guards, HelpListsTheGuardOptionsWithDefaults) {
  const Result r = mbsc("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(contains(r.out, "--nonfinite")) << r.out;
  EXPECT_TRUE(contains(r.out, "(default error)")) << r.out;
  EXPECT_TRUE(contains(r.out, "--max-rejections")) << r.out;
  EXPECT_TRUE(contains(r.out, "(default 1000)")) << r.out;
  EXPECT_TRUE(contains(r.out, "--divergence-limit")) << r.out;
  EXPECT_TRUE(contains(r.out, "(default 1e+100)")) << r.out;
  EXPECT_TRUE(contains(r.out, "--quiet")) << r.out;
  EXPECT_TRUE(contains(r.out, "--progress-interval")) << r.out;
}

// A bad interval is said in words, not as the range of doubles in 300 digits.
TEST(Guards, AnIntervalThatIsNotPositiveIsSaidInWords) {
  for (const char* value : {"0", "inf"}) {
    SCOPED_TRACE(value);
    const Result r = mbsc(std::string("examples/pendulum.mbs --progress-interval ") + value);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_TRUE(contains(r.err, "is not a positive number of seconds")) << r.err;
    EXPECT_LT(r.err.size(), 200u) << r.err;
    const Result m = mbsc(std::string("monitor --once --interval ") + value);
    EXPECT_EQ(m.code, 2) << m.err;
    EXPECT_TRUE(contains(m.err, "is not a positive number of seconds")) << m.err;
    EXPECT_LT(m.err.size(), 200u) << m.err;
  }
}

}  // namespace

// On a terminal (a pseudo-terminal here) a long run shows one updating line: '\r', the time, the
// percentage; Ctrl-C ends the run, the line is erased and the summary follows.
TEST(Guards, ProgressLineOnATerminal) {
  const std::string csv = tmp("pty.csv");
  mbs::ptytest::PtyOptions options;
  options.dir = MBS_SOURCE_DIR;
  options.null_stdout = true;
  mbs::ptytest::PtyProcess run(
      {MBS_MBSC_PATH, "examples/pendulum.mbs", "--simulate", "--t-end", "1e6", "--output-every",
       "0", "--progress-interval", "0.2", "--output", csv},
      options);
  ASSERT_TRUE(run.started());
  // wait for an updating progress line
  ASSERT_TRUE(run.wait_for("\rmbsc: t = ", std::chrono::seconds(60))) << run.screen();
  ASSERT_TRUE(run.wait_for(" %)", std::chrono::seconds(60))) << run.screen();
  run.interrupt();
  const int status = run.wait_exit(std::chrono::seconds(60));
  const std::string& screen = run.screen();
  EXPECT_EQ(status, 130) << screen;
  EXPECT_TRUE(contains(screen, "\rmbsc: t = ")) << screen;
  EXPECT_TRUE(contains(screen, " %)")) << screen;
  EXPECT_TRUE(contains(screen, "steps/s")) << screen;
  EXPECT_TRUE(contains(screen, "interrupted")) << screen;
  // the last progress text is erased (spaces over it) before the summary
  const size_t last = screen.rfind("\rmbsc: t = ");
  ASSERT_NE(last, std::string::npos);
  EXPECT_LT(screen.find("\r ", last + 1), screen.find("interrupted", last)) << screen;
}
