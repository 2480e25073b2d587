// The mbsc command line: options, exit codes, result files, summaries.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_test_util.h"
#include "invdyn_models.h"

namespace {

using namespace mbs::clitest;  // NOLINT(google-build-using-namespace)

TEST(Cli, HelpListsOptionsDefaultsAndExitCodes) {
  Result r = mbsc("--help");
  EXPECT_EQ(r.code, 0);
  for (const char* s : {"--simulate", "--t-end", "--step", "--solver", "--rho-inf", "--rtol",
                        "--atol", "--output", "--output-every", "--set", "--model", "--emit",
                        "Exit codes", "solver failure", "usage error", "model error"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  EXPECT_NE(r.out.find("default 0.9"), std::string::npos);
}

TEST(Cli, Version) {
  Result r = mbsc("--version");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("mbsc "), std::string::npos);
}

TEST(Cli, SimulatesThePendulumAndWritesAnExactCsv) {
  std::string csv = tmp("pendulum.csv");
  Result r = mbsc("examples/pendulum.mbs --simulate --t-end 2 --step 1e-3 --output '" + csv + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 2002u);  // header + t = 0, 0.001, ..., 2
  EXPECT_EQ(rows[0], (std::vector<std::string>{"time", "x", "y", "lambda"}));
  EXPECT_EQ(rows[1][0], "0");
  EXPECT_EQ(std::stod(rows.back()[0]), 2.0);
  for (size_t i = 1; i < rows.size(); ++i) {
    double x = std::stod(rows[i][1]), y = std::stod(rows[i][2]);
    EXPECT_NEAR(x * x + y * y, 1.0, 1e-10);
  }
  for (const char* s :
       {"steps", "Newton iterations", "factorizations", "compile", "run", csv.c_str()})
    EXPECT_NE(r.err.find(s), std::string::npos) << s << "\n" << r.err;
}

TEST(Cli, OutputEveryThinsTheRows) {
  std::string csv = tmp("every.csv");
  Result r = mbsc(
      "examples/mass_spring_damper.mbs --simulate --t-end 1 --step 1e-3 --output-every 10 --output "
      "'" +
      csv + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  auto rows = read_csv(csv);
  EXPECT_EQ(rows.size(), 102u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"time", "x", "v"}));
}

TEST(Cli, SetChangesAParameter) {
  std::string a = tmp("set_a.csv"), b = tmp("set_b.csv");
  ASSERT_EQ(
      mbsc("examples/mass_spring_damper.mbs --simulate --t-end 0.3 --output '" + a + "'").code, 0);
  Result r = mbsc(
      "examples/mass_spring_damper.mbs --simulate --t-end 0.3 --set k=400 --set d=0 --output '" +
      b + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  auto rb = read_csv(b);
  // w = 20 rad/s without damping: x(0.3) = 0.1 cos(6)
  EXPECT_NEAR(std::stod(rb.back()[1]), 0.1 * std::cos(6.0), 1e-5);
  EXPECT_NE(read_csv(a).back()[1], rb.back()[1]);
}

TEST(Cli, ExitCodes) {
  EXPECT_EQ(mbsc("examples/pendulum.mbs").code, 0);  // check only
  EXPECT_EQ(mbsc("no/such/file.mbs").code, 1);
  EXPECT_EQ(mbsc("examples/pendulum.mbs --no-such-option").code, 2);
  EXPECT_EQ(mbsc("examples/pendulum.mbs --simulate --rho-inf 2").code, 2);
  EXPECT_EQ(mbsc("examples/pendulum.mbs --set L").code, 2);
  EXPECT_EQ(mbsc("examples/pendulum.mbs --set L=abc").code, 2);
  EXPECT_EQ(mbsc("examples/pendulum.mbs --simulate --output /no/such/dir/x.csv").code, 2);
  Result rk = mbsc("examples/pendulum.mbs --simulate --solver rk4");
  EXPECT_EQ(rk.code, 2);
  EXPECT_NE(rk.err.find("algebraic variable(s) (lambda)"), std::string::npos) << rk.err;
  // what the command line names but the model lacks is a usage error, located at the model
  Result r = mbsc("examples/pendulum.mbs --set nosuch=1");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("examples/pendulum.mbs:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nosuch"), std::string::npos);
  EXPECT_EQ(mbsc("examples/pendulum.mbs --model Nope").code, 2);
  // a parameter value the model rejects is a model error
  EXPECT_EQ(mbsc("examples/pendulum.mbs --set m=inf").code, 1);
}

TEST(Cli, InconsistentStartValuesAreAModelError) {
  Result r = mbsc("examples/pendulum.mbs --simulate --set L=2");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("examples/pendulum.mbs:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(": error: start values violate this constraint (residual -3)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("x^2 + y^2 = L^2;"), std::string::npos) << r.err;
}

TEST(Cli, SolverFailureSaysTimeAndStepAndKeepsTheRows) {
  std::string model = tmp("fails.mbs"), csv = tmp("fails.csv");
  std::ofstream(model) << "model Fails\n  Real x(start = 0);\n  Real z(start = 0);\nequation\n"
                          "  der(x) = 1;\n  der(z) = log(0.5 - x);\nend Fails;\n";
  Result r = mbsc("'" + model + "' --simulate --t-end 1 --step 1e-2 --output '" + csv + "'");
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("t = "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("h = "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("log(0.5 - x)"), std::string::npos) << r.err;
  auto rows = read_csv(csv);
  ASSERT_GT(rows.size(), 40u);
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_EQ(rows[i].size(), 3u);
  EXPECT_LT(std::stod(rows.back()[0]), 0.5 + 1e-12);
}

TEST(Cli, EmitPrintsEachPass) {
  Result ast = mbsc("examples/pendulum.mbs --emit=ast");
  EXPECT_EQ(ast.code, 0);
  EXPECT_NE(ast.out.find("Pendulum"), std::string::npos);
  Result flat = mbsc("examples/pendulum.mbs --emit=flat");
  EXPECT_EQ(flat.code, 0);
  EXPECT_NE(flat.out.find("3 equations"), std::string::npos) << flat.out;
  Result dae = mbsc("examples/pendulum_first_order.mbs --emit=dae");
  EXPECT_EQ(dae.code, 0);
  EXPECT_NE(dae.out.find("ODE2       x"), std::string::npos) << dae.out;
  EXPECT_NE(dae.out.find("eliminated vx = der(x)"), std::string::npos) << dae.out;
  EXPECT_NE(dae.out.find("[position]"), std::string::npos) << dae.out;
  Result ir = mbsc("examples/pendulum.mbs --emit=ir");
  EXPECT_EQ(ir.code, 0);
  EXPECT_NE(ir.out.find("define"), std::string::npos);
  EXPECT_NE(ir.out.find("@residual"), std::string::npos);
  Result k = mbsc("examples/pendulum.mbs --emit=kernels");
  EXPECT_EQ(k.code, 0);
  EXPECT_NE(k.out.find("kernel newton_matrix"), std::string::npos);
}

// Comprehensions and reductions are expanded by the flattener: the flat model has one scalar
// parameter, start value and equation per element, and a reduction is an ordinary sum or max.
TEST(Cli, EmitFlatExpandsComprehensionsAndReductions) {
  std::string model = tmp("comprehension_flat.mbs");
  std::ofstream(model) << R"(model Flat
  parameter Integer n = 3;
  parameter Real w[n] = {i^2 for i in 1:n};
  Real x[n](start = {i for i in 1:n});
  Real s;
equation
  der(x) = {-w[i]*x[i] for i in 1:n};
  s = sum(x[i]*x[i] for i in 1:n) + max(x[i] for i in 2:n);
end Flat;
)";
  Result r = mbsc("'" + model + "' --emit=flat");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, R"(flat model Flat
  4 variables, 4 parameters/constants, 4 equations
  parameter Integer n = 3  @2:21
  parameter Real w[1] = 1  @3:18
  parameter Real w[2] = 4  @3:18
  parameter Real w[3] = 9  @3:18
  Real x[1] (start = 1)  @4:8
  Real x[2] (start = 2)  @4:8
  Real x[3] (start = 3)  @4:8
  Real s  @5:8
equations
  0 = der(x[1]) + w[1]*x[1]  @7:3
  0 = der(x[2]) + w[2]*x[2]  @7:3
  0 = der(x[3]) + w[3]*x[3]  @7:3
  0 = s - x[1]^2 - x[2]^2 - x[3]^2 - max(x[2], x[3])  @8:3
)");
}

