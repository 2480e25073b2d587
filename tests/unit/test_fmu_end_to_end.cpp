// End-to-end tests of FMU export: `mbsc --fmu` writes an archive whose modelDescription.xml
// validates against the official schemas, whose library depends on nothing but glibc, and which
// the project's own importer (tests/tools/fmu_importer.c, written from the FMI specifications,
// run from a fresh directory in an empty environment) runs with the same results as
// `mbsc --simulate`: co-simulation against the same solver, model exchange (the importer's own
// classic Runge-Kutta) against `--solver rk4`; two instances side by side, the FMU state and its
// serialized copy, wrong calls, a solver failure reported through the logger with the CLI's
// message.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/unit/cli_test_util.h"
#include "tests/unit/fmu_test_util.h"
#include "tools/fmu/Archive.h"

namespace mbs::fmu {
namespace {

namespace fs = std::filesystem;
using clitest::mbsc;
using clitest::read_csv;
using testutil::ProgramRun;
using testutil::run_without_environment;
using testutil::TempDir;

std::string fmt_double(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

// An exported FMU, unpacked: its library alone in a fresh directory, and what the test reads
// from its model description (value references by name, the token, the number of states).
struct Unpacked {
  TempDir dir;
  fs::path library;
  std::string xml, token;
  std::map<std::string, unsigned> vr;
  std::set<unsigned> integers;  // the value references of Integer (Int32) variables
  size_t n_states = 0;
  std::vector<std::string> files;
};

std::string attribute(const std::string& element, const std::string& name) {
  const std::string key = " " + name + "=\"";
  const size_t at = element.find(key);
  if (at == std::string::npos) return {};
  const size_t start = at + key.size();
  return element.substr(start, element.find('"', start) - start);
}

// Exports `model` (a path relative to the source directory) with `args`; fails the test on error.
void export_and_unpack(const std::string& model, const std::string& args, int version,
                       Unpacked& u) {
  const std::string fmu = (u.dir.path / "model.fmu").string();
  clitest::Result r =
      mbsc(model + " --fmu '" + fmu + "' --fmi-version " + std::to_string(version) + " " + args);
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<ArchiveEntry> entries;
  ASSERT_EQ(read_archive(fmu, entries), "");
  const std::string platform = version == 3 ? "binaries/x86_64-linux/" : "binaries/linux64/";
  for (const ArchiveEntry& e : entries) {
    u.files.push_back(e.name);
    if (e.name == "modelDescription.xml") u.xml = e.bytes;
    if (e.name.rfind(platform, 0) == 0 && e.name.size() > 3 &&
        e.name.compare(e.name.size() - 3, 3, ".so") == 0) {
      fs::create_directories(u.dir.path / "lib");
      u.library = u.dir.path / "lib" / fs::path(e.name).filename();
      std::ofstream(u.library, std::ios::binary) << e.bytes;
    }
  }
  ASSERT_FALSE(u.xml.empty());
  ASSERT_FALSE(u.library.empty()) << "no " << platform << "*.so in the archive";
  // the description: tokens and variables (a plain scan: every attribute is on its element)
  u.token = attribute(u.xml, version == 3 ? "instantiationToken" : "guid");
  // FMI 3: Float64, Int32 and Boolean elements; FMI 2: ScalarVariable with Real, Integer or
  // Boolean inside (the Integer ones are read with fmi2GetInteger / fmi3GetInt32)
  for (const char* tag : version == 3
                             ? std::vector<const char*>{"<Float64 ", "<Int32 ", "<Boolean "}
                             : std::vector<const char*>{"<ScalarVariable "}) {
    for (size_t at = u.xml.find(tag); at != std::string::npos; at = u.xml.find(tag, at + 1)) {
      const size_t end = u.xml.find('>', at);
      const std::string element = u.xml.substr(at, end - at);
      const auto vr = static_cast<unsigned>(std::stoul(attribute(element, "valueReference")));
      u.vr[attribute(element, "name")] = vr;
      if (std::string(tag) == "<Int32 " || u.xml.compare(u.xml.find('<', end), 8, "<Integer") == 0)
        u.integers.insert(vr);
    }
  }
  if (version == 3) {
    for (size_t at = u.xml.find("<ContinuousStateDerivative "); at != std::string::npos;
         at = u.xml.find("<ContinuousStateDerivative ", at + 1))
      ++u.n_states;
  } else if (size_t d = u.xml.find("<Derivatives>"); d != std::string::npos) {
    const size_t end = u.xml.find("</Derivatives>", d);
    for (size_t at = u.xml.find("<Unknown ", d); at != std::string::npos && at < end;
         at = u.xml.find("<Unknown ", at + 1))
      ++u.n_states;
  }
  // validates against the official schema
  const fs::path xml_path = u.dir.path / "modelDescription.xml";
  std::ofstream(xml_path) << u.xml;
  const std::string schema =
      std::string(MBS_SOURCE_DIR) + "/tests/fmi/schema/" +
      (version == 3 ? "fmi3/fmi3ModelDescription.xsd" : "fmi2/fmi2ModelDescription.xsd");
  const std::string cmd =
      "xmllint --noout --schema '" + schema + "' '" + xml_path.string() + "' 2>&1";
  std::string out = testutil::command_output(cmd + "; echo rc=$?");
  EXPECT_NE(out.find("rc=0"), std::string::npos) << out;
}

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<double>> rows;
  int column(const std::string& name) const {
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return static_cast<int>(i);
    ADD_FAILURE() << "no column " << name;
    return 0;
  }
};

Table read_table(const std::string& path, bool with_header) {
  Table t;
  auto rows = read_csv(path);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i == 0 && with_header) {
      t.header = rows[i];
      continue;
    }
    std::vector<double> row;
    for (const std::string& c : rows[i]) row.push_back(std::strtod(c.c_str(), nullptr));
    t.rows.push_back(row);
  }
  return t;
}

