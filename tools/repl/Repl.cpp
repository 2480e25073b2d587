#include "tools/repl/Repl.h"

#include <fmt/format.h>
#include <fnmatch.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <ostream>
#include <sstream>

#include "compiler/diag/Diagnostics.h"
#include "compiler/syntax/Parser.h"
#include "runtime/analysis/Linearize.h"
#include "runtime/analysis/Modes.h"
#include "runtime/anim/Animation.h"
#include "runtime/invdyn/InverseDynamics.h"
#include "runtime/io/ColumnSelect.h"
#include "runtime/io/InputFile.h"
#include "runtime/io/Interrupt.h"
#include "runtime/io/Plot.h"
#include "runtime/io/Suggest.h"
#include "tools/mbsc/StudyCli.h"
#include "tools/repl/LineEditor.h"

namespace mbs::repl {

int exit_code(Status s) {
  switch (s) {
    case Status::Ok:
    case Status::Quit:
      return 0;
    case Status::ModelError:
      return 1;
    case Status::Usage:
      return 2;
    case Status::SolverFailure:
      return 3;
    case Status::Interrupted:
      return 130;
  }
  return 2;
}

// What the words after a command complete to.
enum class Complete : uint8_t { Nothing, Files, Names, Options, Solvers, Commands, Passes };

struct Repl::Command {
  std::string_view name;
  std::string_view usage;
  std::string_view summary;
  std::string_view help;  // more than the summary: arguments, defaults, examples
  Status (Repl::*run)(const Args&);
  Complete complete = Complete::Nothing;
};

using Command = Repl::Command;

const std::vector<Command>& Repl::commands() {
  static const std::vector<Command> table = {
      {"help", "help [COMMAND]", "list the commands, or explain one", "", &Repl::help,
       Complete::Commands},
      {"load", "load FILE [MODEL]", "compile a model (default: the last model in the file)",
       "The model compiled before stays loaded when the new one has errors. Solver options and "
       "the values set with `set` are kept where the new model has them.",
       &Repl::load, Complete::Files},
      {"reload", "reload", "compile the model again if its file changed",
       "The values set with `set` and the options are applied again.", &Repl::reload},
      {"models", "models [FILE]", "list the models of a file (default: the loaded one)", "",
       &Repl::models, Complete::Files},
      {"emit", "emit PASS", "print a pass's result: ast, flat, mech, dae, kernels, ir",
       "The same output as `mbsc FILE --emit PASS`.", &Repl::emit, Complete::Passes},
      {"vars", "vars [PATTERN]", "the variables (result columns) with units and descriptions",
       "PATTERN: a glob (`*.phi`, `x[?]`) or a part of the name.", &Repl::vars, Complete::Names},
      {"params", "params [PATTERN]", "the parameters with values, units and descriptions",
       "A parameter marked `(compile)` is used by the compiler as a number: setting it "
       "recompiles (the object cache makes that cheap). The model's inputs follow, marked "
       "`(input)`.",
       &Repl::params, Complete::Names},
      {"set", "set NAME = VALUE[, NAME = VALUE...]", "set parameters or start values",
       "A parameter, an input of the model (`set u = 2`, held over the run), or the start "
       "value of a variable (`set phi = 0.3`, `set der(phi) = 0`); "
       "values that belong together in one command (`set L = 2, x = 2`). "
       "Checked like `mbsc --set`/`--start`: the name must exist, the value be finite and "
       "within the declared min/max.",
       &Repl::set, Complete::Names},
      {"show", "show NAME", "a variable's or parameter's declaration and source line", "",
       &Repl::show, Complete::Names},
      {"solver", "solver [NAME]", "show or choose the time integrator",
       "Names: gen-alpha, newmark, trapezoidal, euler, midpoint, rk33, rk44, rk6, ode23, "
       "dopri5.",
       &Repl::solver, Complete::Solvers},
      {"option", "option [KEY [VALUE]]", "show all options, show one, or set one",
       "The one option table of mbsc, with the names of its flags (`option step 1e-4` is "
       "`--step 1e-4`, `option rho-inf 0.8`); the older keys h, rho_inf, t_end ... still work.",
       &Repl::option, Complete::Options},
      {"simulate", "simulate [T_END] [KEY=VALUE...]", "run the time integration",
       "The rows are kept for val, last, table, plot and save. KEY=VALUE options apply to this "
       "run only (`simulate 5 step=1e-4 solver=dopri5`). Ctrl-C stops the run and keeps the rows "
       "so far.",
       &Repl::simulate, Complete::Options},
      {"static", "static", "solve for the static equilibrium with load stepping",
       "One row per load step (first column: load factor); the equilibrium is kept for "
       "`eigen equilibrium` and `linearize equilibrium`.",
       &Repl::static_},
      {"eigen", "eigen [start|equilibrium]",
       "eigenvalues of the linearised constrained system (frequency, damping)",
       "At the consistent start state (default) or at the last static equilibrium.", &Repl::eigen},
      {"linearize", "linearize [PREFIX] [start|equilibrium]",
       "write M, K, D, G (and B) as Matrix Market files PREFIX_M.mtx ...",
       "PREFIX defaults to the model's name.", &Repl::linearize, Complete::Files},
      {"inverse", "inverse [T_END] [trajectory=FILE] [output=FILE]",
       "inverse dynamics of the prescribed motion",
       "Writes the result file (default <model>_inverse.csv) as `mbsc --inverse-dynamics` does "
       "and keeps its rows; an effort the motion does not determine is NaN.",
       &Repl::inverse, Complete::Files},
      {"study", "study FLAGS...", "a parameter study, optimisation or sensitivity analysis",
       "The study flags of mbsc (docs/studies.md), e.g. `study --vary k=100:400:4 --objective "
       "\"max(x)\" --output k.csv`; it uses the options and values of this session.",
       &Repl::study, Complete::Names},
      {"val", "val NAME [T]", "a variable's value at time T (interpolated; default: the end)", "",
       &Repl::val, Complete::Names},
      {"last", "last [NAME...]", "the last row of the result (all columns, or those named)", "",
       &Repl::last, Complete::Names},
      {"table", "table NAME... [from T] [to T] [every H]",
       "values at evenly spaced times (interpolated)",
       "Default: from the first to the last time of the result in 10 intervals.", &Repl::table,
       Complete::Names},
      {"stats", "stats", "the solver statistics of the last run", "", &Repl::stats},
      {"save", "save FILE [PATTERN...]", "write the last result as CSV or .mat",
       "The format follows the extension: FILE.mat is the MATLAB v4 result file of OpenModelica "
       "and Dymola, anything else CSV. PATTERNs choose the columns as mbsc --outputs does (names "
       "or globs: `save r.mat j1.* der(x)`); the default is every column.",
       &Repl::save, Complete::Files},
      {"animate", "animate [FILE] [fps=F] [show=NAME,...]",
       "the 3D animation of the last result (.html, .glb, .gltf)",
       "Default file: <model>.html. The model is compiled again with the animation's outputs "
       "and the parameter values of the run, and computes the poses from the result's "
       "coordinates (docs/animation.md).",
       &Repl::animate, Complete::Files},
      {"plot", "plot NAME... [vs NAME] [to FILE.png|FILE.svg]",
       "draw variables over time (or against another) with gnuplot",
       "Default file: <model>.png. Axis labels carry the variables' units.", &Repl::plot,
       Complete::Names},
      {"history", "history", "the commands of this session", "", &Repl::show_history},
      {"quit", "quit", "end the session (also `exit` and Ctrl-D)", "", &Repl::quit},
  };
  return table;
}

const Command* Repl::find_command(std::string_view name) {
  if (name == "exit") name = "quit";
  for (const auto& c : commands())
    if (c.name == name) return &c;
  return nullptr;
}

namespace {

// Words of a line: blanks separate them, "double quotes" keep blanks inside one.
std::vector<std::string> split_words(std::string_view line) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false, quoted = false;
  for (char c : line) {
    if (quoted) {
      if (c == '"')
        quoted = false;
      else
        cur += c;
    } else if (c == '"') {
      quoted = in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      if (in_word) words.push_back(cur);
      cur.clear();
      in_word = false;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(cur);
  return words;
}

// The whole word is the number: "7<NUL>abc" is not 7 (strtod would stop at the NUL).
std::optional<double> parse_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  double x = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return x;
}

// A word as the messages show it: control characters (a NUL read from a pipe) as \xNN.
std::string shown(const std::string& s) {
  std::string out;
  for (unsigned char c : s)
    out +=
        c < 0x20 || c == 0x7f ? fmt::format("\\x{:02x}", c) : std::string(1, static_cast<char>(c));
  return out;
}

// A time or interval of val, table and inverse: a finite number, or nullopt.
std::optional<double> parse_finite(const std::string& s) {
  const std::optional<double> x = parse_number(s);
  if (!x || !std::isfinite(*x)) return std::nullopt;
  return x;
}

// The REPL names an option as mbsc does, without the dashes: `step` for --step, `rho-inf` for
// --rho-inf. The option table's keys (`h`, `rho_inf`) are accepted as well (rt::find_option).
std::string option_name(const rt::OptionSpec& s) {
  std::string_view f = s.flag;
  while (f.starts_with('-')) f.remove_prefix(1);
  return std::string(f);
}

// PATTERN of vars/params: a glob when it has wildcards, else a part of the name.
bool matches(const std::string& name, const std::string& pattern) {
  if (pattern.empty()) return true;
  if (pattern.find_first_of("*?[") != std::string::npos)
    return ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
  return name.find(pattern) != std::string::npos;
}

std::string where(const rt::SourceRef& s) {
  if (s.file.empty()) return "";
  return fmt::format("{}:{}:{}", s.file, s.line, s.col);
}

// "file:line:col:" and the source line itself, for `show`.
std::string declared_at(const rt::SourceRef& s) {
  std::string text = s.text;
  std::ifstream in(s.file);
  std::string line;
  for (uint32_t k = 0; k < s.line && std::getline(in, line); ++k) {
  }
  if (in) {
    const auto first = line.find_first_not_of(" \t");
    text = first == std::string::npos ? line : line.substr(first);
  }
  return fmt::format("{}:{}:{}:\n    {}", s.file, s.line, s.col, text);
}

std::string rows_text(int64_t n) {
  return fmt::format("{} row{}", n, n == 1 ? "" : "s");
}

std::string bracket(const std::string& unit) {
  return unit.empty() ? "" : " [" + unit + "]";
}

// Shortest text of a number that a reader takes for the right value at a glance: 6 significant
// digits (save writes exact numbers).
std::string num(double x) {
  return fmt::format("{:.6g}", x);
}

}  // namespace

Repl::Repl(ReplOptions options, std::ostream& out, std::ostream& err, rt::ProgressSink& progress)
    : options_(std::move(options)), out_(out), err_(err), progress_(progress) {}

Repl::~Repl() = default;

std::string Repl::prompt() const {
  if (session_ && session_->model()) return "mbs:" + session_->model()->name + "> ";
  return "mbs> ";
}

Status Repl::error(Status s, const std::string& message) {
  out_.flush();
  err_ << "error: " << message << "\n";
  err_.flush();
  return s;
}

Status Repl::solver_failure(const rt::FailureRecord& failure, const std::string& kept) {
  out_.flush();
  err_ << failure.message;
  if (!failure.message.empty() && failure.message.back() != '\n') err_ << "\n";
  if (!kept.empty()) err_ << kept << "\n";
  err_.flush();
  return Status::SolverFailure;
}

bool Repl::need_model() {
  if (session_ && session_->model()) return true;
  error(Status::Usage, "no model loaded: `load FILE [MODEL]` first");
  return false;
}

bool Repl::need_result() {
  if (!result_kind_.empty()) return true;
  error(Status::Usage, "no result yet: `simulate` (or `static`, `inverse`) first");
  return false;
}

Status Repl::execute(const std::string& line) {
  std::vector<std::string> words = split_words(line);
  if (words.empty() || words[0][0] == '#') return Status::Ok;
  history_.push_back(line);
  const Command* c = find_command(words[0]);
  if (!c) {
    std::vector<std::string> names;
    for (const auto& cmd : commands()) names.emplace_back(cmd.name);
    std::string meant = rt::meant_name(words[0], names);
    return error(Status::Usage,
                 fmt::format("unknown command '{}'{}; `help` lists the commands", words[0],
                             meant.empty() ? "" : "; did you mean '" + meant + "'"));
  }
  words.erase(words.begin());
  Status s = Status::Usage;
  try {
    s = (this->*(c->run))(words);
  } catch (const std::exception& e) {
    // every failure of a command ends here and the session goes on
    s = error(Status::Usage, e.what());
  }
  out_.flush();
  return s;
}

// ---- help, history, quit

Status Repl::help(const Args& a) {
  if (a.empty()) {
    out_ << "commands (help COMMAND for more):\n";
    for (const auto& c : commands()) out_ << fmt::format("  {:<47} {}\n", c.usage, c.summary);
    out_ << "Tab completes commands, names, option keys and file names; Ctrl-C stops a run; "
            "Ctrl-D quits. docs/repl.md\n";
    return Status::Ok;
  }
  const Command* c = find_command(a[0]);
  if (!c) return error(Status::Usage, fmt::format("no command '{}'; `help` lists them", a[0]));
  out_ << c->usage << "\n  " << c->summary << "\n";
  if (!c->help.empty()) out_ << "  " << c->help << "\n";
  return Status::Ok;
}

Status Repl::show_history(const Args&) {
  for (size_t i = 0; i < history_.size(); ++i)
    out_ << fmt::format("{:>4}  {}\n", i + 1, history_[i]);
  return Status::Ok;
}

Status Repl::quit(const Args&) {
  return Status::Quit;
}

// ---- models

Status Repl::compile_session(CompileOptions copts, std::string_view verb) {
  copts.include_dirs = options_.include_dirs;
  copts.cache_dir = options_.cache_dir;
  copts.verbose = options_.verbose;
  copts.emit.clear();
  auto s = std::make_unique<Session>(copts, err_);
  out_.flush();
  if (!s->compile(out_)) {
    std::string kept = session_ && session_->model()
                           ? "; model '" + session_->model()->name + "' stays loaded"
                           : "";
    return error(s->usage_error() ? Status::Usage : Status::ModelError,
                 fmt::format("{} did not compile{}", copts.file, kept));
  }
  std::vector<std::pair<std::string, double>> kept = apply_values(*s, true);
  if (s->needs_compile() && !s->compile(out_))
    return error(Status::ModelError,
                 fmt::format("{} did not compile with the values set", copts.file));
  set_values_ = std::move(kept);
  session_ = std::move(s);
  inverse_session_.reset();
  std::error_code ec;
  loaded_time_ = std::filesystem::last_write_time(copts.file, ec);
  const rt::CompiledModel& m = *session_->model();
  out_ << fmt::format("{} {} from {}: {} ODE2, {} ODE1, {} algebraic unknowns, {} parameters", verb,
                      m.name, copts.file, m.n_q, m.n_y, m.n_z, m.parameters.size());
  if (options_.verbose) out_ << fmt::format(" ({:.1f} ms)", session_->compile_result().total_ms);
  out_ << "\n";
  return Status::Ok;
}

std::vector<std::pair<std::string, double>> Repl::apply_values(Session& s, bool notes) {
  const CompileOptions& copts = s.compile_options();
  std::vector<std::pair<std::string, double>> kept;
  for (const auto& [name, value] : set_values_) {
    // those the compile applied are in its options already
    if (copts.overrides.count(name) || copts.start_overrides.count(name)) {
      kept.emplace_back(name, value);
      continue;
    }
    try {
      // an input is set like a parameter (Session::set_parameter passes it to set_input)
      if (s.instance().parameter_index(name) >= 0 || s.instance().input_index(name) >= 0)
        s.set_parameter(name, value);
      else
        s.set_start(name, value);
      kept.emplace_back(name, value);
    } catch (const rt::SetError& e) {
      if (notes)
        out_ << fmt::format("note: {} = {} is not applied: {}\n", name, num(value), e.what());
    }
  }
  return kept;
}

Status Repl::load(const Args& a) {
  if (a.empty() || a.size() > 2) return error(Status::Usage, "usage: load FILE [MODEL]");
  CompileOptions copts;
  copts.file = a[0];
  if (a.size() == 2) copts.model = a[1];
  const bool same_file = session_ && session_->compile_options().file == a[0];
  if (!same_file) set_values_.clear();
  result_kind_.clear();
  return compile_session(std::move(copts), "loaded");
}

Status Repl::reload(const Args& a) {
  if (!a.empty()) return error(Status::Usage, "usage: reload");
  if (!session_) return error(Status::Usage, "no model loaded: `load FILE [MODEL]` first");
  const CompileOptions& copts = session_->compile_options();
  std::error_code ec;
  auto t = std::filesystem::last_write_time(copts.file, ec);
  if (ec)
    return error(Status::Usage, fmt::format("cannot read '{}': {}", copts.file, ec.message()));
  if (t == loaded_time_) {
    out_ << copts.file << " has not changed\n";
    return Status::Ok;
  }
  return compile_session(copts, "reloaded");
}

Status Repl::models(const Args& a) {
  if (a.size() > 1) return error(Status::Usage, "usage: models [FILE]");
  std::string file = !a.empty() ? a[0] : session_ ? session_->compile_options().file : "";
  if (file.empty()) return error(Status::Usage, "usage: models FILE (no model loaded)");
  SourceManager sources;
  DiagnosticEngine diags(sources);
  std::string why;
  std::optional<std::string> text =
      rt::read_input_file(file, rt::kSourceFileLimit, "model file", why);
  if (!text) return error(Status::Usage, fmt::format("cannot read '{}': {}", file, why));
  const uint32_t id = sources.add_file(file, std::move(*text));
  auto ast = parse_file(sources, id, diags);
  if (!ast)
    return error(Status::ModelError,
                 fmt::format("{} has syntax errors (`load {}` shows them)", file, file));
  std::vector<std::string> names;
  const auto walk = [&](const auto& self, const ast::ClassDef& c,
                        const std::string& prefix) -> void {
    if (c.kind == ast::ClassKind::Model || c.kind == ast::ClassKind::Class)
      names.push_back(prefix + c.name);
    for (const auto& n : c.classes) self(self, *n, prefix + c.name + ".");
  };
  for (const auto& c : ast->classes) walk(walk, *c, "");
  if (names.empty()) {
    out_ << file << " has no models\n";
    return Status::Ok;
  }
  for (const auto& n : names) out_ << n << (n == names.back() ? "  (the default)\n" : "\n");
  return Status::Ok;
}

Status Repl::emit(const Args& a) {
  static const std::vector<std::string> passes = {"ast", "flat", "mech", "dae", "kernels", "ir"};
  if (a.size() != 1 || std::find(passes.begin(), passes.end(), a[0]) == passes.end())
    return error(Status::Usage, "usage: emit ast|flat|mech|dae|kernels|ir");
  if (!need_model()) return Status::Usage;
  CompileOptions copts = session_->compile_options();
  copts.emit = a[0];
  out_.flush();
  CompileResult r = mbs::compile(copts, out_, err_);
  return r.ok ? Status::Ok : Status::ModelError;
}

// ---- names and values

std::string Repl::unit_of(std::string_view column) const {
  if (!session_ || !session_->model()) return "";
  const rt::CompiledModel& m = *session_->model();
  if (column == "time") return "s";
  for (size_t i = 0; i < m.output_names.size() && i < m.output_unit.size(); ++i)
    if (m.output_names[i] == column) return m.output_unit[i];
  return "";
}

Status Repl::vars(const Args& a) {
  if (a.size() > 1) return error(Status::Usage, "usage: vars [PATTERN]");
  if (!need_model()) return Status::Usage;
  const rt::CompiledModel& m = *session_->model();
  const std::string pattern = a.empty() ? "" : a[0];
  size_t shown = 0;
  for (size_t i = 0; i < m.output_names.size(); ++i) {
    const std::string& n = m.output_names[i];
    if (!matches(n, pattern)) continue;
    ++shown;
    const std::string unit = i < m.output_unit.size() ? m.output_unit[i] : "";
    const std::string desc = i < m.output_description.size() ? m.output_description[i] : "";
    out_ << fmt::format("  {:<28} {:<10} {}\n", n, unit.empty() ? "" : "[" + unit + "]", desc);
  }
  if (shown == 0) return error(Status::Usage, fmt::format("no variable matches '{}'", pattern));
  return Status::Ok;
}

Status Repl::params(const Args& a) {
  if (a.size() > 1) return error(Status::Usage, "usage: params [PATTERN]");
  if (!need_model()) return Status::Usage;
  const rt::CompiledModel& m = *session_->model();
  rt::Instance& inst = session_->instance();
  const std::string pattern = a.empty() ? "" : a[0];
  size_t shown = 0;
  for (size_t i = 0; i < m.parameters.size(); ++i) {
    const std::string& n = m.parameters[i].name;
    if (!matches(n, pattern)) continue;
    ++shown;
    const auto at = [](const auto& v, size_t k) {
      return k < v.size() ? v[k] : typename std::decay_t<decltype(v)>::value_type{};
    };
    std::string unit = at(m.parameter_unit, i), desc = at(m.parameter_description, i);
    const bool compile_time = !at(m.parameter_compile_time, i).empty();
    out_ << fmt::format("  {:<24} = {:<12} {:<10} {}{}\n", n, num(inst.parameter(n)),
                        unit.empty() ? "" : "[" + unit + "]", desc,
                        compile_time ? " (compile)" : "");
  }
  // the top-level inputs, set like parameters (their unit and description are their columns')
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    const std::string& n = m.inputs[i].name;
    if (!matches(n, pattern)) continue;
    ++shown;
    std::string unit, desc;
    for (size_t c = 0; c < m.output_names.size(); ++c) {
      if (m.output_names[c] != n) continue;
      if (c < m.output_unit.size()) unit = m.output_unit[c];
      if (c < m.output_description.size()) desc = m.output_description[c];
    }
    const double x = inst.start_vector()[static_cast<size_t>(m.input_slot[i])];
    out_ << fmt::format("  {:<24} = {:<12} {:<10} {}{}\n", n, num(x),
                        unit.empty() ? "" : "[" + unit + "]", desc, " (input)");
  }
  if (shown == 0) return error(Status::Usage, fmt::format("no parameter matches '{}'", pattern));
  return Status::Ok;
}