TEST(Cli, VerbosePrintsPassTimes) {
  Result r = mbsc("examples/pendulum.mbs -v --no-cache");
  EXPECT_EQ(r.code, 0);
  for (const char* p : {"pass parse", "pass flatten", "pass dae", "pass kernels", "pass codegen"})
    EXPECT_NE(r.err.find(p), std::string::npos) << p << "\n" << r.err;
  // compiled again from the model cache: no pass runs
  const std::string cache = tmp("verbose_cache");
  const std::string env = "MBS_CACHE_DIR='" + cache + "' ";
  std::system(("rm -rf '" + cache + "'").c_str());
  EXPECT_EQ(mbsc("examples/pendulum.mbs -v", env).code, 0);
  Result warm = mbsc("examples/pendulum.mbs -v", env);
  EXPECT_EQ(warm.code, 0);
  EXPECT_NE(warm.err.find("pass cache"), std::string::npos) << warm.err;
  EXPECT_NE(warm.err.find("mbsc: model cache hit: " + cache + "/"), std::string::npos) << warm.err;
  EXPECT_EQ(warm.err.find("pass parse"), std::string::npos) << warm.err;
}

TEST(Cli, LibrarySearchPathFromEnvironmentAndIncludeDirs) {
  std::string dir = testing::TempDir() + std::to_string(getpid()) + "_mbs_lib";
  std::system(("mkdir -p '" + dir + "'").c_str());
  std::ofstream(dir + "/MyLib.mbs") << "package MyLib\n  model Decay\n    parameter Real k = 2;\n"
                                       "    Real x(start = 1);\n  equation\n    der(x) = -k*x;\n"
                                       "  end Decay;\nend MyLib;\n";
  std::string model = tmp("uses_lib.mbs");
  std::ofstream(model) << "model UsesLib\n  MyLib.Decay d(k = 3);\nend UsesLib;\n";
  EXPECT_EQ(mbsc("'" + model + "'").code, 1);  // not on the path
  EXPECT_EQ(mbsc("'" + model + "' -I '" + dir + "'").code, 0);
  EXPECT_EQ(mbsc("'" + model + "'").code, 1);
  std::string csv = tmp("uses_lib.csv");
  Result r = mbsc("'" + model + "' --simulate --t-end 1 --output '" + csv + "' -I '" + dir + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NEAR(std::stod(read_csv(csv).back()[1]), std::exp(-3.0), 1e-6);
  std::string env = "MBS_PATH='" + dir + "' ";
  std::string cmd = std::string("cd '") + MBS_SOURCE_DIR + "' && " + env + "'" + MBS_MBSC_PATH +
                    "' '" + model + "' >/dev/null 2>&1";
  EXPECT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 0);
}

