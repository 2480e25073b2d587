// The REPL's line editor (tools/repl/LineEditor): completion helpers and history directly, the
// keys on a real terminal through tests/tools/line_editor_demo run on a pseudo-terminal.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "pty_util.h"
#include "runtime/io/Interrupt.h"
#include "tools/repl/LineEditor.h"

namespace {

using mbs::clitest::slurp;
using mbs::clitest::tmp;
using mbs::ptytest::PtyOptions;
using mbs::ptytest::PtyProcess;
using mbs::repl::common_prefix;
using mbs::repl::complete_filename;
using mbs::repl::LineEditor;
using Strings = std::vector<std::string>;
namespace fs = std::filesystem;

// A fresh directory: models/ (a.mbs), notes.txt, .hidden
std::string make_tree(const std::string& name) {
  const std::string dir = tmp(name);
  fs::remove_all(dir);
  fs::create_directories(dir + "/models");
  std::ofstream(dir + "/models/a.mbs") << "model A end A;\n";
  std::ofstream(dir + "/notes.txt") << "\n";
  std::ofstream(dir + "/.hidden") << "\n";
  return dir;
}

// The demo on a terminal in `dir`, with its history in `history` ("" = none).
PtyOptions demo_options(const std::string& dir, const std::string& history = "") {
  PtyOptions o;
  o.dir = dir;
  o.env = {"TERM=xterm", "LINE_EDITOR_DEMO_HISTORY=" + history};
  return o;
}

// At a new prompt, with the editor waiting for keys.
bool at_prompt(PtyProcess& demo) {
  return demo.wait_for("demo> ") && demo.wait_for_raw_mode();
}

}  // namespace

TEST(CommonPrefix, OfCandidates) {
  EXPECT_EQ(common_prefix({}), "");
  EXPECT_EQ(common_prefix({"simulate"}), "simulate");
  EXPECT_EQ(common_prefix({"simulate", "simulation"}), "simulat");
  EXPECT_EQ(common_prefix({"simulation", "simulate", "sim"}), "sim");
  EXPECT_EQ(common_prefix({"set", "show", "x"}), "");
  // never half of a UTF-8 character: "é" is C3 A9, "è" C3 A8
  EXPECT_EQ(common_prefix({"t\xC3\xA9", "t\xC3\xA8"}), "t");
}

TEST(CompleteFilename, DirectoriesGetASlashHiddenFilesOnlyWhenAsked) {
  const std::string dir = make_tree("complete");
  EXPECT_EQ(complete_filename(dir + "/mo"), Strings{dir + "/models/"});
  EXPECT_EQ(complete_filename(dir + "/models/"), Strings{dir + "/models/a.mbs"});
  EXPECT_EQ(complete_filename(dir + "/"), (Strings{dir + "/models/", dir + "/notes.txt"}));
  EXPECT_EQ(complete_filename(dir + "/."), Strings{dir + "/.hidden"});
  EXPECT_TRUE(complete_filename(dir + "/zz").empty());
  EXPECT_TRUE(complete_filename(dir + "/no-such-dir/x").empty());
}

// Not on a terminal (a file here): plain lines, no prompt written, history still kept.
TEST(LineEditor, PlainLinesAndHistoryWithoutATerminal) {
  std::FILE* in = std::tmpfile();
  std::FILE* out = std::tmpfile();
  ASSERT_TRUE(in && out);
  std::fputs("first\nsecond", in);
  std::rewind(in);
  {
    LineEditor editor("test", "", in, out, stderr);
    EXPECT_EQ(editor.read_line("> "), "first");
    EXPECT_EQ(editor.read_line("> "), "second");
    EXPECT_EQ(editor.read_line("> "), std::nullopt);
    for (const char* line : {"a", "a", "", "  ", "b", "a"}) editor.add_history(line);
    EXPECT_EQ(editor.history(), (Strings{"a", "b", "a"}));
  }
  EXPECT_EQ(std::ftell(out), 0);  // no prompt
  std::fclose(in);
  std::fclose(out);
}

TEST(LineEditor, HistoryFileKeepsTheLinesAcrossEditors) {
  const std::string file = tmp("history_file");
  fs::remove(file);
  std::FILE* none = std::tmpfile();  // not a terminal, even when the tests run on one
  ASSERT_TRUE(none);
  {
    LineEditor editor("test", file, none, none, stderr);
    editor.add_history("load models/a.mbs");
    editor.add_history("with\ttab and \\ backslash");
  }
  LineEditor again("test", file, none, none, stderr);
  EXPECT_EQ(again.history(), (Strings{"load models/a.mbs", "with\ttab and \\ backslash"}));
  std::fclose(none);
}

