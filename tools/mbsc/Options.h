// mbsc's command line in one place: every option of `mbsc FILE.mbs ...` (add_main_options, with
// the study, FMU and solver options of their own files) and every subcommand. `mbsc --help`, the
// man page and the bash completion (tools/mbsc/Help.h) are all generated from these.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/driver/Compile.h"
#include "runtime/invdyn/InverseDynamics.h"
#include "runtime/solvers/Options.h"
#include "tools/mbsc/FmuCli.h"
#include "tools/mbsc/StudyCli.h"

namespace mbs::cli {

inline constexpr const char* kMainDescription =
    "mbs: an equation-based modelling language and simulator for multibody systems";

struct MainOptions {
  CompileOptions copts;
  bool simulate = false;
  std::string output;
  std::vector<std::string> outputs;       // --outputs: names or globs of the columns written
  std::vector<std::string> sets, starts;  // NAME=VALUE of --set and --start
  bool inverse = false;
  rt::InverseDynamicsOptions iopts;
  std::string trajectory;
  std::string balance = "tree";
  bool no_cache = false;
  bool do_static = false, do_linearize = false, do_eigen = false;
  std::string stats_csv;
  bool quiet = false;
  double progress_interval = 3.0;
  // --animate FILE.html|.glb|.gltf, its frame rate and the variables shown (docs/animation.md)
  std::string animate;
  double animate_fps = 60;
  std::vector<std::string> animate_show;
  std::string study_file;  // --study: expanded into options before parsing (expand_study_files)
  StudyFlags study;
  FmuFlags fmu;
  rt::SolverOptions sopts;
  std::set<std::string> sopts_given;  // the keys of the solver options given (apply_experiment)
};

// The main App of mbsc with every option, writing into `o` (which must outlive parsing).
void add_main_options(CLI::App& app, MainOptions& o);

// NAME=VALUE items of --set (parameters) and --start (start values) into `into`; a value is a
// number, or true/false for a Boolean parameter. False after printing "WHO: error: ..." for the
// first item that is not such a pair.
bool parse_assignments(const std::vector<std::string>& items, const char* option,
                       std::map<std::string, double>& into, const char* who);

// `mbsc NAME ...`: the subcommands, dispatched before the options are parsed.
struct Subcommand {
  const char* name;
  const char* synopsis;  // its arguments, e.g. "[FILE.csv] [--once] [--interval S]"
  const char* summary;
};
const std::vector<Subcommand>& subcommands();

// The footer of `mbsc --help`: subcommands, exit codes, search path, documentation.
std::string help_footer();

// Exit codes with their meaning, as the footer and the man page list them.
struct ExitCode {
  int code;
  const char* meaning;
};
const std::vector<ExitCode>& exit_codes();

}  // namespace mbs::cli
