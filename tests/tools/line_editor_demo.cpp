// A tiny program around repl::LineEditor for tests/unit/test_repl_line_editor.cpp, which runs it
// on a pseudo-terminal: it reads lines at the prompt "demo> " and answers each with "got: <line>",
// until the end of input, then says "bye". Words containing '/' complete as file names, the
// others over a fixed list; completing "slow" writes "[completing]" and takes a second.
// $LINE_EDITOR_DEMO_HISTORY names the history file.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "runtime/io/Interrupt.h"
#include "tools/repl/LineEditor.h"

int main() {
  mbs::rt::install_repl_interrupt_handler();
  const char* history = std::getenv("LINE_EDITOR_DEMO_HISTORY");
  mbs::repl::LineEditor editor("line_editor_demo", history ? history : "");
  editor.set_completer([](std::string_view line, size_t word_start) {
    const std::string_view word = line.substr(word_start);
    if (word == "slow") {  // a completer that takes its time: Ctrl-C comes while it runs
      std::fputs("[completing]", stderr);
      std::this_thread::sleep_for(std::chrono::seconds(1));
      return std::vector<std::string>{};
    }
    if (word.find('/') != std::string_view::npos) return mbs::repl::complete_filename(word);
    std::vector<std::string> words;
    for (const char* w : {"help", "set", "show", "simulate", "simulation"})
      if (std::string_view(w).starts_with(word)) words.emplace_back(w);
    return words;
  });
  while (const auto line = editor.read_line("demo> ")) {
    editor.add_history(*line);
    std::printf("got: %s\n", line->c_str());
    std::fflush(stdout);
  }
  std::printf("bye\n");
  return 0;
}