Status Repl::set(const Args& a) {
  // NAME = VALUE[, NAME = VALUE...]: values that only make sense together (a constrained
  // model's start values and the parameters of its constraints) are set in one step
  std::string joined;
  for (const auto& w : a) joined += w;
  std::vector<std::pair<std::string, double>> values;
  for (size_t from = 0; from <= joined.size();) {
    size_t to = joined.find(',', from);
    if (to == std::string::npos) to = joined.size();
    const std::string part = joined.substr(from, to - from);
    from = to + 1;
    const auto eq = part.find('=');
    if (eq == std::string::npos || eq == 0)
      return error(Status::Usage, "usage: set NAME = VALUE[, NAME = VALUE...]");
    const std::string name = part.substr(0, eq), text = part.substr(eq + 1);
    const std::optional<double> value = text == "true"    ? 1.0
                                        : text == "false" ? 0.0
                                                          : parse_number(text);  // Booleans too
    if (!value)
      return error(Status::Usage,
                   fmt::format("set {}: '{}' is not a number", shown(name), shown(text)));
    values.emplace_back(name, *value);
  }
  if (!need_model()) return Status::Usage;
  rt::Instance& inst = session_->instance();
  CompileOptions copts = session_->compile_options();
  bool compile = false;
  for (const auto& [name, value] : values) {
    const bool is_parameter = inst.parameter_index(name) >= 0 || inst.input_index(name) >= 0;
    if (const std::string no = session_->no_such_value(name); !no.empty())
      return error(Status::Usage, no);
    const std::string why = inst.why_compile_time(name);
    if (why.empty()) continue;
    // a value the compiler uses: a new compile (the current model stays if it fails)
    out_ << fmt::format("{} is used by the compiler ({})\n", name, why);
    (is_parameter ? copts.overrides : copts.start_overrides)[name] = value;
    compile = true;
  }
  const auto previous = set_values_;
  for (const auto& entry : values) {  // (a lambda may not capture a structured binding in clang 14)
    std::erase_if(set_values_, [&](const auto& p) { return p.first == entry.first; });
    set_values_.emplace_back(entry.first, entry.second);
  }
  if (compile) {
    Status s = compile_session(std::move(copts), "compiled");
    if (s != Status::Ok) set_values_ = previous;
    return s;
  }
  try {
    for (const auto& [name, value] : values) {
      if (inst.parameter_index(name) >= 0 || inst.input_index(name) >= 0)
        session_->set_parameter(name, value);
      else
        session_->set_start(name, value);
    }
    // checked now (bounds of the parameter and of those derived from it), not at the next run
    (void)inst.start_vector();
  } catch (const rt::SetError&) {
    // back to the values before
    set_values_ = previous;
    session_->reset_values();
    apply_values(*session_, false);
    throw;
  }
  return Status::Ok;
}