TEST(Cli, StaticEquilibriumOfTheHangingChain) {
  std::string csv = tmp("static.csv"), stats = tmp("static_stats.csv");
  Result r = mbsc("examples/hanging_chain.mbs --static --load-steps 4 --output '" + csv +
                  "' --stats-csv '" + stats + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 5u);  // header + 4 load steps
  EXPECT_EQ(rows[0][0], "load");
  EXPECT_EQ(rows[0][10], "s[10]");
  EXPECT_EQ(std::stod(rows.back()[0]), 1.0);
  // spring i carries the weight of the masses below it: s[i] = sum_{j<=i} (n-j+1) m g / c
  double s = 0;
  for (int i = 1; i <= 10; ++i) {
    s += (10 - i + 1) * 9.81 / 1000.0;
    EXPECT_NEAR(std::stod(rows.back()[i]), s, 1e-9) << i;
  }
  // half the load: half the deflection (the chain is linear)
  EXPECT_NEAR(std::stod(rows[2][10]), 0.5 * s, 1e-9);
  auto st = read_csv(stats);
  ASSERT_EQ(st.size(), 2u);
  EXPECT_EQ(st[0][0], "steps");
  EXPECT_EQ(st[1][0], "4");
}

TEST(Cli, EigenvaluesAndLinearisationOfTheHangingChain) {
  std::string prefix = tmp("chain");
  Result r =
      mbsc("examples/hanging_chain.mbs --static --eigen --linearize --output '" + prefix + ".csv'");
  ASSERT_EQ(r.code, 0) << r.err;
  // first mode of the fixed-free chain: w1 = 2 sqrt(c/m) sin(pi / (2 (2n+1)))
  double w1 = 2 * std::sqrt(1000.0) * std::sin(M_PI / 42.0);
  std::stringstream out(r.out);
  std::string line;
  bool found = false;
  while (std::getline(out, line)) {
    std::stringstream ls(line);
    int mode;
    double re, im, fd, fu, zeta;
    if (!(ls >> mode >> re >> im >> fd >> fu >> zeta) || mode != 1) continue;
    found = true;
    EXPECT_NEAR(fu, w1 / (2 * M_PI), 1e-6);
    EXPECT_NEAR(zeta, 20.0 * w1 / (2 * 1000.0), 1e-6);  // stiffness-proportional damping
  }
  EXPECT_TRUE(found) << r.out;
  std::ifstream m(prefix + "_M.mtx");
  EXPECT_TRUE(m.good());
  std::ifstream k(prefix + "_K.mtx");
  EXPECT_TRUE(k.good());
}