// Runs the importer on u's library from a fresh directory with an empty environment: columns
// `names` every `h` to `t_stop`; `extra` are more options. Returns the table (header = names).
Table import_run(const Unpacked& u, int version, const std::string& type, double t_stop, double h,
                 const std::vector<std::string>& names, const std::vector<std::string>& extra,
                 ProgramRun* run = nullptr) {
  const std::string out = (u.dir.path / ("import_" + type + ".csv")).string();
  std::vector<std::string> args = {MBS_FMU_IMPORTER_PATH,
                                   u.library.string(),
                                   std::to_string(version),
                                   type,
                                   u.token,
                                   fmt_double(t_stop),
                                   fmt_double(h),
                                   out};
  for (const std::string& n : names) {
    EXPECT_TRUE(u.vr.count(n)) << "no variable " << n << " in the model description";
    const unsigned vr = u.vr.count(n) ? u.vr.at(n) : 0;
    args.push_back(u.integers.count(vr) ? "--vri" : "--vr");
    args.push_back(std::to_string(vr));
  }
  if (type == "me") {
    args.push_back("--nx");
    args.push_back(std::to_string(u.n_states));
  }
  for (const std::string& e : extra) args.push_back(e);
  ProgramRun r = run_without_environment(args, /*merge_stderr=*/true);
  if (run != nullptr) *run = r;
  EXPECT_EQ(r.exit_code, 0) << r.out;
  Table t = read_table(out, false);
  t.header = {"time"};
  for (const std::string& n : names) t.header.push_back(n);
  return t;
}

// The reference: `mbsc --simulate` of the model with `args`.
Table simulate(const std::string& model, const std::string& args, const std::string& name) {
  const std::string out = clitest::tmp(name + "_ref.csv");
  clitest::Result r = mbsc(model + " --simulate --output '" + out + "' " + args);
  EXPECT_EQ(r.code, 0) << r.err;
  return read_table(out, true);
}

// Every row of `fmu` equals the reference's at the same time, column by column, within tol
// (absolute + relative to the column's largest magnitude).
void expect_same(const Table& fmu, const Table& ref, double tol) {
  ASSERT_EQ(fmu.rows.size(), ref.rows.size());
  for (size_t c = 0; c < fmu.header.size(); ++c) {
    const int rc = ref.column(fmu.header[c]);
    double scale = 1.0, worst = 0.0;
    for (const auto& row : ref.rows) scale = std::max(scale, std::fabs(row[rc]));
    for (size_t i = 0; i < fmu.rows.size(); ++i) {
      ASSERT_EQ(fmu.rows[i].size(), fmu.header.size());
      worst = std::max(worst, std::fabs(fmu.rows[i][c] - ref.rows[i][rc]));
    }
    EXPECT_LE(worst, tol * scale) << fmu.header[c];
  }
}

const char* kPendulum = "examples/mechanics/pendulum.mbs";

