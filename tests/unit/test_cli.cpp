// The mbsc command line: options, exit codes, result files, summaries.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Result {
  int code = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs mbsc with `args` (a shell-quoted string) in the source directory.
Result mbsc(const std::string& args) {
  std::string dir = testing::TempDir();
  // unique per process: ctest runs test cases in parallel processes
  std::string tag = std::to_string(getpid());
  std::string out = dir + "mbsc_out_" + tag + ".txt", err = dir + "mbsc_err_" + tag + ".txt";
  std::string cmd = std::string("cd '") + MBS_SOURCE_DIR + "' && '" + MBS_MBSC_PATH + "' " + args +
                    " >'" + out + "' 2>'" + err + "'";
  int status = std::system(cmd.c_str());
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::vector<std::vector<std::string>> rows;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string c;
    while (std::getline(ss, c, ',')) cells.push_back(c);
    rows.push_back(cells);
  }
  return rows;
}

std::string tmp(const std::string& name) {
  return testing::TempDir() + std::to_string(getpid()) + "_" + name;
}

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
  Result r = mbsc("examples/pendulum.mbs --set nosuch=1");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("nosuch"), std::string::npos);
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

TEST(Cli, VerbosePrintsPassTimes) {
  Result r = mbsc("examples/pendulum.mbs -v");
  EXPECT_EQ(r.code, 0);
  for (const char* p : {"pass parse", "pass flatten", "pass dae", "pass kernels", "pass codegen"})
    EXPECT_NE(r.err.find(p), std::string::npos) << p << "\n" << r.err;
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