TEST(Cli, EverySolverIsReachable) {
  for (const char* solver : {"gen-alpha", "newmark", "trapezoidal", "euler", "midpoint", "rk33",
                             "rk44", "rk4", "rk6", "ode23", "dopri5"}) {
    SCOPED_TRACE(solver);
    std::string csv = tmp(std::string("solver_") + solver + ".csv");
    Result r = mbsc("examples/mass_spring_damper.mbs --simulate --t-end 0.5 --set d=0 --solver " +
                    std::string(solver) + " --output '" + csv + "'");
    ASSERT_EQ(r.code, 0) << r.err;
    auto rows = read_csv(csv);
    ASSERT_GE(rows.size(), 3u);
    double t = std::stod(rows.back()[0]), x = std::stod(rows.back()[1]);
    EXPECT_NEAR(t, 0.5, 1e-12);
    EXPECT_NEAR(x, 0.1 * std::cos(10 * t), std::string(solver) == "euler" ? 1e-2 : 1e-4);
  }
}

TEST(Cli, WarnsAboutUndampedNewmarkOnIndex3Constraints) {
  std::string csv = tmp("trap.csv");
  Result r = mbsc("examples/pendulum.mbs --simulate --t-end 0.1 --solver trapezoidal --output '" +
                  csv + "'");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: trapezoidal with gamma = 1/2"), std::string::npos) << r.err;
  Result ok = mbsc(
      "examples/pendulum.mbs --simulate --t-end 0.1 --solver trapezoidal --index2 "
      "--output '" +
      csv + "'");
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(ok.err.find("warning"), std::string::npos) << ok.err;
  Result ga = mbsc("examples/pendulum.mbs --simulate --index2 --output '" + csv + "'");
  EXPECT_EQ(ga.code, 2) << ga.err;  // index-2 constraints are for newmark and trapezoidal
}

}  // namespace