class FmuVersion : public testing::TestWithParam<int> {};

// Co-simulation: one communication step per solver step; the FMU's code is compiled for the
// baseline CPU, the reference's for the host (rounding differs, not the method).
TEST_P(FmuVersion, PendulumCoSimulationMatchesSimulate) {
  const int version = GetParam();
  Unpacked u;
  export_and_unpack(kPendulum, "--fmu-output j.phi --fmu-output j.w --t-end 1 --step 1e-3", version,
                    u);
  Table fmu = import_run(u, version, "cs", 1.0, 1e-3, {"j.phi", "j.w", "j.tau"}, {});
  Table ref = simulate(kPendulum, "--t-end 1 --step 1e-3", "pendulum_cs");
  expect_same(fmu, ref, 1e-9);
  // a communication step of 10 solver steps gives the same points
  Table coarse = import_run(u, version, "cs", 1.0, 1e-2, {"j.phi", "j.w"}, {});
  Table ref_coarse = simulate(kPendulum, "--t-end 1 --step 1e-3 --output-every 10", "pendulum_c");
  expect_same(coarse, ref_coarse, 1e-9);
}

// Model exchange: the importer integrates with its own classic Runge-Kutta method; mbs's rk4 is
// the same method on the same derivatives.
TEST_P(FmuVersion, PendulumModelExchangeMatchesRk4) {
  const int version = GetParam();
  Unpacked u;
  export_and_unpack(kPendulum, "--fmu-type both --fmu-output j.phi --t-end 1 --step 1e-3", version,
                    u);
  EXPECT_EQ(u.n_states, 2u);
  Table fmu = import_run(u, version, "me", 1.0, 1e-3, {"j.phi", "j.w"}, {});
  Table ref = simulate(kPendulum, "--t-end 1 --step 1e-3 --solver rk4", "pendulum_me");
  expect_same(fmu, ref, 1e-9);
}

// Two instances side by side agree bitwise; the FMU state and its serialized copy continue
// bitwise identically; wrong calls get an error status and a log message.
TEST_P(FmuVersion, InstancesStateAndMisuse) {
  const int version = GetParam();
  Unpacked u;
  export_and_unpack(kPendulum, "--fmu-type both --t-end 1 --step 1e-3", version, u);
  ProgramRun run;
  import_run(u, version, "cs", 0.2, 1e-3, {"j.phi", "j.w"},
             {"--instances", "2", "--state-check", "--misuse"}, &run);
  EXPECT_NE(run.out.find("state check ok"), std::string::npos) << run.out;
  import_run(u, version, "me", 0.2, 1e-3, {"j.phi", "j.w"},
             {"--instances", "2", "--state-check", "--misuse"}, &run);
  EXPECT_NE(run.out.find("state check ok"), std::string::npos) << run.out;
}

TEST(FmuEndToEnd, LibraryNeedsOnlyGlibcAndArchiveHoldsTheSources) {
  Unpacked u;
  export_and_unpack(kPendulum, "--fmu-sources sources", 2, u);
  const std::string ldd = testutil::command_output("ldd '" + u.library.string() + "' 2>&1");
  for (const std::string& line : testutil::lines(ldd)) {
    const bool glibc = line.find("libc.so.6") != std::string::npos ||
                       line.find("libm.so.6") != std::string::npos ||
                       line.find("ld-linux-x86-64.so.2") != std::string::npos ||
                       line.find("linux-vdso.so") != std::string::npos;
    EXPECT_TRUE(glibc) << line;
  }
  bool model = false, library = false;
  for (const std::string& f : u.files) {
    model = model || f == "sources/pendulum.mbs";
    library = library || (f.rfind("sources/", 0) == 0 && f != "sources/pendulum.mbs");
  }
  EXPECT_TRUE(model && library);
}

TEST(FmuEndToEnd, ModelExchangeOfAClosedLoopIsRefusedWithTheReason) {
  TempDir dir;
  const std::string fmu = (dir.path / "fourbar.fmu").string();
  clitest::Result r = mbsc("examples/mechanics/four_bar.mbs --fmu '" + fmu + "' --fmu-type me");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no model exchange"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("co-simulation"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(fmu));
}