Status Repl::show(const Args& a) {
  if (a.size() != 1) return error(Status::Usage, "usage: show NAME");
  if (!need_model()) return Status::Usage;
  const rt::CompiledModel& m = *session_->model();
  const std::string& name = a[0];
  for (size_t i = 0; i < m.parameters.size(); ++i) {
    if (m.parameters[i].name != name) continue;
    const rt::SourceRef& s = m.parameters[i].source;
    out_ << fmt::format("parameter {} = {}{}\n", name, num(session_->instance().parameter(name)),
                        bracket(i < m.parameter_unit.size() ? m.parameter_unit[i] : ""));
    if (i < m.parameter_description.size() && !m.parameter_description[i].empty())
      out_ << "  " << m.parameter_description[i] << "\n";
    if (!s.file.empty()) out_ << "  declared at " << declared_at(s) << "\n";
    if (i < m.parameter_compile_time.size() && !m.parameter_compile_time[i].empty())
      out_ << "  used by the compiler: " << m.parameter_compile_time[i] << "\n";
    return Status::Ok;
  }
  for (size_t i = 0; i < m.output_names.size(); ++i) {
    if (m.output_names[i] != name) continue;
    out_ << fmt::format("variable {}{}\n", name,
                        bracket(i < m.output_unit.size() ? m.output_unit[i] : ""));
    if (i < m.output_description.size() && !m.output_description[i].empty())
      out_ << "  " << m.output_description[i] << "\n";
    if (i < m.output_source.size()) {
      const rt::OutputSource& src = m.output_source[i];
      if (!src.declaration.file.empty())
        out_ << "  declared at " << declared_at(src.declaration) << "\n";
      if (src.kind != rt::OutputSource::Kind::Unknown && !src.definition.file.empty())
        out_ << "  computed from " << where(src.definition) << ": " << src.definition.text << "\n";
      else if (src.kind == rt::OutputSource::Kind::Unknown)
        out_ << "  an unknown the solver computes\n";
    }
    return Status::Ok;
  }
  std::vector<std::string> names = m.output_names;
  for (const auto& p : m.parameters) names.push_back(p.name);
  const std::string meant = rt::meant_name(name, names);
  return error(Status::Usage,
               fmt::format("model '{}' has no variable or parameter '{}'{}", m.name, name,
                           meant.empty() ? "" : "; did you mean '" + meant + "'?"));
}