// mbsc --inverse-dynamics: a crank motion from a trajectory file, sampled at the file's own times
// when neither --t-end nor --step is given; the crank torque against the closed form (massless
// crank and rod, slider m = 2 on a track along x: tau = m x'' dx/dphi); the body-wise balance
// gives the same file; a motion past the workspace stops with exit code 3 and keeps the rows.
TEST(Cli, InverseDynamicsOfATrajectoryFileAtItsOwnTimes) {
  const mbs::testutil::SliderCrank crank("SliderCrankCli", "");  // pivot.phi from the file
  const std::string model_text = crank.text();
  std::string model = tmp("id_cli.mbs"), traj = tmp("id_cli_traj.csv");
  std::ofstream(model) << model_text;
  {
    std::ofstream f(traj);
    f << "time,pivot.phi\n";
    for (int k = 0; k <= 50; ++k) {
      double t = k * 0.013;  // not a multiple of any default step
      f << t << "," << 1 + 2 * t << "\n";
    }
  }
  std::string tree = tmp("id_cli_tree.csv"), bodies = tmp("id_cli_bodies.csv");
  Result r = mbsc("'" + model + "' --inverse-dynamics --trajectory '" + traj + "' --output '" +
                  tree + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("determined uniquely in every sample:\n  pivot.tau"), std::string::npos)
      << r.err;
  // the body-wise balance's unknowns, with their directions, in the kernels pass
  Result emit = mbsc("'" + model + "' --inverse-dynamics --emit=kernels");
  ASSERT_EQ(emit.code, 0) << emit.err;
  EXPECT_NE(emit.out.find("columns of body_rows_u and body_wrench_u:\n  [0] pivot.tau\n"),
            std::string::npos);
  EXPECT_NE(emit.out.find("] pin.reaction[4]: torque about e1\n"), std::string::npos);
  EXPECT_NE(emit.out.find("kernel inverse_balance ("), std::string::npos);
  Result rb = mbsc("'" + model + "' --inverse-dynamics --balance bodies --trajectory '" + traj +
                   "' --output '" + bodies + "'");
  ASSERT_EQ(rb.code, 0) << rb.err;
  auto rows = read_csv(tree), rows_b = read_csv(bodies);
  ASSERT_EQ(rows.size(), 52u);  // the header and the file's 51 times
  ASSERT_EQ(rows_b.size(), rows.size());
  size_t tau = 0;
  for (size_t c = 0; c < rows[0].size(); ++c)
    if (rows[0][c] == "pivot.tau") tau = c;
  ASSERT_GT(tau, 0u);
  const double rr = 0.1, l = 0.3, m = 2, w = 2;
  for (size_t k = 1; k < rows.size(); ++k) {
    double t = std::stod(rows[k][0]);
    EXPECT_NEAR(t, (k - 1) * 0.013, 1e-12);
    const auto x = mbs::testutil::slider_x(rr, l, 1 + w * t);
    EXPECT_NEAR(std::stod(rows[k][tau]), m * x.d2x * w * w * x.dx, 1e-9) << "t = " << t;
    ASSERT_EQ(rows_b[k].size(), rows[k].size());
    for (size_t col = 1; col < rows[k].size(); ++col) {
      ASSERT_EQ(rows[k][col].empty(), rows_b[k][col].empty()) << rows[0][col] << " t = " << t;
      if (!rows[k][col].empty()) {
        EXPECT_NEAR(std::stod(rows[k][col]), std::stod(rows_b[k][col]), 1e-9)
            << rows[0][col] << " t = " << t;
      }
    }
  }
  // a rod shorter than the crank: the motion leaves the workspace where sin(phi) = l / r
  mbs::testutil::SliderCrank short_rod = crank;
  short_rod.l = "0.095";
  short_rod.slide_start = "0.1";
  std::ofstream(model) << short_rod.text();
  std::string stopped = tmp("id_cli_stop.csv");
  Result rs = mbsc("'" + model + "' --inverse-dynamics --trajectory '" + traj + "' --output '" +
                   stopped + "'");
  EXPECT_EQ(rs.code, 3) << rs.err;
  EXPECT_NE(rs.err.find("module of the loop closed at 'slide' did not converge"), std::string::npos)
      << rs.err;
  auto kept = read_csv(stopped);
  EXPECT_EQ(kept.size(), 1u + 10u);  // t = 0, ..., 0.117 (sin(1 + 2t) = 0.95 at t = 0.1266)
}

