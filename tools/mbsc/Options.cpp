#include "tools/mbsc/Options.h"

#include <fmt/format.h>

#include <cstdlib>
#include <iostream>

#include "runtime/solvers/OptionsCli.h"

namespace mbs::cli {

const std::vector<Subcommand>& subcommands() {
  static const std::vector<Subcommand> table = {
      {"repl", "[FILE.mbs] [options]",
       "the interactive mbs: load, change and run a model line by line (docs/repl.md)"},
      {"plot", "RESULT.csv NAME... [--vs NAME] [--model FILE.mbs] --output FILE.png|svg",
       "draw columns of a result file with gnuplot (mbsc plot --help)"},
      {"animate", "RESULT.csv --model FILE.mbs --output FILE.html|glb|gltf [--set NAME=VALUE]",
       "the 3D animation of a result file written earlier (mbsc animate --help)"},
      {"monitor", "[FILE.csv] [--once] [--interval S]",
       "show a study's progress from its results file as it grows (docs/studies.md)"},
  };
  return table;
}

const std::vector<ExitCode>& exit_codes() {
  static const std::vector<ExitCode> table = {
      {0, "success"},
      {1, "model error (the diagnostics say where, with file:line:col)"},
      {2,
       "usage error (bad option, a solver that cannot handle the model, or an unwritable file "
       "given on the command line)"},
      {3, "solver failure (the message gives time, step size, equation and variable)"},
      {130, "interrupted by Ctrl-C (the result file holds every row up to that point)"},
  };
  return table;
}

std::string help_footer() {
  std::string s = "Subcommands:\n";
  for (const Subcommand& c : subcommands())
    s += fmt::format("  mbsc {} {}\n      {}\n", c.name, c.synopsis, c.summary);
  s += "\nExit codes:\n";
  for (const ExitCode& e : exit_codes()) s += fmt::format("  {:<4} {}\n", e.code, e.meaning);
  s += "\nLibrary search path: -I directories, then $MBS_PATH (colon separated), then the "
       "standard library of the installation ($MBS_HOME/share/mbs/stdlib when MBS_HOME is set).\n"
       "Documentation: man mbsc; docs/cli.md, docs/language.md, docs/solvers.md (installed in "
       "share/doc/mbs)";
  return s;
}

bool parse_assignments(const std::vector<std::string>& items, const char* option,
                       std::map<std::string, double>& into, const char* who) {
  for (const auto& s : items) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << who << ": error: " << option << " expects NAME=VALUE, got '" << s << "'\n";
      return false;
    }
    const std::string name = s.substr(0, eq), value = s.substr(eq + 1);
    char* end = nullptr;
    double x = std::strtod(value.c_str(), &end);
    if (value == "true" || value == "false") {  // a Boolean parameter
      x = value == "true" ? 1.0 : 0.0;
      end = nullptr;
    }
    if (value.empty() || (end != nullptr && *end != '\0')) {
      std::cerr << who << ": error: " << option << " " << name << ": '" << value
                << "' is not a number\n";
      return false;
    }
    into[name] = x;
  }
  return true;
}

