// The interactive mbs (`mbsc repl`): commands over one mbs::Session — load a model, set
// parameters and start values, choose options from the one option table, run the analyses and
// studies, and look at the last result (values, tables, plots, statistics). The Repl executes
// one command line at a time and never ends on an error: a model error, a solver failure or a bad
// command is reported and the session goes on (the caller decides whether a script stops).
//
//   mbs::repl::Repl repl(options, std::cout, std::cerr, progress);
//   repl.execute("load examples/pendulum.mbs");
//   repl.execute("set L = 2");
//   repl.execute("simulate 5");
//   repl.execute("val phi 2.5");
//
// The line editing (history, completion, Ctrl-C at the prompt) is LineEditor's; complete()
// gives it the candidates. docs/repl.md documents every command.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/driver/Session.h"
#include "runtime/io/Progress.h"
#include "runtime/io/ResultTable.h"
#include "runtime/solvers/Failure.h"
#include "runtime/solvers/Statistics.h"

namespace mbs::repl {

// The outcome of a command; a script stops at the first that is not Ok (unless told to keep
// going) with exit_code().
enum class Status : uint8_t { Ok, Usage, ModelError, SolverFailure, Interrupted, Quit };
// The exit code of mbsc for a status (the same codes as the command line: docs/cli.md).
int exit_code(Status s);

struct ReplOptions {
  std::vector<std::string> include_dirs;  // -I
  std::string cache_dir;                  // "" = the default object cache, "off" = none
  bool verbose = false;                   // pass times and statistics tables
};

class Repl {
 public:
  Repl(ReplOptions options, std::ostream& out, std::ostream& err, rt::ProgressSink& progress);
  ~Repl();

  // Executes one line (blank lines and `# comments` do nothing).
  Status execute(const std::string& line);

  // Candidates for the word that starts at word_start of `line` (the text before the cursor):
  // command names, then per command variable and parameter names, option keys, solver names,
  // passes or file names.
  std::vector<std::string> complete(std::string_view line, size_t word_start) const;

  // The prompt: "mbs> ", or "mbs:<model>> " with a model loaded.
  std::string prompt() const;

  // The lines executed in this session, oldest first.
  const std::vector<std::string>& history() const { return history_; }

  struct Command;  // a row of the command table

 private:
  static const std::vector<Command>& commands();
  static const Command* find_command(std::string_view name);
  using Args = std::vector<std::string>;
  Status help(const Args& a);
  Status load(const Args& a);
  Status reload(const Args& a);
  Status models(const Args& a);
  Status emit(const Args& a);
  Status vars(const Args& a);
  Status params(const Args& a);
  Status set(const Args& a);
  Status show(const Args& a);
  Status solver(const Args& a);
  Status option(const Args& a);
  Status simulate(const Args& a);
  Status static_(const Args& a);
  Status eigen(const Args& a);
  Status linearize(const Args& a);
  Status inverse(const Args& a);
  Status study(const Args& a);
  Status val(const Args& a);
  Status last(const Args& a);
  Status table(const Args& a);
  Status stats(const Args& a);
  Status save(const Args& a);
  // the result columns of the run just done, with the parameter values it used
  rt::ResultColumns columns_of_run(const std::string& first);
  Status animate(const Args& a);
  Status plot(const Args& a);
  Status show_history(const Args& a);
  Status quit(const Args& a);

  Status error(Status s, const std::string& message);
  // A failed run: its message, then what was kept of its rows (may be empty).
  Status solver_failure(const rt::FailureRecord& failure, const std::string& kept);
  bool need_model();
  bool need_result();
  // Compiles `options` into a new session with the values set so far; the current session
  // stays when the compile fails.
  Status compile_session(CompileOptions options, std::string_view verb);
  // Applies the values set with `set` to a session (skipping those its compile applied);
  // returns those it has, with a note about the others when `notes`.
  std::vector<std::pair<std::string, double>> apply_values(Session& s, bool notes);
  // The session compiled for inverse dynamics (made on first use, with the values set so far).
  Session* inverse_session();
  // The state to linearise at: "start" (consistent initial state) or "equilibrium" (last static).
  std::optional<std::vector<double>> linearisation_state(const std::string& at, Status& status);
  std::string unit_of(std::string_view column) const;
  std::vector<std::string> names_for_completion() const;

  ReplOptions options_;
  std::ostream& out_;
  std::ostream& err_;
  rt::ProgressSink& progress_;
  std::unique_ptr<Session> session_;
  std::unique_ptr<Session> inverse_session_;
  rt::SolverOptions solver_options_;  // kept across loads
  // the keys of the options set by `option` (the model's experiment annotation does not change
  // them: rt::apply_experiment)
  std::set<std::string> options_given_;
  // the values set with `set`, in order, applied again after a reload
  std::vector<std::pair<std::string, double>> set_values_;
  std::filesystem::file_time_type loaded_time_{};
  rt::ResultTable result_;
  // the parameters set in the session when the last result was made (`animate` compiles with them)
  std::map<std::string, double> result_parameters_;
  std::string result_kind_;  // "simulate", "static", "inverse", or "" (none yet)
  std::optional<rt::Statistics> result_stats_;
  // units, descriptions, aliases and parameters of the last result, for `save FILE.mat`
  rt::ResultColumns result_columns_;
  std::vector<double> equilibrium_;  // the last static equilibrium (symbol vector)
  std::vector<std::string> history_;
};

}  // namespace mbs::repl