namespace {

// Every line of a result file ends with a newline and has `columns` fields, each a number (or
// empty where inverse dynamics leaves a component undetermined); returns the number of rows.
size_t check_whole_rows(const std::string& text, size_t columns) {
  if (text.empty()) return 0;  // killed before the header was written
  EXPECT_EQ(text.back(), '\n') << "the file ends in a cut row";
  // every field of every row is read in place (the files of these runs hold 10^5-10^6 rows)
  const char* p = text.data();
  const char* const end = p + text.size();
  p = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
  if (p == nullptr) return 0;
  ++p;  // after the header
  size_t rows = 0;
  int failures = 0;  // reported up to 5 times, not once per row
  while (p < end) {
    const char* eol = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
    if (eol == nullptr) eol = end;
    size_t fields = 0;
    for (const char* f = p;; ++fields) {
      const char* sep = f;
      while (sep < eol && *sep != ',') ++sep;
      if (sep > f) {
        char* stop = nullptr;
        std::strtod(f, &stop);
        if (stop != sep && failures++ < 5)
          ADD_FAILURE() << "bad number '" << std::string(f, sep) << "' in row " << rows;
      }
      if (sep == eol) {
        ++fields;
        break;
      }
      f = sep + 1;
    }
    if (fields != columns && failures++ < 5)
      ADD_FAILURE() << "row " << rows << " has " << fields << " fields, not " << columns << ": "
                    << std::string(p, eol);
    ++rows;
    p = eol + 1;
  }
  return rows;
}

}  // namespace

// Starts mbsc with `args` in the source directory, its output thrown away; returns its pid.
// Its standard error goes to `err` (a file), for the message if the run ends by itself.
pid_t spawn_mbsc(const std::vector<std::string>& args, const std::string& err = "/dev/null") {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(MBS_SOURCE_DIR) != 0) ::_exit(127);
    std::freopen("/dev/null", "w", stdout);
    std::freopen(err.c_str(), "w", stderr);
    std::vector<char*> argv = {const_cast<char*>(MBS_MBSC_PATH)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(MBS_MBSC_PATH, argv.data());
    ::_exit(127);
  }
  return pid;
}

// SIGKILL at random moments of fast-writing runs (simulation and inverse dynamics): every file
// left behind consists of whole rows.
TEST(Cli, KilledRunsLeaveWholeRows) {
  struct Run {
    std::vector<std::string> args;
    std::string csv;
  };
  const std::string sim = tmp("killed_sim.csv"), inv = tmp("killed_inverse.csv");
  const std::vector<Run> runs = {
      {{"examples/pendulum.mbs", "--simulate", "--t-end", "1000", "--step", "1e-5", "--output",
        sim},
       sim},
      {{"examples/mechanics/hybrid_manipulator.mbs", "--inverse-dynamics", "--t-end", "1000",
        "--step", "1e-4", "--output", inv},
       inv},
  };
  std::mt19937 rng(3);
  size_t rows_seen = 0;
  for (const Run& run : runs) {
    // a short run first, so that the object cache makes the killed runs start fast
    std::string warm;
    for (size_t a = 0; a < run.args.size(); ++a)
      warm +=
          " '" + (a > 0 && run.args[a - 1] == "--t-end" ? std::string("0.01") : run.args[a]) + "'";
    ASSERT_EQ(mbsc(warm).code, 0);
    size_t columns = 0;
    for (int i = 0; i < 6; ++i) {
      std::filesystem::remove(run.csv);
      const std::string err = tmp("killed.err");
      const pid_t pid = spawn_mbsc(run.args, err);
      ASSERT_GE(pid, 0);
      // killed a random moment after its first rows reached the file (within 20 s), so that
      // the kill falls while it writes however long the start takes on a loaded machine
      for (int wait = 0; wait < 2000; ++wait) {
        std::error_code ec;
        if (std::filesystem::file_size(run.csv, ec) > 0 && !ec) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 400));
      ::kill(pid, SIGKILL);
      int status = 0;
      ::waitpid(pid, &status, 0);
      ASSERT_TRUE(WIFSIGNALED(status))
          << "the run ended before it was killed, with exit status "
          << (WIFEXITED(status) ? WEXITSTATUS(status) : -1) << "; its standard error:\n"
          << slurp(err);
      const std::string text = slurp(run.csv);
      if (columns == 0 && !text.empty())
        columns =
            static_cast<size_t>(std::count(text.begin(), text.begin() + text.find('\n'), ',')) + 1;
      rows_seen += check_whole_rows(text, columns);
    }
    std::filesystem::remove(run.csv);
  }
  EXPECT_GT(rows_seen, 1000u);  // the runs were killed while writing
}