// ---- options

Status Repl::solver(const Args& a) {
  if (a.size() > 1) return error(Status::Usage, "usage: solver [NAME]");
  if (a.empty()) {
    out_ << "solver " << rt::solver_name(solver_options_.solver) << "\n";
    return Status::Ok;
  }
  if (auto e = rt::set_option(solver_options_, "solver", a[0])) return error(Status::Usage, *e);
  return Status::Ok;
}

Status Repl::option(const Args& a) {
  if (a.empty()) {
    for (const auto& spec : rt::option_table())
      out_ << fmt::format("  {:<22} {:<12} {}\n", option_name(spec),
                          rt::get_option(solver_options_, spec), spec.help);
    return Status::Ok;
  }
  const rt::OptionSpec* spec = rt::find_option(a[0]);
  if (!spec) {
    std::vector<std::string> keys;
    for (const auto& s : rt::option_table()) keys.push_back(option_name(s));
    for (const auto& s : rt::option_table()) keys.emplace_back(s.key);
    const std::string meant = rt::meant_name(a[0], keys);
    return error(Status::Usage, fmt::format("no option '{}'{}; `option` lists them", a[0],
                                            meant.empty() ? "" : "; did you mean '" + meant + "'"));
  }
  if (a.size() == 1) {
    out_ << fmt::format("{} = {}{} (default {}): {}\n", option_name(*spec),
                        rt::get_option(solver_options_, *spec), bracket(std::string(spec->unit)),
                        rt::default_text(*spec), spec->help);
    return Status::Ok;
  }
  if (a.size() != 2) return error(Status::Usage, "usage: option KEY VALUE");
  rt::SolverOptions changed = solver_options_;
  if (auto e = rt::set_option(changed, a[0], a[1])) return error(Status::Usage, *e);
  if (auto e = rt::validate(changed)) return error(Status::Usage, *e);
  solver_options_ = changed;
  options_given_.insert(std::string(spec->key));
  return Status::Ok;
}