void add_main_options(CLI::App& app, MainOptions& o) {
  app.footer(help_footer());
  app.add_option("file", o.copts.file, "the .mbs model file")->required()->type_name("FILE.mbs");
  app.add_flag("--simulate", o.simulate, "simulate the model (without it: compile and check only)");
  app.add_option("--model", o.copts.model,
                 "the model to compile (default: the last model in the file)")
      ->type_name("MODEL");
  app.add_option("-I", o.copts.include_dirs, "add a directory to the library search path")
      ->type_name("DIR")
      ->allow_extra_args(false);
  app.add_option("--set", o.sets, "set a parameter: --set m=2 --set s.k=100")
      ->type_name("PARAMETER=VALUE")
      ->allow_extra_args(false);
  app.add_option("--start", o.starts,
                 "set a variable's start value: --start x=0.5 (checked against the constraints "
                 "like the start values in the model)")
      ->type_name("VARIABLE=VALUE")
      ->allow_extra_args(false);
  app.add_option("--output", o.output,
                 "result file: CSV, or the MATLAB v4 result format of OpenModelica and Dymola "
                 "when it ends in .mat (default: <model>.csv in the current directory)")
      ->type_name("FILE.csv|FILE.mat");
  app.add_option("--outputs", o.outputs,
                 "the result columns to write (--simulate, --static): names or globs with * and "
                 "? ('j1.*', 'der(x)', 'body?.r_0[*]'); time is always written; the default is "
                 "every variable; a name or pattern that matches nothing is an error. Rows: "
                 "--output-every")
      ->type_name("PATTERN")
      ->expected(1, -1);
  app.add_flag("--inverse-dynamics", o.inverse,
               "inverse dynamics of the prescribed motion (joints with prescribed = true): "
               "reconstruct the motion from t0 to --t-end every --step and write the coordinates, "
               "the actuator efforts and every joint-wrench component that the motion determines "
               "uniquely (empty where it does not) to the result file (docs/inverse-dynamics.md)");
  app.add_option("--trajectory", o.trajectory,
                 "inverse dynamics: the motion of the active joints from a CSV file (time, then "
                 "coordinates by name; optional der(NAME) and der(der(NAME)) columns, otherwise a "
                 "cubic spline through the samples gives velocities and accelerations)")
      ->type_name("FILE.csv");
  app.add_option("--logged", o.iopts.logged,
                 "inverse dynamics: compare loads logged by another tool (CSV: time, then output "
                 "names such as liftCyl.f or boomJ.reaction_f[2]) with the balance at every "
                 "sample: scaled balance residual, ideal-joint admissibility residual and distance "
                 "to the admissible solutions (columns logged.* and the summary)")
      ->type_name("FILE.csv");
  app.add_option("--rank-rtol", o.iopts.rank_rtol,
                 "inverse dynamics: relative part of the rank threshold atol + rtol*sigma_max of "
                 "the scaled balance matrix (default 1e-10)");
  app.add_option("--rank-atol", o.iopts.rank_atol,
                 "inverse dynamics: absolute part of the rank threshold (default 1e-12)");
  app.add_option("--balance", o.balance,
                 "inverse dynamics: the balance analysed: 'tree' (the equations of motion of the "
                 "tree coordinates, the default) or 'bodies' (six Newton-Euler rows per body, "
                 "every joint's wrench on reaction coordinates of its own; same answers, slower)")
      ->check(CLI::IsMember({"tree", "bodies"}));
  app.add_flag("--no-cache", o.no_cache,
               "compile every kernel afresh: neither read nor write the object cache "
               "($MBS_CACHE_DIR, else $XDG_CACHE_HOME/mbs or ~/.cache/mbs)");
  app.add_flag("--reactions", o.copts.reactions,
               "multibody: write every joint's transmitted wrench (<joint>.reaction_f[1..3], "
               "reaction_t[1..3], frame_a axes, about frame_b's origin) to the result file");
  app.add_option("--animate", o.animate,
                 "with --simulate (or --static: a frame per load step; --inverse-dynamics: the "
                 "prescribed motion): write a 3D animation of the mechanism, by the extension: "
                 "FILE.html (one self-contained page for any browser: play, speed, time slider, "
                 "orbit/pan/zoom) or FILE.glb / FILE.gltf (glTF 2.0 with node animations); the "
                 "shapes are the library's defaults and visualisation parameters "
                 "(docs/animation.md)")
      ->type_name("FILE");
  app.add_option("--animate-fps", o.animate_fps,
                 "frames per second of simulated time in the animation (default 60; the rows "
                 "before and after every event are kept)")
      ->type_name("FPS")
      ->check(positive_number("frame rate"));
  app.add_option("--animate-show", o.animate_show,
                 "variables whose values the HTML animation shows with the time (repeat it, or "
                 "separate names by commas)")
      ->type_name("NAME")
      ->delimiter(',')
      ->allow_extra_args(false);
  app.add_flag("--project-start-velocities", o.copts.project_start_velocities,
               "replace start velocities that violate the constraints by their mass-weighted "
               "projection (velocities declared fixed = true are kept), with a warning that "
               "lists the changes, instead of the error");
  app.add_option("--recursive-depth", o.copts.recursive_depth,
                 "multibody: keep twists, accelerations and wrenches as unknowns when the tree "
                 "is deeper than this (-1: automatic, deeper than 24)")
      ->type_name("INT");
  app.add_option("--emit", o.copts.emit,
                 "print the result of a pass and stop: ast, flat, mech, dae, kernels, ir")
      ->check(CLI::IsMember({"ast", "flat", "mech", "dae", "kernels", "ir"}));
  app.add_flag("--static", o.do_static,
               "solve for the static equilibrium with load stepping; one CSV row per load step "
               "(first column: load factor)");
  app.add_flag("--linearize", o.do_linearize,
               "write M, K, D, G (and B) as Matrix Market files <output stem>_M.mtx ... at the "
               "start state, or at the equilibrium with --static");
  app.add_flag("--eigen", o.do_eigen,
               "print the eigenvalues of the constrained linearised system: frequency [Hz] and "
               "damping ratio (at the start, or at the equilibrium with --static)");
  app.add_option("--stats-csv", o.stats_csv, "write the solver statistics as CSV to this file")
      ->type_name("FILE.csv");
  app.add_flag("-v,--verbose", o.copts.verbose,
               "print each pass's time, the solver statistics and a progress line every "
               "--progress-interval seconds during a run");
  app.add_flag("-q,--quiet", o.quiet,
               "no progress output (by default a run on a terminal shows one updating line "
               "once it has lasted 1 s)");
  app.add_option("--progress-interval", o.progress_interval,
                 "seconds between progress lines with -v (default 3)")
      ->type_name("S")
      ->check(positive_number("number of seconds"));
  add_study_flags(app, o.study);
  add_fmu_flags(app, o.fmu);
  rt::add_solver_options(app, o.sopts, "Solver options", &o.sopts_given);
  app.add_option("--study", o.study_file,
                 "read options from a study file, one per line without the dashes (e.g. 'vary "
                 "k=1,2,5'; docs/studies.md, \"The study file\"); options on the command line "
                 "after it override its lines")
      ->type_name("FILE.study")
      ->group("Studies (docs/studies.md)");
}

}  // namespace mbs::cli
