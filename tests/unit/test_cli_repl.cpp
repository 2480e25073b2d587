// The REPL as users see it: every tests/repl/*.repl script, fed to `mbsc repl` on stdin, must
// print exactly the transcript in the matching .expected file (stdout and stderr together) and
// exit with its code; every command of `help` appears in some script. Numbers the transcripts
// show are checked against independent values here too (the damped oscillator's closed form).
//
// A script may start with comment lines `# args: ...` (after `mbsc repl`) and `# exit: N`
// (default 0). `@TMP@` in a script is a fresh directory for the files it writes; transcripts show
// it as @TMP@. Set MBS_UPDATE_EXPECTED=1 to write the .expected files (then read them: they are
// the specification).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_util.h"

namespace fs = std::filesystem;
using mbs::clitest::slurp;

namespace {

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size())
    s.replace(at, from.size(), to);
}

struct ScriptRun {
  int code = -1;
  std::string transcript;  // stdout and stderr as one stream, normalised
  std::string tmp;         // the directory the script wrote into
};

// Runs `mbsc repl ARGS` with `script` on stdin in the source directory.
ScriptRun run_script(const std::string& script, const std::string& args, const std::string& name) {
  ScriptRun r;
  r.tmp = mbs::clitest::tmp("repl_" + name);
  fs::remove_all(r.tmp);
  fs::create_directories(r.tmp);
  std::string text = script;
  replace_all(text, "@TMP@", r.tmp);
  const std::string in = r.tmp + "/script.in", out = r.tmp + "/transcript.txt";
  std::ofstream(in) << text;
  const std::string cmd = std::string("cd '") + MBS_SOURCE_DIR + "' && MBS_HISTORY=/dev/null '" +
                          MBS_MBSC_PATH + "' repl " + args + " <'" + in + "' >'" + out + "' 2>&1";
  const int status = std::system(cmd.c_str());
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.transcript = slurp(out);
  replace_all(r.transcript, r.tmp, "@TMP@");
  replace_all(r.transcript, std::string(MBS_SOURCE_DIR) + "/", "");
  // wall-clock times differ from run to run (no std::regex: GCC 12 warns inside it under ASan)
  const std::string wall = "wall time [s]";
  for (size_t at = 0; (at = r.transcript.find(wall, at)) != std::string::npos;) {
    at += wall.size();
    r.transcript.replace(at, r.transcript.find('\n', at) - at, " <t>");
  }
  return r;
}

std::string header_value(const std::string& script, const std::string& key) {
  std::istringstream in(script);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# " + key + ":", 0) == 0) {
      std::string v = line.substr(key.size() + 3);
      return v.substr(std::min(v.find_first_not_of(' '), v.size()));
    }
  }
  return "";
}

std::vector<fs::path> scripts() {
  std::vector<fs::path> all;
  for (const auto& e : fs::directory_iterator(fs::path(MBS_SOURCE_DIR) / "tests" / "repl"))
    if (e.path().extension() == ".repl") all.push_back(e.path());
  std::sort(all.begin(), all.end());
  return all;
}

}  // namespace

TEST(Repl, EveryScriptPrintsItsTranscript) {
  const auto all = scripts();
  ASSERT_GE(all.size(), 3u);
  for (const auto& path : all) {
    SCOPED_TRACE(path.filename().string());
    const std::string script = slurp(path.string());
    const std::string code = header_value(script, "exit");
    ScriptRun r = run_script(script, header_value(script, "args"), path.stem().string());
    EXPECT_EQ(r.code, code.empty() ? 0 : std::stoi(code)) << r.transcript;
    fs::path expected = path;
    expected.replace_extension(".expected");
    if (std::getenv("MBS_UPDATE_EXPECTED")) std::ofstream(expected) << r.transcript;
    ASSERT_TRUE(fs::exists(expected)) << "no " << expected << "; MBS_UPDATE_EXPECTED=1 writes it";
    EXPECT_EQ(r.transcript, slurp(expected.string()));
  }
}

TEST(Repl, EveryCommandIsCoveredByAScript) {
  ScriptRun help = run_script("help\n", "", "help");
  ASSERT_EQ(help.code, 0) << help.transcript;
  std::string all;
  for (const auto& path : scripts()) all += "\n" + slurp(path.string());
  std::istringstream in(help.transcript);
  std::string line;
  int commands = 0;
  while (std::getline(in, line)) {
    if (line.rfind("  ", 0) != 0) continue;
    const std::string name = line.substr(2, line.find(' ', 2) - 2);
    ++commands;
    EXPECT_NE(all.find("\n" + name), std::string::npos) << "no script uses '" << name << "'";
  }
  EXPECT_GE(commands, 24);
}