// ---- analyses

Status Repl::simulate(const Args& a) {
  if (!need_model()) return Status::Usage;
  rt::SolverOptions run_options = solver_options_;
  std::set<std::string> given = options_given_;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto eq = a[i].find('=');
    if (i == 0 && eq == std::string::npos) {
      if (auto e = rt::set_option(run_options, "t_end", a[i])) return error(Status::Usage, *e);
      given.insert("t_end");
      continue;
    }
    if (eq == std::string::npos)
      return error(Status::Usage, "usage: simulate [T_END] [KEY=VALUE...]");
    if (auto e = rt::set_option(run_options, a[i].substr(0, eq), a[i].substr(eq + 1)))
      return error(Status::Usage, *e);
    if (const rt::OptionSpec* spec = rt::find_option(a[i].substr(0, eq)))
      given.insert(std::string(spec->key));
  }
  rt::apply_experiment(*session_->model(), run_options, given);
  if (auto e = rt::validate(run_options)) return error(Status::Usage, *e);
  session_->options() = run_options;
  const rt::CompiledModel& m = *session_->model();
  rt::ResultTable rows("time", m.output_names);
  // the rows of the output grid, so that the step loop does not regrow the table (adaptive
  // methods and very long runs may still grow it beyond this)
  const double steps = (run_options.t_end - m.v0[static_cast<size_t>(m.slot_time)]) /
                       run_options.h / std::max(run_options.output_every, 1);
  rows.reserve(static_cast<int64_t>(std::clamp(steps, 0.0, double(1 << 20))) + 2);
  rt::clear_interrupt();
  SimulationRun run = session_->simulate(
      [&](double t, std::span<const double> values) {
        rows.add_row(t, values);
        return 0;
      },
      &progress_);
  rt::clear_interrupt();
  if (!run.setup_error.empty()) return error(Status::Usage, run.setup_error);
  for (const auto& w : run.warnings) out_ << "warning: " << w << "\n";
  result_ = std::move(rows);
  result_kind_ = "simulate";
  result_columns_ = columns_of_run("time");
  result_parameters_ = session_->instance().parameters_set();
  result_stats_ = run.statistics;
  const auto& st = run.statistics;
  if (run.status == rt::SolveStatus::Failed) {
    return solver_failure(*run.failure, fmt::format("the run stopped at t = {}; kept {} before it",
                                                    num(run.t), rows_text(result_.rows())));
  }
  if (run.status == rt::SolveStatus::Interrupted) {
    out_ << fmt::format("interrupted at t = {}; kept {} so far\n", num(run.t),
                        rows_text(result_.rows()));
    return Status::Interrupted;
  }
  out_ << fmt::format("simulated {} to t = {} with {}: {} steps, {} Newton iterations; {} rows",
                      m.name, num(run.t), run.solver, st.steps, st.newton_iterations,
                      result_.rows());
  if (options_.verbose) out_ << fmt::format(" ({:.1f} ms)", run.run_ms);
  out_ << "\n";
  return Status::Ok;
}

