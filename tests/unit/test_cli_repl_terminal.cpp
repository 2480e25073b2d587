// `mbsc repl` on a terminal (a pseudo-terminal the test drives): Tab completion of commands and
// of the model's names, the progress line of a long run, Ctrl-C that stops the run and keeps its
// rows, history that the next session recalls with arrow-up, Ctrl-D; and `mbsc` alone on a
// terminal, which says how to start the REPL.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli_test_util.h"
#include "pty_util.h"

namespace fs = std::filesystem;
using mbs::ptytest::PtyOptions;
using mbs::ptytest::PtyProcess;

namespace {

PtyOptions options(const std::string& history) {
  PtyOptions o;
  o.env = {"MBS_HISTORY=" + history, "TERM=xterm"};
  o.dir = MBS_SOURCE_DIR;
  return o;
}

// The prompt is shown and the editor waits for keys.
bool at_prompt(PtyProcess& p, const std::string& prompt = "mbs:MassSpringDamper> ") {
  return p.wait_for(prompt) && p.wait_for_raw_mode();
}

}  // namespace

TEST(ReplTerminal, CompletionProgressCtrlCAndHistory) {
  const std::string history = mbs::clitest::tmp("repl_history");
  fs::remove(history);
  {
    PtyProcess repl({MBS_MBSC_PATH, "repl", "examples/mass_spring_damper.mbs"}, options(history));
    ASSERT_TRUE(repl.started());
    ASSERT_TRUE(at_prompt(repl)) << repl.screen();
    // a command name
    // (libedit redraws the completed word from the cursor on: "simu", a cursor move, "late ")
    repl.type("simu\t");
    ASSERT_TRUE(repl.wait_for("late ")) << repl.screen();
    repl.type("0.5\r");
    ASSERT_TRUE(repl.wait_for("simulated MassSpringDamper to t = 0.5")) << repl.screen();
    ASSERT_TRUE(at_prompt(repl)) << repl.screen();
    // a parameter's name
    repl.type("show om\t");
    ASSERT_TRUE(repl.wait_for("ega ")) << repl.screen();
    repl.type("\r");
    ASSERT_TRUE(repl.wait_for("parameter omega = 10")) << repl.screen();
    ASSERT_TRUE(at_prompt(repl)) << repl.screen();
    // a long run shows its progress line after a second; Ctrl-C stops it, the rows stay
    repl.type("simulate 100000 h=1e-5\r");
    ASSERT_TRUE(repl.wait_for("steps/s", std::chrono::seconds(60))) << repl.screen();
    repl.interrupt();
    ASSERT_TRUE(repl.wait_for("interrupted at t = ")) << repl.screen();
    ASSERT_TRUE(at_prompt(repl)) << repl.screen();
    repl.type("val x 0\r");
    ASSERT_TRUE(repl.wait_for("x(0) = 0.1")) << repl.screen();
    ASSERT_TRUE(at_prompt(repl)) << repl.screen();
    // an error does not end the session
    repl.type("simulat\r");
    ASSERT_TRUE(repl.wait_for("did you mean 'simulate'")) << repl.screen();
    ASSERT_TRUE(at_prompt(repl)) << repl.screen();
    repl.type("\x04");  // Ctrl-D
    EXPECT_EQ(repl.wait_exit(), 0) << repl.screen();
  }
  // libedit's history file writes a blank as \040
  std::string saved = mbs::clitest::slurp(history);
  for (size_t at; (at = saved.find("\\040")) != std::string::npos;) saved.replace(at, 4, " ");
  EXPECT_NE(saved.find("show omega"), std::string::npos) << saved;
  {
    // the next session recalls the last line of this one
    PtyProcess repl({MBS_MBSC_PATH, "repl", "examples/mass_spring_damper.mbs"}, options(history));
    ASSERT_TRUE(repl.started());
    ASSERT_TRUE(at_prompt(repl)) << repl.screen();
    repl.type("\x1b[A");
    ASSERT_TRUE(repl.wait_for("simulat")) << repl.screen();
    repl.type("e 0.1\r");
    ASSERT_TRUE(repl.wait_for("simulated MassSpringDamper to t = 0.1")) << repl.screen();
    ASSERT_TRUE(at_prompt(repl)) << repl.screen();
    repl.type("quit\r");
    EXPECT_EQ(repl.wait_exit(), 0) << repl.screen();
  }
}

TEST(ReplTerminal, MbscAloneSaysHowToStartTheRepl) {
  PtyProcess mbsc({MBS_MBSC_PATH}, options("/dev/null"));
  ASSERT_TRUE(mbsc.started());
  EXPECT_EQ(mbsc.wait_exit(), 2) << mbsc.screen();
  EXPECT_NE(mbsc.screen().find("mbsc repl"), std::string::npos) << mbsc.screen();
}