TEST(LineEditor, AFileThatIsNoHistoryIsLeftAlone) {
  const std::string file = tmp("not_a_history");
  std::ofstream(file) << "precious\n";
  std::FILE* none = std::tmpfile();
  std::FILE* err = std::tmpfile();
  ASSERT_TRUE(none && err);
  {
    LineEditor editor("test", file, none, none, err);
    editor.add_history("x");
  }
  EXPECT_EQ(slurp(file), "precious\n");
  EXPECT_GT(std::ftell(err), 0);  // and it said so
  std::fclose(none);
  std::fclose(err);
}

// In the REPL every Ctrl-C only sets the flag, also after a run installed its own handler (the
// first SIGINT would otherwise restore the default action and the second end the process).
TEST(ReplInterruptHandler, EveryCtrlCSetsTheFlagAndTheProcessGoesOn) {
  mbs::rt::install_repl_interrupt_handler();
  mbs::rt::install_interrupt_handler();  // as simulate_to_csv does
  for (int press = 0; press < 3; ++press) {
    mbs::rt::clear_interrupt();
    ASSERT_EQ(::raise(SIGINT), 0);
    EXPECT_TRUE(mbs::rt::interrupt_requested());
  }
  mbs::rt::clear_interrupt();
}

// Each test runs the demo on a terminal: "demo> " prompts, "got: <line>" answers.
TEST(LineEditorOnATerminal, TabCompletesAUniqueWord) {
  PtyProcess demo({MBS_LINE_EDITOR_DEMO_PATH}, demo_options(make_tree("tab_unique")));
  ASSERT_TRUE(demo.started());
  ASSERT_TRUE(at_prompt(demo)) << demo.screen();
  demo.type("he\t");
  ASSERT_TRUE(demo.wait_for("lp ")) << demo.screen();
  demo.type("me\r");
  EXPECT_TRUE(demo.wait_for("got: help me\r\n")) << demo.screen();
  ASSERT_TRUE(at_prompt(demo)) << demo.screen();
  demo.type("./mo\t");
  ASSERT_TRUE(demo.wait_for("dels/")) << demo.screen();
  demo.type("\t\r");
  EXPECT_TRUE(demo.wait_for("got: ./models/a.mbs \r\n")) << demo.screen();
  ASSERT_TRUE(at_prompt(demo)) << demo.screen();
  demo.type("\x04");
  EXPECT_EQ(demo.wait_exit(), 0) << demo.screen();
}

TEST(LineEditorOnATerminal, TabCompletesTheCommonPrefixThenLists) {
  PtyProcess demo({MBS_LINE_EDITOR_DEMO_PATH}, demo_options(make_tree("tab_prefix")));
  ASSERT_TRUE(demo.started());
  ASSERT_TRUE(at_prompt(demo)) << demo.screen();
  demo.type("sim\t");
  ASSERT_TRUE(demo.wait_for("ulat")) << demo.screen();
  // the second Tab cannot extend "simulat": the candidates below, then the prompt again
  demo.type("\t");
  ASSERT_TRUE(demo.wait_for("\nsimulate    simulation\r\n")) << demo.screen();
  ASSERT_TRUE(demo.wait_for("demo> simulat")) << demo.screen();
  demo.type("ion\r");
  EXPECT_TRUE(demo.wait_for("got: simulation\r\n")) << demo.screen();
  ASSERT_TRUE(at_prompt(demo)) << demo.screen();
  // nothing to extend: the first Tab lists
  demo.type("s\t");
  EXPECT_TRUE(demo.wait_for("\nset         show        simulate    simulation\r\n"))
      << demo.screen();
  ASSERT_TRUE(demo.wait_for("demo> s")) << demo.screen();
  demo.type("how\r");
  EXPECT_TRUE(demo.wait_for("got: show\r\n")) << demo.screen();
  ASSERT_TRUE(at_prompt(demo)) << demo.screen();
  demo.type("\x04");
  EXPECT_EQ(demo.wait_exit(), 0) << demo.screen();
}