Status Repl::static_(const Args& a) {
  if (!a.empty()) return error(Status::Usage, "usage: static");
  if (!need_model()) return Status::Usage;
  session_->options() = solver_options_;
  const rt::CompiledModel& m = *session_->model();
  rt::ResultTable rows("load", m.output_names);
  rt::clear_interrupt();
  rt::StaticResult res;
  try {
    res = session_->solve_static(
        [&](double load, std::span<const double> values) {
          rows.add_row(load, values);
          return 0;
        },
        &progress_);
  } catch (const rt::SolverSetupError& e) {
    rt::clear_interrupt();
    return error(Status::Usage, e.what());
  }
  rt::clear_interrupt();
  for (const auto& w : res.warnings) out_ << "warning: " << w << "\n";
  result_ = std::move(rows);
  result_kind_ = "static";
  result_columns_ = columns_of_run("load");
  result_parameters_ = session_->instance().parameters_set();
  result_stats_ = res.statistics;
  if (res.status == rt::SolveStatus::Failed) {
    return solver_failure(
        *res.failure, fmt::format("kept {} of the load steps before", rows_text(result_.rows())));
  }
  if (res.status == rt::SolveStatus::Interrupted) {
    out_ << fmt::format("interrupted; kept {} of the load steps so far\n",
                        rows_text(result_.rows()));
    return Status::Interrupted;
  }
  equilibrium_ = res.v;
  out_ << fmt::format(
      "{}: static equilibrium in {} load steps ({} rejected), {} Newton iterations; {} rows\n",
      m.name, res.statistics.steps, res.statistics.rejected_steps, res.statistics.newton_iterations,
      result_.rows());
  return Status::Ok;
}

std::optional<std::vector<double>> Repl::linearisation_state(const std::string& at,
                                                             Status& status) {
  if (at == "equilibrium") {
    if (equilibrium_.empty()) {
      status = error(Status::Usage, "no static equilibrium yet: `static` first");
      return std::nullopt;
    }
    return equilibrium_;
  }
  if (at != "start") {
    status = error(Status::Usage, fmt::format("'{}': expected start or equilibrium", at));
    return std::nullopt;
  }
  session_->options() = solver_options_;
  SimulationRun run = session_->initialize();
  if (!run.setup_error.empty()) {
    status = error(Status::Usage, run.setup_error);
    return std::nullopt;
  }
  if (run.status == rt::SolveStatus::Failed) {
    status = solver_failure(*run.failure, "");
    return std::nullopt;
  }
  return run.state;
}

Status Repl::eigen(const Args& a) {
  if (a.size() > 1) return error(Status::Usage, "usage: eigen [start|equilibrium]");
  if (!need_model()) return Status::Usage;
  const std::string at = a.empty() ? "start" : a[0];
  Status status = Status::Ok;
  auto state = linearisation_state(at, status);
  if (!state) return status;
  rt::LinearSystem sys = rt::linearize(*session_->model(), *state);
  std::string err;
  auto modes = rt::eigenmodes(sys, &err);
  if (!err.empty()) return error(Status::SolverFailure, "eigenvalue analysis: " + err);
  out_ << "eigenvalues of " << session_->model()->name << " at the "
       << (at == "start" ? "start" : "static equilibrium") << ":\n"
       << rt::format_modes(modes);
  return Status::Ok;
}

Status Repl::linearize(const Args& a) {
  if (a.size() > 2) return error(Status::Usage, "usage: linearize [PREFIX] [start|equilibrium]");
  if (!need_model()) return Status::Usage;
  std::string prefix = session_->model()->name, at = "start";
  for (const auto& w : a) (w == "start" || w == "equilibrium" ? at : prefix) = w;
  Status status = Status::Ok;
  auto state = linearisation_state(at, status);
  if (!state) return status;
  rt::LinearSystem sys = rt::linearize(*session_->model(), *state);
  std::vector<std::string> written;
  rt::write_linear_system(sys, prefix, &written);
  out_ << "linearised at the " << (at == "start" ? "start" : "static equilibrium") << "; wrote";
  for (const auto& w : written) out_ << " " << w;
  out_ << "\n";
  return Status::Ok;
}

Session* Repl::inverse_session() {
  if (inverse_session_) return inverse_session_.get();
  CompileOptions copts = session_->compile_options();
  copts.inverse_dynamics = true;
  auto s = std::make_unique<Session>(copts, err_);
  if (!s->compile(out_)) return nullptr;
  apply_values(*s, false);
  if (s->needs_compile() && !s->compile(out_)) return nullptr;
  inverse_session_ = std::move(s);
  return inverse_session_.get();
}

Status Repl::inverse(const Args& a) {
  if (!need_model()) return Status::Usage;
  rt::InverseDynamicsOptions io;
  io.t_end = solver_options_.t_end;
  io.h = solver_options_.h;
  std::string output = session_->model()->name + "_inverse.csv";
  for (size_t i = 0; i < a.size(); ++i) {
    const auto eq = a[i].find('=');
    if (i == 0 && eq == std::string::npos) {
      auto t = parse_finite(a[i]);
      if (!t) return error(Status::Usage, fmt::format("inverse: '{}' is not a time", shown(a[i])));
      io.t_end = *t;
    } else if (a[i].starts_with("trajectory=")) {
      io.trajectory = a[i].substr(eq + 1);
    } else if (a[i].starts_with("output=")) {
      output = a[i].substr(eq + 1);
    } else {
      return error(Status::Usage, "usage: inverse [T_END] [trajectory=FILE] [output=FILE]");
    }
  }
  if (rt::is_mat_path(output))  // its rows are read back from the file
    return error(Status::Usage, "inverse writes CSV here (output=" + output +
                                    "); `save FILE.mat` after it writes the .mat file");
  Session* s = inverse_session();
  if (!s) return error(Status::ModelError, "the model did not compile for inverse dynamics");
  io.start = s->instance().start_vector();
  rt::clear_interrupt();
  rt::InverseDynamicsRun run = rt::inverse_dynamics_to_csv(s->model(), io, output, &progress_);
  rt::clear_interrupt();
  out_ << rt::format_inverse_summary(run);
  result_ = rt::ResultTable::read_csv(output);
  result_kind_ = "inverse";
  result_columns_ = {};  // the names alone
  result_parameters_ = s->instance().parameters_set();
  result_stats_.reset();
  if (run.interrupted) {
    out_ << fmt::format("interrupted; the {} samples so far are in {} and kept\n", run.samples,
                        output);
    return Status::Interrupted;
  }
  if (!run.ok) {
    out_.flush();
    err_ << "error: inverse dynamics: " << run.message << "\n";
    err_ << fmt::format("the {} samples before are in {} and kept\n", run.samples, output);
    return Status::SolverFailure;
  }
  out_ << fmt::format("inverse dynamics: {} samples written to {}\n", run.samples, output);
  return Status::Ok;
}

