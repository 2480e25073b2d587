// mbs::repl::Repl as a library: what Tab completes after each command, statuses and their exit
// codes, and that a command's failure leaves the session usable. (The transcripts of whole
// sessions are tested through mbsc in test_cli_repl.cpp.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/io/Progress.h"
#include "tests/unit/mat4_reader.h"
#include "tools/repl/Repl.h"

using mbs::repl::Repl;
using mbs::repl::Status;

namespace {

struct Fixture {
  std::ostringstream out, err;
  mbs::rt::StderrProgress progress{mbs::rt::StderrProgress::Mode::Off, 1.0};
  Repl repl{{}, out, err, progress};
  Fixture() { EXPECT_EQ(::chdir(MBS_SOURCE_DIR), 0); }
  std::vector<std::string> complete(const std::string& line) {
    const size_t start =
        line.find_last_of(" =,") == std::string::npos ? 0 : line.find_last_of(" =,") + 1;
    return repl.complete(line, start);
  }
};

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

TEST(ReplCommands, CompletionFollowsTheCommand) {
  Fixture f;
  const auto all = f.complete("");
  EXPECT_GE(all.size(), 24u);
  EXPECT_TRUE(has(all, "simulate"));
  EXPECT_EQ(f.complete("pa"), std::vector<std::string>{"params"});
  EXPECT_TRUE(f.complete("set k").empty()) << "no model loaded: no names";
  ASSERT_EQ(f.repl.execute("load examples/mass_spring_damper.mbs"), Status::Ok) << f.err.str();
  EXPECT_EQ(f.complete("set k"), std::vector<std::string>{"k"});
  EXPECT_TRUE(has(f.complete("show "), "omega"));
  EXPECT_TRUE(has(f.complete("val "), "x"));
  EXPECT_EQ(f.complete("solver dop"), std::vector<std::string>{"dopri5"});
  EXPECT_TRUE(has(f.complete("option "), "rho-inf"));
  EXPECT_TRUE(f.complete("option h ").empty()) << "a value follows the key";
  EXPECT_TRUE(has(f.complete("simulate 1 rho"), "rho-inf="));
  EXPECT_EQ(f.complete("emit da"), std::vector<std::string>{"dae"});
  EXPECT_EQ(f.complete("help sta"), (std::vector<std::string>{"static", "stats"}));
  EXPECT_TRUE(has(f.complete("load exam"), "examples/"));
  EXPECT_TRUE(f.complete("stats ").empty());
  EXPECT_TRUE(f.complete("nonsense ").empty());
}

TEST(ReplCommands, FailuresLeaveTheSessionUsable) {
  Fixture f;
  EXPECT_EQ(f.repl.prompt(), "mbs> ");
  EXPECT_EQ(f.repl.execute("simulate"), Status::Usage);
  EXPECT_EQ(f.repl.execute("load tests/repl/syntax_error.mbs"), Status::ModelError);
  ASSERT_EQ(f.repl.execute("load examples/mass_spring_damper.mbs"), Status::Ok) << f.err.str();
  EXPECT_EQ(f.repl.prompt(), "mbs:MassSpringDamper> ");
  EXPECT_EQ(f.repl.execute("option divergence_limit 0.05"), Status::Ok);
  EXPECT_EQ(f.repl.execute("simulate 1"), Status::SolverFailure);
  EXPECT_EQ(f.repl.execute("load tests/repl/syntax_error.mbs"), Status::ModelError);
  EXPECT_EQ(f.repl.prompt(), "mbs:MassSpringDamper> ") << "the model before stays loaded";
  EXPECT_EQ(f.repl.execute("option divergence_limit 1e100"), Status::Ok);
  EXPECT_EQ(f.repl.execute("simulate 0.1"), Status::Ok) << f.err.str();
  EXPECT_EQ(f.repl.execute("   # a comment"), Status::Ok);
  EXPECT_EQ(f.repl.execute("exit"), Status::Quit);
  EXPECT_EQ(f.repl.history().size(), 9u);
  EXPECT_EQ(mbs::repl::exit_code(Status::Ok), 0);
  EXPECT_EQ(mbs::repl::exit_code(Status::ModelError), 1);
  EXPECT_EQ(mbs::repl::exit_code(Status::Usage), 2);
  EXPECT_EQ(mbs::repl::exit_code(Status::SolverFailure), 3);
  EXPECT_EQ(mbs::repl::exit_code(Status::Interrupted), 130);
}

TEST(ReplCommands, AnInputIsSetLikeAParameterWithoutACompile) {
  Fixture f;
  const std::string file = testing::TempDir() + std::to_string(::getpid()) + "_repl_lag.mbs";
  std::ofstream(file) << "model Lag\n  input Real u(start = 1);\n  Real x(start = 0);\n"
                         "equation\n  der(x) = -x + u;\nend Lag;\n";
  ASSERT_EQ(f.repl.execute("load " + file), Status::Ok) << f.err.str();
  EXPECT_EQ(f.repl.execute("set u = 2"), Status::Ok) << f.err.str();
  EXPECT_EQ(f.out.str().find("used by the compiler"), std::string::npos) << f.out.str();
  EXPECT_EQ(f.repl.execute("solver rk4"), Status::Ok) << f.err.str();
  ASSERT_EQ(f.repl.execute("simulate 1"), Status::Ok) << f.err.str();
  f.out.str("");
  ASSERT_EQ(f.repl.execute("val x"), Status::Ok) << f.err.str();
  EXPECT_NE(f.out.str().find("1.26424"), std::string::npos) << f.out.str();  // 2 (1 - e^-1)
  f.out.str("");
  ASSERT_EQ(f.repl.execute("params"), Status::Ok) << f.err.str();
  EXPECT_NE(f.out.str().find("(input)"), std::string::npos) << f.out.str();
  EXPECT_NE(f.out.str().find("= 2 "), std::string::npos) << f.out.str();
  EXPECT_EQ(f.repl.execute("set uu = 2"), Status::Usage);
  EXPECT_NE(f.err.str().find("did you mean 'u'"), std::string::npos) << f.err.str();
}

TEST(ReplCommands, ABooleanParameterIsSetByTrueOrFalse) {
  // the heavy top switched to its Lie-group form (a structural parameter: a new compile), then
  // integrated by an explicit method, which the quaternion form's constraint refuses
  Fixture f;
  ASSERT_EQ(f.repl.execute("load examples/mechanics/heavy_top.mbs"), Status::Ok) << f.err.str();
  EXPECT_EQ(f.repl.execute("solver dopri5"), Status::Ok) << f.err.str();
  EXPECT_NE(f.repl.execute("simulate 0.1"), Status::Ok);
  EXPECT_EQ(f.repl.execute("set pivot.lie_group = true"), Status::Ok) << f.err.str();
  ASSERT_EQ(f.repl.execute("simulate 0.1"), Status::Ok) << f.err.str();
  f.out.str("");
  ASSERT_EQ(f.repl.execute("val pivot.w[3]"), Status::Ok) << f.err.str();
  EXPECT_NE(f.out.str().find("50"), std::string::npos) << f.out.str();  // the spin is kept
  EXPECT_EQ(f.repl.execute("set pivot.lie_group = maybe"), Status::Usage);
}

TEST(ReplCommands, OptionsHaveTheNamesOfMbscFlagsAndTheOldKeysStillWork) {
  Fixture f;
  EXPECT_EQ(f.repl.execute("option"), Status::Ok);
  EXPECT_NE(f.out.str().find("\n  step "), std::string::npos) << f.out.str();
  EXPECT_NE(f.out.str().find("\n  rho-inf "), std::string::npos) << f.out.str();
  EXPECT_EQ(f.out.str().find("\n  rho_inf "), std::string::npos) << f.out.str();
  EXPECT_TRUE(has(f.complete("option "), "step"));
  EXPECT_TRUE(has(f.complete("option "), "rho-inf"));
  EXPECT_TRUE(has(f.complete("simulate 1 rho"), "rho-inf="));
  EXPECT_EQ(f.repl.execute("option step 0.002"), Status::Ok) << f.err.str();
  EXPECT_EQ(f.repl.execute("option rho-inf 0.5"), Status::Ok) << f.err.str();
  f.out.str("");
  EXPECT_EQ(f.repl.execute("option step"), Status::Ok);
  EXPECT_EQ(f.out.str().rfind("step = 0.002 [s]", 0), 0u) << f.out.str();
  // the old names are aliases of the same options
  EXPECT_EQ(f.repl.execute("option h 0.004"), Status::Ok) << f.err.str();
  EXPECT_EQ(f.repl.execute("option rho_inf 0.6"), Status::Ok) << f.err.str();
  f.out.str("");
  EXPECT_EQ(f.repl.execute("option step"), Status::Ok);
  EXPECT_EQ(f.out.str().rfind("step = 0.004 [s]", 0), 0u) << f.out.str();
  EXPECT_EQ(f.repl.execute("option stepp 1"), Status::Usage);
  EXPECT_NE(f.err.str().find("did you mean 'step'"), std::string::npos) << f.err.str();
}

TEST(ReplCommands, NumbersAreWholeWordsAndTimesFinite) {
  Fixture f;
  ASSERT_EQ(f.repl.execute("load examples/mass_spring_damper.mbs"), Status::Ok) << f.err.str();
  ASSERT_EQ(f.repl.execute("simulate 0.1"), Status::Ok) << f.err.str();
  // a NUL in the line (from a pipe) does not end the number
  EXPECT_EQ(f.repl.execute(std::string("set k = 7\0abc", 13)), Status::Usage);
  EXPECT_NE(f.err.str().find("'7\\x00abc' is not a number"), std::string::npos) << f.err.str();
  f.out.str("");
  EXPECT_EQ(f.repl.execute("params k"), Status::Ok);
  EXPECT_EQ(f.out.str().find("= 7 "), std::string::npos) << "k unchanged\n" << f.out.str();
  EXPECT_EQ(f.repl.execute("val x nan"), Status::Usage);
  EXPECT_NE(f.err.str().find("val: 'nan' is not a finite number"), std::string::npos)
      << f.err.str();
  EXPECT_EQ(f.repl.execute("val x inf"), Status::Usage);
  // an interval so small that the row count overflows an integer is refused, not taken as none
  f.out.str("");
  EXPECT_EQ(f.repl.execute("table x every 1e-300"), Status::Usage);
  EXPECT_NE(f.err.str().find("more than 100000 rows"), std::string::npos) << f.err.str();
  EXPECT_EQ(f.out.str(), "");
  EXPECT_EQ(f.repl.execute("table x to nan"), Status::Usage);
}

// `save FILE.mat [PATTERN...]`: the format follows the extension, the patterns choose the
// columns as mbsc --outputs does, and the parameters of the run are in data_1.
TEST(ReplCommands, SaveWritesMatWithChosenColumns) {
  Fixture f;
  ASSERT_EQ(f.repl.execute("load examples/mass_spring_damper.mbs"), Status::Ok) << f.err.str();
  ASSERT_EQ(f.repl.execute("set k = 50"), Status::Ok) << f.err.str();
  ASSERT_EQ(f.repl.execute("simulate 0.01"), Status::Ok) << f.err.str();
  const std::string path = testing::TempDir() + std::to_string(::getpid()) + "_save.mat";
  ASSERT_EQ(f.repl.execute("save " + path + " x"), Status::Ok) << f.err.str();
  const auto file = mbs::mat4test::read(path);
  const auto& name = file.matrices.at("name");
  const auto& info = file.matrices.at("dataInfo");
  EXPECT_EQ(name.column_text(0), "time");
  EXPECT_EQ(name.column_text(1), "x");
  EXPECT_EQ(file.matrices.at("description").column_text(1), "position [m]");
  bool k_found = false;
  for (int32_t j = 2; j < name.cols; ++j) {
    if (name.column_text(j) != "k") continue;
    k_found = true;
    EXPECT_EQ(info.at(0, j), 1);
    EXPECT_EQ(file.matrices.at("data_1").at(static_cast<int32_t>(info.at(1, j)) - 1, 0), 50);
  }
  EXPECT_TRUE(k_found);
  EXPECT_EQ(file.matrices.at("data_2").rows, 2);
  std::remove(path.c_str());
  f.err.str("");
  EXPECT_EQ(f.repl.execute("save " + path + " x.v"), Status::Usage);
  EXPECT_NE(f.err.str().find("no result column 'x.v'"), std::string::npos) << f.err.str();
}

// animate: the last result drawn at the parameter values of its run, not those set after it.
TEST(ReplCommands, AnimateDrawsTheLastResultAtItsRunsParameters) {
  Fixture f;
  const std::string dir = testing::TempDir() + std::to_string(::getpid());
  const std::string a = dir + "_a.gltf", b = dir + "_b.gltf", c = dir + "_c.gltf";
  auto slurp = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  ASSERT_EQ(f.repl.execute("load examples/mechanics/chain.mbs"), Status::Ok) << f.err.str();
  EXPECT_EQ(f.repl.execute("animate " + a), Status::Usage) << "no result yet";
  ASSERT_EQ(f.repl.execute("simulate 0.1"), Status::Ok) << f.err.str();
  ASSERT_EQ(f.repl.execute("animate " + a), Status::Ok) << f.err.str();
  ASSERT_EQ(f.repl.execute("set L=0.3"), Status::Ok) << f.err.str();
  ASSERT_EQ(f.repl.execute("animate " + b + " fps=60"), Status::Ok) << f.err.str();
  EXPECT_GT(slurp(a).size(), 1000u);
  EXPECT_TRUE(slurp(a) == slurp(b));
  ASSERT_EQ(f.repl.execute("simulate 0.1"), Status::Ok) << f.err.str();
  ASSERT_EQ(f.repl.execute("animate " + c), Status::Ok) << f.err.str();
  EXPECT_FALSE(slurp(a) == slurp(c));  // links of 0.3 m
  EXPECT_EQ(f.repl.execute("animate " + dir + ".png"), Status::Usage);
}