TEST(LineEditorOnATerminal, ArrowUpRecallsTheLineOfTheLastSession) {
  const std::string dir = make_tree("history");
  const std::string history = tmp("demo_history");
  fs::remove(history);
  {
    PtyProcess demo({MBS_LINE_EDITOR_DEMO_PATH}, demo_options(dir, history));
    ASSERT_TRUE(demo.started());
    ASSERT_TRUE(at_prompt(demo)) << demo.screen();
    demo.type("load models/a.mbs\r");
    ASSERT_TRUE(demo.wait_for("got: load models/a.mbs\r\n")) << demo.screen();
    ASSERT_TRUE(at_prompt(demo)) << demo.screen();
    demo.type("\x04");
    ASSERT_EQ(demo.wait_exit(), 0) << demo.screen();
  }
  PtyProcess demo({MBS_LINE_EDITOR_DEMO_PATH}, demo_options(dir, history));
  ASSERT_TRUE(demo.started());
  ASSERT_TRUE(at_prompt(demo)) << demo.screen();
  demo.type("\x1b[A");
  ASSERT_TRUE(demo.wait_for("load models/a.mbs")) << demo.screen();
  demo.type("\r");
  EXPECT_TRUE(demo.wait_for("got: load models/a.mbs\r\n")) << demo.screen();
  ASSERT_TRUE(at_prompt(demo)) << demo.screen();
  demo.type("\x04");
  EXPECT_EQ(demo.wait_exit(), 0) << demo.screen();
}

TEST(LineEditorOnATerminal, CtrlCDropsTheLineAndTheProgramGoesOn) {
  PtyProcess demo({MBS_LINE_EDITOR_DEMO_PATH}, demo_options(make_tree("ctrl_c")));
  ASSERT_TRUE(demo.started());
  ASSERT_TRUE(at_prompt(demo)) << demo.screen();
  demo.type("abandoned");
  ASSERT_TRUE(demo.wait_for("abandoned")) << demo.screen();
  demo.interrupt();
  ASSERT_TRUE(demo.wait_for("\r\ngot: \r\n")) << demo.screen();
  ASSERT_TRUE(at_prompt(demo)) << demo.screen();
  // a second time, on an empty line
  demo.interrupt();
  ASSERT_TRUE(demo.wait_for("\r\ngot: \r\n")) << demo.screen();
  ASSERT_TRUE(at_prompt(demo)) << demo.screen();
  demo.type("kept\r");
  EXPECT_TRUE(demo.wait_for("got: kept\r\n")) << demo.screen();
  EXPECT_EQ(demo.screen().find("got: abandoned"), std::string::npos) << demo.screen();
  ASSERT_TRUE(at_prompt(demo)) << demo.screen();
  demo.type("\x04");
  EXPECT_EQ(demo.wait_exit(), 0) << demo.screen();
}

// Ctrl-C while the line editor is not waiting for a key (the completer of "slow" takes a
// second) still ends the line at the first press, with no further key.
TEST(LineEditorOnATerminal, CtrlCDuringACompletionNeedsOnePress) {
  PtyProcess demo({MBS_LINE_EDITOR_DEMO_PATH}, demo_options(make_tree("ctrl_c_busy")));
  ASSERT_TRUE(demo.started());
  ASSERT_TRUE(at_prompt(demo)) << demo.screen();
  demo.type("slow");
  ASSERT_TRUE(demo.wait_for("slow")) << demo.screen();
  demo.type("\t");
  ASSERT_TRUE(demo.wait_for("[completing]")) << demo.screen();
  demo.interrupt();
  ASSERT_TRUE(demo.wait_for("got: \r\n")) << demo.screen();
  ASSERT_TRUE(at_prompt(demo)) << demo.screen();
  demo.type("\x04");
  EXPECT_EQ(demo.wait_exit(), 0) << demo.screen();
}

TEST(LineEditorOnATerminal, CtrlDOnAnEmptyLineEnds) {
  PtyProcess demo({MBS_LINE_EDITOR_DEMO_PATH}, demo_options(make_tree("ctrl_d")));
  ASSERT_TRUE(demo.started());
  ASSERT_TRUE(at_prompt(demo)) << demo.screen();
  demo.type("\x04");
  EXPECT_EQ(demo.wait_exit(), 0) << demo.screen();
  EXPECT_NE(demo.screen().find("bye"), std::string::npos) << demo.screen();
}

// Not a terminal: the lines as they come, no prompt.
TEST(LineEditorDemo, ReadsPlainLinesFromAPipe) {
  const std::string out = tmp("demo_pipe.txt");
  const std::string cmd = std::string("printf 'one\\ntwo' | LINE_EDITOR_DEMO_HISTORY= '") +
                          MBS_LINE_EDITOR_DEMO_PATH + "' >'" + out + "' 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(slurp(out), "got: one\ngot: two\nbye\n");
}