Status Repl::study(const Args& a) {
  if (!need_model()) return Status::Usage;
  if (a.empty()) return error(Status::Usage, "usage: study FLAGS... (help study)");
  CLI::App app{"a study over the loaded model", "study"};
  cli::StudyFlags flags;
  cli::add_study_flags(app, flags);
  std::string output;
  bool static_analysis = false;
  app.add_option("--output", output, "the study's result file");
  app.add_flag("--static", static_analysis, "each run is a static equilibrium");
  std::vector<std::string> reversed(a.rbegin(), a.rend());  // CLI11 takes them reversed
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return error(Status::Usage, fmt::format("study: {}", e.what()));
  }
  if (!flags.active())
    return error(Status::Usage, "study: give --vary, --optimize or --sensitivity");
  if (flags.needs_sensitivity_kernels() && !session_->model()->has_sensitivities()) {
    CompileOptions copts = session_->compile_options();
    copts.sensitivities = true;
    out_ << "exact sensitivities need their kernels: compiling them\n";
    if (Status s = compile_session(copts, "compiled"); s != Status::Ok) return s;
  }
  session_->options() = solver_options_;
  out_.flush();
  rt::clear_interrupt();
  const int code = cli::run_study(*session_, flags, static_analysis, output, progress_);
  rt::clear_interrupt();
  switch (code) {
    case 0:
      return Status::Ok;
    case 1:
      return Status::ModelError;
    case 3:
      return Status::SolverFailure;
    case 130:
      return Status::Interrupted;
    default:
      return Status::Usage;
  }
}

// ---- results

Status Repl::val(const Args& a) {
  if (a.empty() || a.size() > 2) return error(Status::Usage, "usage: val NAME [T]");
  if (!need_result()) return Status::Usage;
  const int32_t c = result_.column(a[0]);
  if (c < 0) {
    const std::string meant = rt::meant_name(a[0], result_.columns());
    return error(Status::Usage,
                 fmt::format("the result has no column '{}'{}", a[0],
                             meant.empty() ? "" : "; did you mean '" + meant + "'?"));
  }
  double t = result_.at(result_.rows() - 1, 0);
  if (a.size() == 2) {
    auto x = parse_finite(a[1]);
    if (!x)
      return error(Status::Usage, fmt::format("val: '{}' is not a finite number", shown(a[1])));
    t = *x;
  }
  auto v = result_.interpolate(c, t);
  if (!v)
    return error(Status::Usage,
                 fmt::format("{} = {} is outside the result ({} to {})", result_.first(), num(t),
                             num(result_.at(0, 0)), num(result_.at(result_.rows() - 1, 0))));
  out_ << fmt::format("{}({}) = {}{}\n", a[0], num(t), num(*v), bracket(unit_of(a[0])));
  return Status::Ok;
}

Status Repl::last(const Args& a) {
  if (!need_result()) return Status::Usage;
  const int64_t r = result_.rows() - 1;
  std::vector<std::string> names = a.empty() ? result_.columns() : a;
  for (const auto& n : names)
    if (result_.column(n) < 0) return error(Status::Usage, fmt::format("no column '{}'", n));
  for (const auto& n : names) {
    out_ << fmt::format("  {:<28} {}{}\n", n, num(result_.at(r, result_.column(n))),
                        bracket(n == result_.first() && n != "time" ? "" : unit_of(n)));
  }
  return Status::Ok;
}

Status Repl::table(const Args& a) {
  if (!need_result()) return Status::Usage;
  std::vector<int32_t> cols;
  std::vector<std::string> names;
  double from = result_.at(0, 0), to = result_.at(result_.rows() - 1, 0);
  std::optional<double> every;
  for (size_t i = 0; i < a.size(); ++i) {
    if ((a[i] == "from" || a[i] == "to" || a[i] == "every") && i + 1 < a.size()) {
      auto x = parse_finite(a[i + 1]);
      if (!x)
        return error(Status::Usage,
                     fmt::format("table: '{}' is not a finite number", shown(a[i + 1])));
      (a[i] == "from" ? from : a[i] == "to" ? to : every.emplace()) = *x;
      ++i;
      continue;
    }
    const int32_t c = result_.column(a[i]);
    if (c < 0) {
      const std::string meant = rt::meant_name(a[i], result_.columns());
      return error(Status::Usage,
                   fmt::format("the result has no column '{}'{}", a[i],
                               meant.empty() ? "" : "; did you mean '" + meant + "'?"));
    }
    cols.push_back(c);
    names.push_back(a[i]);
  }
  if (cols.empty()) return error(Status::Usage, "usage: table NAME... [from T] [to T] [every H]");
  if (!(to >= from)) return error(Status::Usage, "table: `to` is before `from`");
  const double h = every ? *every : (to - from) / 10.0;
  if (every && !(h > 0)) return error(Status::Usage, "table: `every` must be positive");
  // the count as a double first: (to - from) / h overflows an integer for a tiny `every`
  const double intervals = h > 0 ? std::floor((to - from) / h * (1 + 1e-12)) : 0.0;
  if (!(intervals <= 100000.0))
    return error(Status::Usage,
                 fmt::format("table: every {} gives more than 100000 rows from {} to {}; choose a "
                             "larger `every`",
                             num(h), num(from), num(to)));
  const auto n = static_cast<int64_t>(intervals);
  out_ << fmt::format("{:>12}", result_.first());
  for (const auto& nm : names) out_ << fmt::format(" {:>14}", nm);
  out_ << "\n";
  for (int64_t k = 0; k <= n; ++k) {
    const double x = std::min(from + static_cast<double>(k) * h, to);
    out_ << fmt::format("{:>12}", num(x));
    for (int32_t c : cols) {
      auto v = result_.interpolate(c, x);
      out_ << fmt::format(" {:>14}", v ? num(*v) : "-");
    }
    out_ << "\n";
  }
  return Status::Ok;
}

Status Repl::stats(const Args& a) {
  if (!a.empty()) return error(Status::Usage, "usage: stats");
  if (!need_result()) return Status::Usage;
  if (!result_stats_)
    return error(Status::Usage, "the last result (" + result_kind_ + ") has no solver statistics");
  out_ << rt::format_statistics_table(*result_stats_, result_kind_ + " statistics");
  return Status::Ok;
}

rt::ResultColumns Repl::columns_of_run(const std::string& first) {
  const rt::CompiledModel& m = *session_->model();
  try {
    return rt::result_columns(m, session_->instance().start_vector(), first);
  } catch (const std::exception&) {
    return rt::result_columns(m, m.v0, first);
  }
}