// The values `val` reads (interpolated between output points) against the closed-form
// solution of the damped oscillator m x'' + d x' + k x = 0, x(0) = 0.1, x'(0) = 0.
TEST(Repl, ValuesMatchTheClosedFormOfTheOscillator) {
  ScriptRun r = run_script(
      "set k = 400, d = 2\nsimulate 1 h=1e-4 rho_inf=1\nval x 0.5\nval x 0.12345\nval v 0.77\n",
      "examples/mass_spring_damper.mbs", "closed_form");
  ASSERT_EQ(r.code, 0) << r.transcript;
  const double m = 1, k = 400, d = 2, x0 = 0.1;
  const double w = std::sqrt(k / m), zeta = d / (2 * std::sqrt(k * m));
  const double wd = w * std::sqrt(1 - zeta * zeta), a = zeta * w;
  const auto x = [&](double t) {
    return std::exp(-a * t) * (x0 * std::cos(wd * t) + a * x0 / wd * std::sin(wd * t));
  };
  const auto v = [&](double t) { return -std::exp(-a * t) * x0 * (w * w / wd) * std::sin(wd * t); };
  const auto read = [&](const std::string& label) {
    const size_t at = r.transcript.find(label + " = ");
    EXPECT_NE(at, std::string::npos) << label << "\n" << r.transcript;
    return at == std::string::npos ? 0.0 : std::stod(r.transcript.substr(at + label.size() + 3));
  };
  // six significant digits are printed; h = 1e-4 and linear interpolation between output
  // points (error h^2/8 |x''| ~ 5e-8) keep the numbers within 1e-5
  EXPECT_NEAR(read("x(0.5)"), x(0.5), 1e-5);
  EXPECT_NEAR(read("x(0.12345)"), x(0.12345), 1e-5);
  EXPECT_NEAR(read("v(0.77)"), v(0.77), 2e-4);
}

// The files the basics script writes: a result file that reads back, plots of the named series.
TEST(Repl, SaveAndPlotWriteRealFiles) {
  ScriptRun r = run_script(
      "set k = 400\nsimulate 1\nsave @TMP@/r.csv\nplot x v to @TMP@/r.svg\nplot v vs x to "
      "@TMP@/r.png\n",
      "examples/mass_spring_damper.mbs", "files");
  ASSERT_EQ(r.code, 0) << r.transcript;
  const auto rows = mbs::clitest::read_csv(r.tmp + "/r.csv");
  ASSERT_EQ(rows.size(), 1002u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"time", "x", "v"}));
  EXPECT_EQ(rows[1][1], "0.1");
  const std::string svg = slurp(r.tmp + "/r.svg");
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  // both series, named with their units
  EXPECT_NE(svg.find(">x [m]<"), std::string::npos);
  EXPECT_NE(svg.find(">v [m/s]<"), std::string::npos);
  EXPECT_GT(svg.size(), 5000u);
  const std::string png = slurp(r.tmp + "/r.png");
  ASSERT_GT(png.size(), 1000u);
  EXPECT_EQ(png.substr(1, 3), "PNG");
}

// A parameter changed at run time and the same change made by a new compile (--set) give the
// same result file: the REPL's session is the command line's.
TEST(Repl, SetMatchesTheCommandLine) {
  ScriptRun r = run_script("set k = 250, x = 0.3\nsimulate 0.5\nsave @TMP@/repl.csv\n",
                           "examples/mass_spring_damper.mbs", "same");
  ASSERT_EQ(r.code, 0) << r.transcript;
  const std::string cli = r.tmp + "/cli.csv";
  auto c = mbs::clitest::mbsc(
      "examples/mass_spring_damper.mbs --simulate --t-end 0.5 --set k=250 "
      "--start x=0.3 --output '" +
      cli + "'");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(slurp(r.tmp + "/repl.csv"), slurp(cli));
}