// Events inside doStep: a bouncing ball exported for co-simulation bounces at the closed-form
// times; every communication point against the closed form. (Model exchange of models with
// events, where the importer locates them from the event indicators: test_fmu_events.cpp.)
TEST(FmuEndToEnd, CoSimulationLocatesEvents) {
  Unpacked u;
  export_and_unpack("examples/bouncing_ball.mbs", "--step 1e-3", 2, u);
  Table fmu = import_run(u, 2, "cs", 2.5, 1e-2, {"h", "v"}, {});
  ASSERT_EQ(fmu.rows.size(), 251u);
  const double g = 9.81, e = 0.8;
  for (const auto& row : fmu.rows) {
    // free flight from the last impact before t (or from the start)
    double t0 = 0.0, h0 = 1.0, v0 = 0.0;
    double t_hit = std::sqrt(2.0 / g), v_hit = g * t_hit;
    while (t_hit <= row[0]) {
      t0 = t_hit;
      h0 = 0.0;
      v0 = e * v_hit;
      v_hit = v0;
      t_hit += 2.0 * v0 / g;
    }
    const double dt = row[0] - t0;
    EXPECT_NEAR(row[1], h0 + v0 * dt - 0.5 * g * dt * dt, 1e-9) << "t = " << row[0];
    EXPECT_NEAR(row[2], v0 - g * dt, 1e-9) << "t = " << row[0];
  }
}

// A solver failure inside doStep: an error status, and the logger gets the message the CLI
// prints for the same run (time, step, equation, source line).
TEST(FmuEndToEnd, SolverFailureIsReportedWithTheCliMessage) {
  TempDir dir;
  const std::string model = (dir.path / "blowup.mbs").string();
  std::ofstream(model) << "model Blowup\n  Real x(start = 0);\n  output Real y;\nequation\n"
                          "  der(x) = sqrt(0.5 - time);\n  y = x;\nend Blowup;\n";
  Unpacked u;
  export_and_unpack("'" + model + "'", "--solver gen-alpha --t-end 1 --step 0.01", 2, u);
  ProgramRun run;
  import_run(u, 2, "cs", 1.0, 0.1, {"y"}, {"--expect-fail"}, &run);
  EXPECT_NE(run.out.find("step failed at t = 0.5"), std::string::npos) << run.out;
  clitest::Result cli = mbsc("'" + model +
                             "' --simulate --solver gen-alpha --t-end 1 --step 0.01 "
                             "--output '" +
                             (dir.path / "cli.csv").string() + "'");
  EXPECT_EQ(cli.code, 3) << cli.err;
  // the CLI's message (error, notes, help), line by line, is in the importer's log; the CLI's
  // own last line (where its result file is) is not the solver's
  size_t checked = 0;
  for (const std::string& line : testutil::lines(cli.err)) {
    if (line.rfind("mbsc: ", 0) == 0) continue;
    EXPECT_NE(run.out.find(line), std::string::npos)
        << "missing in the FMU's log: " << line << "\n--- log:\n"
        << run.out;
    ++checked;
  }
  EXPECT_GE(checked, 3u) << cli.err;
  EXPECT_NE(cli.err.find("in the step from t = 0.5"), std::string::npos) << cli.err;
}

// An input held over each communication step: y' = u with u = a + b t set at each point gives
// y exactly as the sum of the held values (every method is exact for a constant derivative).
TEST(FmuEndToEnd, InputsAreHeldOverACommunicationStep) {
  TempDir dir;
  const std::string model = (dir.path / "ramp.mbs").string();
  std::ofstream(model) << "model Ramp\n  input Real u(start = 0);\n  Real y(start = 0);\n"
                          "  output Real z;\nequation\n  der(y) = u;\n  z = 2*y;\nend Ramp;\n";
  for (int version : {2, 3}) {
    Unpacked u;
    export_and_unpack("'" + model + "'", "--t-end 1 --step 0.01", version, u);
    Table t = import_run(u, version, "cs", 1.0, 0.1, {"y", "z", "u"},
                         {"--input", std::to_string(u.vr.at("u")) + "=1,2"});
    ASSERT_EQ(t.rows.size(), 11u);
    double y = 0.0;
    for (size_t k = 0; k < t.rows.size(); ++k) {
      EXPECT_NEAR(t.rows[k][1], y, 1e-12) << "version " << version << " t = " << t.rows[k][0];
      EXPECT_NEAR(t.rows[k][2], 2 * y, 1e-12);
      y += 0.1 * (1.0 + 2.0 * 0.1 * static_cast<double>(k));  // u held at its value at t_k
    }
  }
}

