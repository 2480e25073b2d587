// The line editing of `mbsc repl`: a prompt with editing keys, history (kept in a file across
// sessions), Tab completion and Ctrl-C that drops the line being edited, over libedit.
#pragma once

#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mbs::repl {

// Candidates for the word under the cursor: `line` is the text before the cursor, `word_start`
// the index where the current word begins (after the last of kWordBreaks). Returns full
// replacement words.
using Completer = std::function<std::vector<std::string>(std::string_view line, size_t word_start)>;

// The characters that end a word for completion: `set m1.s=2` completes `m1.s` and `2`.
inline constexpr std::string_view kWordBreaks = " \t=,;()";

// Reads lines from a terminal with libedit (emacs keys; Tab completes: to the unique candidate,
// or to the candidates' longest common prefix; when nothing can be extended, a Tab lists them).
// Ctrl-C at the prompt needs rt::install_repl_interrupt_handler(): without it the default action
// ends the process.
class LineEditor {
 public:
  // in/out: a terminal. When either is not one, lines are read plainly from `in` and no prompt is
  // written. history_file: "" = none; else it is read here and rewritten (the last 1000 entries)
  // after each add_history and at destruction.
  LineEditor(const char* program, std::string history_file, std::FILE* in = stdin,
             std::FILE* out = stdout, std::FILE* err = stderr);
  ~LineEditor();
  LineEditor(const LineEditor&) = delete;
  LineEditor& operator=(const LineEditor&) = delete;

  // One line without its newline; std::nullopt at end of input (Ctrl-D on an empty line).
  // Ctrl-C at the prompt abandons the line being edited, moves to a new line and returns "" (it
  // clears rt::g_interrupt_requested, and a request left over from before the call too).
  std::optional<std::string> read_line(const std::string& prompt);
  // Lines with something else than blanks only; a line equal to the previous entry is not added.
  void add_history(const std::string& line);
  std::vector<std::string> history() const;  // oldest first
  void set_completer(Completer c);

  struct State;  // libedit's objects and what its callbacks need

 private:
  std::unique_ptr<State> state_;
};

// File names completing `prefix` ("ex" -> "examples/"; directories get a trailing '/'), sorted.
// Hidden files only when the prefix's last component starts with '.'.
std::vector<std::string> complete_filename(std::string_view prefix);

// The longest common prefix of candidates ("" for none).
std::string common_prefix(const std::vector<std::string>& candidates);

}  // namespace mbs::repl