// mbsc plot: a view of rt::plot_csv (tests/unit/test_runtime_plot.cpp checks the pictures).
TEST(Cli, PlotDrawsColumnsOfAResultFile) {
  const std::string csv = tmp("plot_pendulum.csv"), svg = tmp("plot_pendulum.svg");
  ASSERT_EQ(mbsc("examples/pendulum.mbs --simulate --t-end 1 --output '" + csv + "'").code, 0);
  Result r = mbsc("plot '" + csv + "' x y --output '" + svg + "' --title 'a pendulum'");
  EXPECT_EQ(r.code, 0) << r.err;
  const std::string text = slurp(svg);
  EXPECT_NE(text.find(">a pendulum<"), std::string::npos);
  EXPECT_NE(text.find(">y<"), std::string::npos);
  r = mbsc("plot '" + csv + "' lambdaa --output '" + svg + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("'lambda'"), std::string::npos) << r.err;  // the nearest name
  EXPECT_EQ(mbsc("plot '" + csv + "' x").code, 2);                // no --output
  EXPECT_NE(mbsc("--help").out.find("mbsc plot"), std::string::npos);
}

// mbsc plot --model: the axes carry the units the model declares (here the standard library's).
TEST(Cli, PlotLabelsWithTheModelsUnits) {
  const std::string csv = tmp("plot_units.csv"), svg = tmp("plot_units.svg");
  const std::string model = "examples/mechanics/pendulum.mbs";
  ASSERT_EQ(mbsc(model + " --simulate --t-end 0.1 --output '" + csv + "'").code, 0);
  Result r = mbsc("plot '" + csv + "' j.phi --output '" + svg + "' --model " + model);
  ASSERT_EQ(r.code, 0) << r.err;
  std::string text = slurp(svg);
  EXPECT_NE(text.find(">j.phi [rad]<"), std::string::npos);
  EXPECT_NE(text.find(">time [s]<"), std::string::npos);
  r = mbsc("plot '" + csv + "' j.phi j.w --output '" + svg + "' --model " + model +
           " --model-name RigidPendulum");
  ASSERT_EQ(r.code, 0) << r.err;
  text = slurp(svg);
  EXPECT_NE(text.find(">j.w [rad/s]<"), std::string::npos);
  // without --model: the names alone
  ASSERT_EQ(mbsc("plot '" + csv + "' j.phi --output '" + svg + "'").code, 0);
  text = slurp(svg);
  EXPECT_NE(text.find(">j.phi<"), std::string::npos);
  EXPECT_EQ(text.find("[rad]"), std::string::npos);
  // a model that does not compile, or a model name the file lacks
  r = mbsc("plot '" + csv + "' j.phi --output '" + svg + "' --model examples/nosuch.mbs");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("nosuch.mbs"), std::string::npos) << r.err;
  EXPECT_EQ(mbsc("plot '" + csv + "' j.phi --output '" + svg + "' --model " + model +
                 " --model-name Nosuch")
                .code,
            2);
  std::filesystem::remove(csv);
  std::filesystem::remove(svg);
}