// The slider-crank driven by its input torque: with the torque held at its start value the FMU
// gives `mbsc --simulate`; the slider force is an output.
TEST(FmuEndToEnd, SliderCrankWithInputTorqueMatchesSimulate) {
  const char* model = "examples/fmu/slider_crank.mbs";
  Unpacked u;
  export_and_unpack(model, "--t-end 0.5 --step 1e-3", 3, u);
  Table fmu = import_run(u, 3, "cs", 0.5, 1e-3, {"slider_force", "crank_angle", "crank_speed"},
                         {"--input", std::to_string(u.vr.at("tau")) + "=0.5,0"});
  Table ref = simulate(model, "--t-end 0.5 --step 1e-3", "slider_crank");
  expect_same(fmu, ref, 1e-8);
  // the input changes the motion: no torque, the load slows the crank
  Table free = import_run(u, 3, "cs", 0.5, 1e-3, {"crank_speed"},
                          {"--input", std::to_string(u.vr.at("tau")) + "=0,0"});
  EXPECT_LT(free.rows.back()[1], fmu.rows.back()[3] - 1.0);
}

// The four-bar (a closed loop) in co-simulation and the hanging chain in both types, for FMI
// 2.0 and 3.0.
TEST_P(FmuVersion, ClosedLoopAndChainMatchSimulate) {
  const int version = GetParam();
  {
    Unpacked u;
    export_and_unpack("examples/fmu/four_bar.mbs", "--t-end 0.5 --step 1e-3", version, u);
    Table fmu = import_run(u, version, "cs", 0.5, 1e-3, {"crank_angle", "rocker_angle"}, {});
    expect_same(fmu, simulate("examples/fmu/four_bar.mbs", "--t-end 0.5 --step 1e-3", "fourbar"),
                1e-8);
  }
  Unpacked u;
  export_and_unpack("examples/fmu/hanging_chain.mbs", "--fmu-type both --t-end 0.5 --step 1e-3",
                    version, u);
  EXPECT_EQ(u.n_states, 8u);
  Table cs = import_run(u, version, "cs", 0.5, 1e-3, {"phi_first", "phi_last"}, {});
  expect_same(cs, simulate("examples/fmu/hanging_chain.mbs", "--t-end 0.5 --step 1e-3", "chain"),
              1e-8);
  Table me = import_run(u, version, "me", 0.5, 1e-3, {"phi_first", "phi_last"}, {});
  expect_same(me,
              simulate("examples/fmu/hanging_chain.mbs", "--t-end 0.5 --step 1e-3 --solver rk4",
                       "chain_rk4"),
              1e-8);
}

// A rotation integrated as a Lie group (lie_group = true): the FMU's own solver moves the chart
// at every step, so co-simulation matches `mbsc --simulate` (with communication steps of ten
// solver steps). In model exchange the importer steps: the FMU asks for a step event in
// completedIntegratorStep when the chart's |theta| passes 1 rad and moves the chart in event
// mode. Without the moves theta would pass 2 pi (the spin is 50 rad/s), where der(theta) is
// singular.
TEST(FmuEndToEnd, LieGroupRotationsInCoSimulationAndModelExchange) {
  const char* top = "examples/mechanics/heavy_top_lie_group.mbs";
  const std::vector<std::string> columns = {"pivot.Q[1]", "pivot.Q[2]", "pivot.Q[3]",
                                            "pivot.Q[4]", "pivot.w[1]", "pivot.w[2]"};
  {
    Unpacked u;
    export_and_unpack(top, "--solver rk4 --t-end 0.5 --step 1e-3", 3, u);
    Table fmu = import_run(u, 3, "cs", 0.5, 1e-2, columns, {});
    expect_same(fmu,
                simulate(top, "--solver rk4 --t-end 0.5 --step 1e-3 --output-every 10", "lie_top"),
                1e-9);
  }
  // the importer's RK4 in charts moved about every 1 rad against mbsc's rk4 in charts moved at
  // every step: the same method on the same motion, so they agree to its error (measured
  // 5.3e-9 in Q, 5.6e-8 rad/s in w: 3.9e-9 of the spin); the FMU state continues bitwise,
  // charts included
  const Table ref = simulate(top, "--solver rk4 --t-end 0.5 --step 1e-3", "lie_top_rk4");
  for (const int version : {2, 3}) {
    Unpacked u;
    export_and_unpack(top, "--fmu-type me --t-end 0.5", version, u);
    EXPECT_EQ(u.n_states, 6u);  // theta and w
    if (version == 3) {
      EXPECT_NE(u.xml.find("needsCompletedIntegratorStep=\"true\""), std::string::npos);
    }
    ProgramRun run;
    Table me = import_run(u, version, "me", 0.5, 1e-3, columns, {"--state-check"}, &run);
    expect_same(me, ref, 1e-7);
    const size_t at = run.out.find("model-exchange step events: ");
    ASSERT_NE(at, std::string::npos) << run.out;
    const long events = std::stol(run.out.substr(at + 28));
    std::printf("model exchange, FMI %d: %ld step events moved the chart\n", version, events);
    EXPECT_GE(events, 20) << run.out;  // about 25 rad turned in 0.5 s
    EXPECT_LE(events, 40) << run.out;
    EXPECT_NE(run.out.find("state check ok"), std::string::npos) << run.out;
  }
}

