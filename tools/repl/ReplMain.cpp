#include "tools/repl/ReplMain.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <clocale>
#include <cstdlib>
#include <iostream>
#include <string>

#include "runtime/io/Interrupt.h"
#include "runtime/io/Progress.h"
#include "tools/repl/LineEditor.h"
#include "tools/repl/Repl.h"

namespace mbs::repl {

namespace {

std::string default_history_file() {
  if (const char* f = std::getenv("MBS_HISTORY")) return f;
  if (const char* home = std::getenv("HOME")) return std::string(home) + "/.mbs_history";
  return "";
}

}  // namespace

int repl_command(int argc, char** argv) {
  CLI::App app{"the interactive mbs: load a model, set values, simulate, look at the results",
               "mbsc repl"};
  app.footer(
      "On a terminal: line editing, history (~/.mbs_history, or $MBS_HISTORY), Tab completion; "
      "Ctrl-C stops a run, Ctrl-D quits. With a script on stdin (mbsc repl model.mbs < script) "
      "every command is echoed with its result and the first error ends the script with its exit "
      "code: 1 model error, 2 bad command or usage, 3 solver failure, 130 interrupted.\n"
      "Documentation: docs/repl.md");
  std::string file, model;
  ReplOptions options;
  bool keep_going = false, quiet = false, no_cache = false;
  std::string history = default_history_file();
  app.add_option("file", file, "a model file to load first")->type_name("FILE.mbs");
  app.add_option("model", model, "the model in it (default: the last)")->type_name("MODEL");
  app.add_option("-I", options.include_dirs, "add a directory to the library search path")
      ->type_name("DIR")
      ->allow_extra_args(false);
  app.add_flag("--keep-going", keep_going,
               "a script goes on after an error (the exit code is still the first error's)");
  app.add_flag("-q,--quiet", quiet, "no progress line during long runs");
  app.add_flag("-v,--verbose", options.verbose, "compile and run times");
  app.add_flag("--no-cache", no_cache, "compile without the object cache");
  app.add_option("--history", history, "the history file (\"\" = none)")->type_name("FILE");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  if (no_cache) options.cache_dir = "off";

  const bool interactive = ::isatty(0) && ::isatty(1);
  rt::StderrProgress progress(rt::progress_mode(false, quiet), 3.0, "");
  Repl repl(options, std::cout, std::cerr, progress);
  rt::install_repl_interrupt_handler();

  int first_error = 0;
  // Runs one line; true when the session ends here.
  const auto run = [&](const std::string& line) {
    const Status s = repl.execute(line);
    if (s == Status::Quit) return true;
    if (s != Status::Ok && first_error == 0) first_error = exit_code(s);
    return !interactive && s != Status::Ok && !keep_going;
  };
  if (!file.empty()) {
    std::string load = "load \"" + file + "\"";
    if (!model.empty()) load += " " + model;
    if (!interactive) std::cout << "> " << load << "\n";
    if (run(load)) return first_error;
  }
  if (!interactive) {
    std::string line;
    while (std::getline(std::cin, line)) {
      const auto first = line.find_first_not_of(" \t\r");
      if (first == std::string::npos || line[first] == '#') continue;
      std::cout << "> " << line.substr(first) << "\n";
      if (run(line)) break;
    }
    // a Ctrl-C while waiting for the next line ends the script like one during a run
    if (first_error == 0 && rt::interrupt_requested()) return exit_code(Status::Interrupted);
    return first_error;
  }
  // libedit reads multibyte characters (a name or a file in UTF-8) only in the user's locale;
  // numbers are parsed by strtod, so only the character classes are taken from it
  std::setlocale(LC_CTYPE, "");
  LineEditor editor("mbsc", history);
  editor.set_completer(
      [&](std::string_view line, size_t word_start) { return repl.complete(line, word_start); });
  std::cout << "mbs " << MBS_VERSION << ": `help` lists the commands, Ctrl-D quits\n";
  while (auto line = editor.read_line(repl.prompt())) {
    if (line->find_first_not_of(" \t") == std::string::npos) continue;
    editor.add_history(*line);
    if (run(*line)) break;
  }
  std::cout << "\n";
  return 0;
}

}  // namespace mbs::repl