// A misspelt --set or --start name is answered with the name meant, one-letter names too.
TEST(Cli, SetAndStartOfAMisspeltNameSuggestTheNameMeant) {
  Result r = mbsc("examples/pendulum.mbs --set LL=2");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("help: did you mean 'L'?"), std::string::npos) << r.err;
  r = mbsc("examples/pendulum.mbs --start xx=0");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("help: did you mean 'x'?"), std::string::npos) << r.err;
  r = mbsc("examples/pendulum.mbs --start lambdaa=0");
  EXPECT_NE(r.err.find("help: did you mean 'lambda'?"), std::string::npos) << r.err;
  // nothing near: no suggestion
  r = mbsc("examples/pendulum.mbs --set nosuch=1");
  EXPECT_EQ(r.err.find("did you mean"), std::string::npos) << r.err;
}

// --start NAME=VALUE sets a start value as the model's own start attribute would.
TEST(Cli, StartSetsAStartValue) {
  const std::string csv = tmp("start_pendulum.csv");
  // hanging at rest: x = 0, y = -L; lambda = m g / (2 L) holds it
  Result r = mbsc(
      "examples/pendulum.mbs --simulate --t-end 0.1 --start x=0 --start y=-1 "
      "--output '" +
      csv + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto rows = read_csv(csv);
  ASSERT_GE(rows.size(), 3u);
  EXPECT_EQ(rows[1][1], "0");
  EXPECT_EQ(rows[1][2], "-1");
  EXPECT_NEAR(std::stod(rows.back()[2]), -1.0, 1e-12);
  EXPECT_NEAR(std::stod(rows.back()[3]), 9.81 / 2, 1e-9);
  // a multibody joint coordinate: the assembly starts from it
  r = mbsc(
      "examples/mechanics/double_pendulum.mbs --simulate --t-end 0.01 --start j1.phi=0.3 "
      "--output '" +
      csv + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_csv(csv)[1][1], "0.3");
  // checked against the constraints like a start value in the model
  EXPECT_EQ(mbsc("examples/pendulum.mbs --start x=0.5").code, 1);
  EXPECT_EQ(mbsc("examples/pendulum.mbs --start nosuch=1").code, 2);
  EXPECT_EQ(mbsc("examples/pendulum.mbs --start L=2").code, 2);
  EXPECT_EQ(mbsc("examples/pendulum.mbs --start x").code, 2);
}

// Ctrl-C stops inverse dynamics after the last whole sample, with exit code 130 (it used to be
// ignored until the last sample).
TEST(Cli, CtrlCStopsInverseDynamics) {
  const std::string csv = tmp("inverse_ctrl_c.csv");
  ASSERT_EQ(mbsc("examples/mechanics/hybrid_manipulator.mbs --inverse-dynamics --t-end 0.01 "
                 "--output '" +
                 csv + "'")
                .code,
            0);  // fills the object cache
  std::filesystem::remove(csv);
  // 300,000 samples: some seconds of work, and a bounded file should the test itself die
  const pid_t pid = spawn_mbsc({"examples/mechanics/hybrid_manipulator.mbs", "--inverse-dynamics",
                                "--t-end", "300", "--step", "1e-3", "--output", csv});
  ASSERT_GT(pid, 0);
  // wait until samples are being written (at most 60 s), then press Ctrl-C
  auto rows_written = [&] {
    const std::string text = slurp(csv);
    return std::count(text.begin(), text.end(), '\n');
  };
  for (int i = 0; i < 600 && rows_written() < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(pid, SIGINT);
  int status = 0;
  bool ended = false;
  for (int i = 0; i < 300 && !ended; ++i) {  // it must end within 30 s
    ended = ::waitpid(pid, &status, WNOHANG) == pid;
    if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!ended) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    FAIL() << "Ctrl-C did not stop inverse dynamics";
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  const std::string text = slurp(csv);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  EXPECT_GT(std::count(text.begin(), text.end(), '\n'), 2);
  std::filesystem::remove(csv);
}