// docs/repl.md shows a real session: its commands, run again, print its transcript.
TEST(Repl, TheSessionInTheDocumentationIsReal) {
  const std::string doc = slurp(std::string(MBS_SOURCE_DIR) + "/docs/repl.md");
  const size_t begin = doc.find("```repl\n");
  ASSERT_NE(begin, std::string::npos);
  const size_t end = doc.find("```\n", begin + 8);
  const std::string block = doc.substr(begin + 8, end - begin - 8);
  std::istringstream in(block);
  std::string line, args, script;
  while (std::getline(in, line)) {
    if (line.rfind("> ", 0) != 0) continue;
    if (args.empty() && line.rfind("> load ", 0) == 0) {
      args = line.substr(7);
      continue;
    }
    script += line.substr(2) + "\n";
  }
  ASSERT_FALSE(args.empty()) << "the session starts with the load of `mbsc repl FILE`";
  // files the session writes go to the test's directory
  replace_all(script, " to msd.", " to @TMP@/msd.");
  ScriptRun r = run_script(script, args, "docs");
  ASSERT_EQ(r.code, 0) << r.transcript;
  replace_all(r.transcript, "@TMP@/", "");
  EXPECT_EQ(r.transcript, block);
}

// `inverse` and `study` are the command line's runs over the REPL's session: the same files.
TEST(Repl, InverseDynamicsWritesWhatTheCommandLineWrites) {
  ScriptRun r = run_script("inverse 0.02 output=@TMP@/inverse_repl.csv\nlast slew.tau\n",
                           "examples/mechanics/hybrid_manipulator.mbs", "inverse");
  ASSERT_EQ(r.code, 0) << r.transcript;
  EXPECT_NE(r.transcript.find("slew.tau"), std::string::npos) << r.transcript;
  auto c = mbs::clitest::mbsc(
      "examples/mechanics/hybrid_manipulator.mbs --inverse-dynamics "
      "--t-end 0.02 --output '" +
      r.tmp + "/inverse_cli.csv'");
  ASSERT_EQ(c.code, 0) << c.err;
  const std::string repl_rows = slurp(r.tmp + "/inverse_repl.csv");
  EXPECT_GT(repl_rows.size(), 100u);
  EXPECT_EQ(repl_rows, slurp(r.tmp + "/inverse_cli.csv"));
}

TEST(Repl, AStudyWritesWhatTheCommandLineWrites) {
  ScriptRun r = run_script(
      "option t_end 0.5\nstudy --vary k=100:400:4 --vary d=0.1,1 --objective \"max(x)\" "
      "--objective \"integral(x^2)\" --output @TMP@/study_repl.csv\n",
      "examples/mass_spring_damper.mbs", "study");
  ASSERT_EQ(r.code, 0) << r.transcript;
  auto c = mbs::clitest::mbsc(
      "examples/mass_spring_damper.mbs --t-end 0.5 --vary k=100:400:4 --vary d=0.1,1 "
      "--objective 'max(x)' --objective 'integral(x^2)' --output '" +
      r.tmp + "/study_cli.csv'");
  ASSERT_EQ(c.code, 0) << c.err;
  const std::string rows = slurp(r.tmp + "/study_repl.csv");
  EXPECT_NE(rows.find("integral(x^2)"), std::string::npos) << rows;
  EXPECT_EQ(rows, slurp(r.tmp + "/study_cli.csv"));
}

// `reload` compiles again only when the file changed, and keeps the values set and the options:
// the commands come through a pipe, and the file is edited once the REPL has answered the first
// ones (the shell waits for that answer, at most 60 s).
TEST(Repl, ReloadSeesTheChangedFileAndKeepsTheValuesSet) {
  const std::string dir = mbs::clitest::tmp("reload");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string model = dir + "/decay.mbs", out = dir + "/out.txt";
  std::ofstream(model) << "model Decay\n  parameter Real a = 1;\n  parameter Real b = 1;\n"
                          "  Real x(start = 1);\nequation\n  der(x) = -a*b*x;\nend Decay;\n";
  const std::string cmd =
      "(printf 'set a = 2\\nreload\\nsimulate 1\\nval x 1\\n'; "
      "i=0; while ! grep -q 'x(1) =' '" +
      out +
      "' && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; "
      "sed -i 's/b = 1/b = 1.5/' '" +
      model +
      "'; "
      "printf 'reload\\nparams\\nsimulate 1\\nval x 1\\n') | MBS_HISTORY=/dev/null '" +
      MBS_MBSC_PATH + "' repl '" + model + "' >'" + out + "' 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(out);
  const std::string t = slurp(out);
  EXPECT_NE(t.find("has not changed"), std::string::npos) << t;
  EXPECT_NE(t.find("x(1) = 0.1353"), std::string::npos) << t;  // e^-2 = 0.135335
  EXPECT_NE(t.find("reloaded Decay"), std::string::npos) << t;
  EXPECT_NE(t.find("x(1) = 0.0497"), std::string::npos) << t;  // e^-3 = 0.049787: a = 2 kept
}