// The solver's step is an FMU parameter: set by the importer before initialization, the FMU
// steps like `mbsc --simulate` with that step.
TEST_P(FmuVersion, SolverStepIsAParameter) {
  const int version = GetParam();
  Unpacked u;
  export_and_unpack(kPendulum, "--fmu-output j.phi --t-end 1 --step 1e-3", version, u);
  ASSERT_TRUE(u.vr.count("solver.h"));
  Table fmu = import_run(u, version, "cs", 0.2, 1e-3, {"j.phi", "j.w"},
                         {"--set", std::to_string(u.vr.at("solver.h")) + "=5e-4"});
  Table ref = simulate(kPendulum, "--t-end 0.2 --step 5e-4 --output-every 2", "pendulum_half");
  expect_same(fmu, ref, 1e-9);
  Table coarse = import_run(u, version, "cs", 0.2, 1e-3, {"j.phi", "j.w"}, {});
  double differs = 0;
  for (size_t i = 0; i < coarse.rows.size() && i < fmu.rows.size(); ++i)
    differs = std::max(differs, std::fabs(coarse.rows[i][1] - fmu.rows[i][1]));
  EXPECT_GT(differs, 1e-9);  // the parameter made a difference
}

// An importer's step that ends exactly on an indicator's zero (fmusim's rule, the FMI standard's
// domains z > 0 and z <= 0: h = 0.0 is a crossing of `when h < 0`): the ball hits the wall at
// t = 0.5 and bounces there, not a step later below the ground. Explicit Euler with h = 1/16
// on der(h) = v = -1 from h = 0.5 is exact in binary, so every point is the closed form
// h = |t - 0.5|; the bounce fires once (the FMU also asks for it in completedIntegratorStep;
// the indicator leaving 0 a step later is a second event mode in which nothing fires).
TEST_P(FmuVersion, ModelExchangeEventWhereTheStepEndsOnTheZero) {
  const int version = GetParam();
  TempDir dir;
  const std::string model = (dir.path / "wall.mbs").string();
  std::ofstream(model) << R"(model Wall
  Real h(start = 0.5, fixed = true), v(start = -1, fixed = true);
  Integer n(start = 0);
equation
  der(h) = v;
  der(v) = 0;
  when h < 0 then
    reinit(v, -pre(v));
    n = pre(n) + 1;
  end when;
end Wall;
)";
  Unpacked u;
  export_and_unpack("'" + model + "'", "--fmu-type me --fmu-output n", version, u);
  ProgramRun run;
  Table fmu = import_run(u, version, "me", 1.0, 0.0625, {"h", "v", "n"},
                         {"--euler", "--indicators", "1"}, &run);
  ASSERT_EQ(fmu.rows.size(), 17u);
  for (const auto& row : fmu.rows) {
    const double t = row[0];
    EXPECT_EQ(row[1], std::fabs(t - 0.5)) << "h at t = " << t;
    EXPECT_EQ(row[2], t < 0.5 ? -1.0 : 1.0) << "v at t = " << t;
    EXPECT_EQ(row[3], t < 0.5 ? 0.0 : 1.0) << "n at t = " << t;
  }
  EXPECT_NE(run.out.find("model-exchange step events: 1\n"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("model-exchange state events: 2\n"), std::string::npos) << run.out;
}

INSTANTIATE_TEST_SUITE_P(Fmi, FmuVersion, testing::Values(2, 3),
                         [](const testing::TestParamInfo<int>& i) {
                           return "Fmi" + std::to_string(i.param);
                         });

}  // namespace
}  // namespace mbs::fmu