Status Repl::save(const Args& a) {
  if (a.empty()) return error(Status::Usage, "usage: save FILE [PATTERN...]");
  if (!need_result()) return Status::Usage;
  std::vector<int32_t> selection;
  if (a.size() > 1) {
    try {
      selection = rt::select_columns(result_.names(), std::span(a).subspan(1));
    } catch (const rt::ColumnSelectError& e) {
      return error(Status::Usage, e.what());
    }
  }
  try {
    result_.write(a[0], &result_columns_, selection);
  } catch (const std::exception& e) {
    return error(Status::Usage, e.what());
  }
  out_ << fmt::format("wrote {} rows to {}\n", result_.rows(), a[0]);
  return Status::Ok;
}

Status Repl::animate(const Args& a) {
  if (!need_result()) return Status::Usage;
  std::string file = session_->model()->name + ".html";
  double fps = 60;
  std::vector<std::string> show;
  for (const std::string& w : a) {
    if (w.rfind("fps=", 0) == 0) {
      char* end = nullptr;
      fps = std::strtod(w.c_str() + 4, &end);
      if (end == w.c_str() + 4 || *end != '\0' || !(fps > 0))
        return error(Status::Usage, "fps= expects a positive number, got '" + w.substr(4) + "'");
    } else if (w.rfind("show=", 0) == 0) {
      std::stringstream names(w.substr(5));
      for (std::string n; std::getline(names, n, ',');)
        if (!n.empty()) show.push_back(n);
    } else {
      file = w;
    }
  }
  try {
    rt::check_animation_target(file);  // before the compile
  } catch (const std::exception& e) {
    return error(Status::Usage, e.what());
  }
  // the model with the animation's outputs, at the parameter values of the run (the caches
  // make a compile again cheap)
  CompileOptions copts = session_->compile_options();
  copts.animation = true;
  copts.emit.clear();
  for (const auto& [name, value] : result_parameters_) copts.overrides[name] = value;
  std::ostringstream emit;
  const CompileResult compiled = compile(copts, emit, err_);
  if (!compiled.ok || !compiled.model)
    return error(Status::ModelError, "the model did not compile");
  try {
    const rt::AnimationTrack track = rt::replay_result(*compiled.model, result_, show, fps);
    rt::write_animation(file, *compiled.model, track, compiled.model->name);
    out_ << fmt::format("wrote the animation of {} shapes, {} frames to {}\n",
                        compiled.model->shapes.size(), track.size(), file);
  } catch (const std::exception& e) {
    return error(Status::Usage, e.what());
  }
  return Status::Ok;
}

Status Repl::plot(const Args& a) {
  if (!need_result()) return Status::Usage;
  rt::PlotRequest request;
  for (size_t i = 0; i < a.size(); ++i) {
    if ((a[i] == "vs" || a[i] == "to") && i + 1 < a.size()) {
      (a[i] == "vs" ? request.x : request.output) = a[i + 1];
      ++i;
    } else {
      request.y.push_back(a[i]);
    }
  }
  if (request.y.empty())
    return error(Status::Usage, "usage: plot NAME... [vs NAME] [to FILE.png|FILE.svg]");
  std::vector<std::string> named = request.y;
  if (!request.x.empty()) named.push_back(request.x);
  for (const auto& n : named) {
    if (result_.column(n) >= 0) continue;
    const std::string meant = rt::meant_name(n, result_.columns());
    return error(Status::Usage,
                 fmt::format("the result has no column '{}'{}", n,
                             meant.empty() ? "" : "; did you mean '" + meant + "'?"));
  }
  const std::string model = session_ && session_->model() ? session_->model()->name : "result";
  if (request.output.empty()) request.output = model + ".png";
  request.title = model + " (" + result_kind_ + ")";
  for (const auto& c : result_.columns())
    if (std::string u = unit_of(c); !u.empty()) request.units[c] = u;
  // the rows go to gnuplot through a temporary result file
  std::string tmpl = (std::filesystem::temp_directory_path() / "mbs_plot_XXXXXX.csv").string();
  const int fd = ::mkstemps(tmpl.data(), 4);
  if (fd < 0) return error(Status::Usage, "cannot create a temporary file for the plot");
  ::close(fd);
  request.csv = tmpl;
  struct Remove {
    std::string path;
    ~Remove() { std::remove(path.c_str()); }
  } remove{tmpl};
  result_.write_csv(tmpl);
  try {
    rt::plot_csv(request);
  } catch (const rt::PlotError& e) {
    return error(Status::Usage, e.what());
  }
  out_ << "wrote " << request.output << "\n";
  return Status::Ok;
}

// ---- completion

std::vector<std::string> Repl::names_for_completion() const {
  std::vector<std::string> names;
  if (session_ && session_->model()) {
    const rt::CompiledModel& m = *session_->model();
    names = m.output_names;
    for (const auto& p : m.parameters) names.push_back(p.name);
  }
  for (const auto& c : result_.columns()) names.push_back(c);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::vector<std::string> Repl::complete(std::string_view line, size_t word_start) const {
  const std::string_view word = line.substr(std::min(word_start, line.size()));
  const std::vector<std::string> before = split_words(line.substr(0, word_start));
  std::vector<std::string> pool;
  Complete kind = Complete::Commands;
  if (!before.empty()) {
    const Command* c = find_command(before[0]);
    kind = c ? c->complete : Complete::Nothing;
    // the second word of `option` is a value, `set NAME =` is followed by a number
    if (kind == Complete::Options && before[0] == "option" && before.size() >= 2)
      kind = Complete::Nothing;
    if (before[0] == "load" && before.size() >= 2) kind = Complete::Nothing;
  }
  switch (kind) {
    case Complete::Nothing:
      return {};
    case Complete::Files:
      return complete_filename(word);
    case Complete::Commands:
      for (const auto& c : commands()) pool.emplace_back(c.name);
      break;
    case Complete::Names:
      pool = names_for_completion();
      break;
    case Complete::Options:
      for (const auto& s : rt::option_table())
        pool.push_back(option_name(s) + (before[0] == "simulate" ? "=" : ""));
      break;
    case Complete::Solvers:
      for (const auto& s : rt::option_table())
        if (s.key == "solver")
          for (auto ch : s.choices) pool.emplace_back(ch);
      break;
    case Complete::Passes:
      pool = {"ast", "flat", "mech", "dae", "kernels", "ir"};
      break;
  }
  std::vector<std::string> out;
  for (auto& p : pool)
    if (std::string_view(p).starts_with(word)) out.push_back(std::move(p));
  return out;
}

}  // namespace mbs::repl
