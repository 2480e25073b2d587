// mbsc: the mbs command line. Compiles a .mbs model and, with --simulate, runs it.
#include <fmt/format.h>
#include <malloc.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "compiler/driver/Session.h"
#include "compiler/driver/Studies.h"
#include "runtime/analysis/Linearize.h"
#include "runtime/analysis/Modes.h"
#include "runtime/analysis/Static.h"
#include "runtime/invdyn/InverseDynamics.h"
#include "runtime/io/AtomicFile.h"
#include "runtime/io/CsvWriter.h"
#include "runtime/io/Interrupt.h"
#include "runtime/io/Plot.h"
#include "runtime/io/Progress.h"
#include "runtime/solvers/Integrator.h"
#include "runtime/solvers/Options.h"
#include "runtime/solvers/OptionsCli.h"
#include "tools/mbsc/Analyses.h"
#include "tools/mbsc/FmuCli.h"
#include "tools/mbsc/StudyCli.h"
#include "tools/repl/ReplMain.h"

namespace {

using mbs::cli::kExitModelError;
using mbs::cli::kExitOk;
using mbs::cli::kExitUsage;

const char* kFooter = R"(Exit codes:
  0    success
  1    model error (the diagnostics say where, with file:line:col)
  2    usage error (bad option, a solver that cannot handle the model, or an
       unwritable file given on the command line)
  3    solver failure (the message gives time, step size, equation and variable)
  130  interrupted by Ctrl-C (the result file holds every row up to that point)

Studies: --vary NAME=VALUES ... --objective EXPR (docs/studies.md); mbsc monitor FILE.csv.
Plots: mbsc plot RESULT.csv NAME... [--vs NAME] [--model FILE.mbs] --output FILE.png|svg
       (mbsc plot --help).
Library search path: -I directories, then $MBS_PATH (colon separated), then the stdlib/.
Documentation: docs/cli.md, docs/language.md, docs/solvers.md)";

// `mbsc plot RESULT.csv NAME... [--vs NAME] [--model FILE.mbs] --output FILE.png|svg`: a view of
// rt::plot_csv.
int plot_command(int argc, char** argv) {
  CLI::App app{"draw columns of a result file against time (or --vs another column) with gnuplot",
               "mbsc plot"};
  app.footer(
      "Exit codes: 0 drawn; 1 the --model does not compile; 2 a bad request (a column the file "
      "lacks, an output that is not .png or .svg, no gnuplot) or gnuplot failed.\n"
      "Documentation: docs/cli.md");
  mbs::rt::PlotRequest request;
  app.add_option("file", request.csv, "the result file (CSV) of a run")
      ->required()
      ->type_name("RESULT.csv");
  app.add_option("names", request.y, "the columns to draw, each a line")
      ->required()
      ->type_name("NAME...");
  app.add_option("--vs", request.x, "the abscissa (default: the file's first column, time)")
      ->type_name("NAME");
  app.add_option("-o,--output", request.output, "the plot: FILE.png or FILE.svg")
      ->required()
      ->type_name("FILE");
  app.add_option("--title", request.title, "the title (default: the result file's name)");
  app.add_option("--width", request.width, "width in pixels (default 900)")
      ->check(CLI::Range(100, 10000));
  app.add_option("--height", request.height, "height in pixels (default 600)")
      ->check(CLI::Range(100, 10000));
  // the model names the units: unlike mbsc's own --model (a model's name), this is its file
  mbs::CompileOptions copts;
  app.add_option("--model", copts.file,
                 "label the axes with the units the model declares (it is compiled for them)")
      ->type_name("FILE.mbs");
  app.add_option("--model-name", copts.model,
                 "the model in that file (default: the last model in the file)")
      ->type_name("NAME");
  app.add_option("-I", copts.include_dirs, "add a directory to the library search path")
      ->type_name("DIR")
      ->allow_extra_args(false);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  if (!copts.file.empty()) {
    // with the joints' wrench outputs, so that the columns of a run with --reactions have units
    copts.reactions = true;
    const mbs::CompileResult compiled = mbs::compile(copts, std::cout, std::cerr);
    if (!compiled.ok || !compiled.model) return compiled.usage_error ? kExitUsage : kExitModelError;
    const mbs::rt::CompiledModel& m = *compiled.model;
    for (size_t i = 0; i < m.output_names.size() && i < m.output_unit.size(); ++i)
      request.units.emplace(m.output_names[i], m.output_unit[i]);
    request.units.emplace("time", "s");  // the first column of a run's results
  }
  try {
    mbs::rt::plot_csv(request);
  } catch (const mbs::rt::PlotError& e) {
    std::cerr << "mbsc plot: error: " << e.what() << "\n";
    return kExitUsage;
  }
  std::cerr << "mbsc plot: wrote " << request.output << "\n";
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
#if defined(__GLIBC__)
  // Blocks of 1 MB and more are mapped and unmapped on their own, so that what a compiler pass
  // frees goes back to the system at once; glibc's default raises this threshold to the largest
  // block freed so far, after which such blocks stay in the heap. For a model of 10^5 equations
  // the peak resident size drops by some 14 MB (docs/performance.md, "Compiling into an empty
  // cache"); the runtime allocates its buffers once, before the steps.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
  if (argc >= 2 && std::string(argv[1]) == "plot") return plot_command(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[1]) == "repl")
    return mbs::repl::repl_command(argc - 1, argv + 1);
  if (argc == 1 && ::isatty(0)) {
    std::cerr << "mbsc: no model file. `mbsc MODEL.mbs --simulate` runs a model, `mbsc repl "
                 "[MODEL.mbs]` starts the interactive mbs, `mbsc --help` lists the options.\n";
    return kExitUsage;
  }
  if (argc >= 2 && std::string(argv[1]) == "monitor")
    return mbs::cli::monitor_command(argc - 1, argv + 1);
  // --study FILE: its lines are options (docs/studies.md, "The study file")
  std::vector<std::string> args;
  if (!mbs::cli::expand_study_files(argc, argv, args)) return kExitUsage;
  std::vector<char*> arg_ptrs;
  for (auto& a : args) arg_ptrs.push_back(a.data());
  argc = static_cast<int>(arg_ptrs.size());
  argv = arg_ptrs.data();
  auto t_process = std::chrono::steady_clock::now();
  CLI::App app{"mbs: an equation-based modelling language and simulator for multibody systems",
               "mbsc"};
  app.footer(kFooter);
  app.set_version_flag("--version", std::string("mbsc ") + MBS_VERSION);

  mbs::CompileOptions copts;
  bool simulate = false;
  std::string output;
  std::vector<std::string> sets;
  app.add_option("file", copts.file, "the .mbs model file")->required()->type_name("FILE.mbs");
  app.add_flag("--simulate", simulate, "simulate the model (without it: compile and check only)");
  app.add_option("--model", copts.model,
                 "the model to compile (default: the last model in the file)")
      ->type_name("NAME");
  app.add_option("-I", copts.include_dirs, "add a directory to the library search path")
      ->type_name("DIR")
      ->allow_extra_args(false);
  app.add_option("--set", sets, "set a parameter: --set m=2 --set s.k=100")
      ->type_name("NAME=VALUE")
      ->allow_extra_args(false);
  std::vector<std::string> starts;
  app.add_option("--start", starts,
                 "set a variable's start value: --start x=0.5 (checked against the constraints "
                 "like the start values in the model)")
      ->type_name("NAME=VALUE")
      ->allow_extra_args(false);
  app.add_option("--output", output,
                 "result CSV file (default: <model>.csv in the current directory)")
      ->type_name("FILE.csv");
  bool inverse = false;
  app.add_flag("--inverse-dynamics", inverse,
               "inverse dynamics of the prescribed motion (joints with prescribed = true): "
               "reconstruct the motion from t0 to --t-end every --step and write the coordinates, "
               "the actuator efforts and every joint-wrench component that the motion determines "
               "uniquely (empty where it does not) to the result file (docs/inverse-dynamics.md)");
  mbs::rt::InverseDynamicsOptions iopts;
  std::string trajectory;
  app.add_option("--trajectory", trajectory,
                 "inverse dynamics: the motion of the active joints from a CSV file (time, then "
                 "coordinates by name; optional der(NAME) and der(der(NAME)) columns, otherwise a "
                 "cubic spline through the samples gives velocities and accelerations)")
      ->type_name("FILE.csv");
  app.add_option("--logged", iopts.logged,
                 "inverse dynamics: compare loads logged by another tool (CSV: time, then output "
                 "names such as liftCyl.f or boomJ.reaction_f[2]) with the balance at every "
                 "sample: scaled balance residual, ideal-joint admissibility residual and distance "
                 "to the admissible solutions (columns logged.* and the summary)")
      ->type_name("FILE.csv");
  app.add_option("--rank-rtol", iopts.rank_rtol,
                 "inverse dynamics: relative part of the rank threshold atol + rtol*sigma_max of "
                 "the scaled balance matrix (default 1e-10)");
  app.add_option("--rank-atol", iopts.rank_atol,
                 "inverse dynamics: absolute part of the rank threshold (default 1e-12)");
  std::string balance = "tree";
  app.add_option("--balance", balance,
                 "inverse dynamics: the balance analysed: 'tree' (the equations of motion of the "
                 "tree coordinates, the default) or 'bodies' (six Newton-Euler rows per body, "
                 "every joint's wrench on reaction coordinates of its own; same answers, slower)")
      ->check(CLI::IsMember({"tree", "bodies"}));
  bool no_cache = false;
  app.add_flag("--no-cache", no_cache,
               "compile every kernel afresh: neither read nor write the object cache "
               "($MBS_CACHE_DIR, else $XDG_CACHE_HOME/mbs or ~/.cache/mbs)");
  app.add_flag("--reactions", copts.reactions,
               "multibody: write every joint's transmitted wrench (<joint>.reaction_f[1..3], "
               "reaction_t[1..3], frame_a axes, about frame_b's origin) to the result file");
  app.add_flag("--project-start-velocities", copts.project_start_velocities,
               "replace start velocities that violate the constraints by their mass-weighted "
               "projection (velocities declared fixed = true are kept), with a warning that "
               "lists the changes, instead of the error");
  app.add_option("--recursive-depth", copts.recursive_depth,
                 "multibody: keep twists, accelerations and wrenches as unknowns when the tree "
                 "is deeper than this (-1: automatic, deeper than 24)")
      ->type_name("INT");
  app.add_option("--emit", copts.emit,
                 "print the result of a pass and stop: ast, flat, mech, dae, kernels, ir")
      ->check(CLI::IsMember({"ast", "flat", "mech", "dae", "kernels", "ir"}));
  bool do_static = false, do_linearize = false, do_eigen = false;
  std::string stats_csv;
  app.add_flag("--static", do_static,
               "solve for the static equilibrium with load stepping; one CSV row per load step "
               "(first column: load factor)");
  app.add_flag("--linearize", do_linearize,
               "write M, K, D, G (and B) as Matrix Market files <output stem>_M.mtx ... at the "
               "start state, or at the equilibrium with --static");
  app.add_flag("--eigen", do_eigen,
               "print the eigenvalues of the constrained linearised system: frequency [Hz] and "
               "damping ratio (at the start, or at the equilibrium with --static)");
  app.add_option("--stats-csv", stats_csv, "write the solver statistics as CSV to this file")
      ->type_name("FILE.csv");
  app.add_flag("-v,--verbose", copts.verbose,
               "print each pass's time, the solver statistics and a progress line every "
               "--progress-interval seconds during a run");
  bool quiet = false;
  app.add_flag("-q,--quiet", quiet,
               "no progress output (by default a run on a terminal shows one updating line "
               "once it has lasted 1 s)");
  double progress_interval = 3.0;
  app.add_option("--progress-interval", progress_interval,
                 "seconds between progress lines with -v (default 3)")
      ->type_name("S")
      ->check(CLI::PositiveNumber);
  mbs::cli::StudyFlags study;
  mbs::cli::add_study_flags(app, study);
  mbs::cli::FmuFlags fmu;
  mbs::cli::add_fmu_flags(app, fmu);
  mbs::rt::SolverOptions sopts;
  mbs::rt::add_solver_options(app, sopts);
  // an option given twice (in a --study file and on the command line): the last one counts
  for (CLI::Option* o : app.get_options())
    if (o->get_items_expected_max() == 1 && o->get_expected_min() == 1)
      o->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  if (no_cache) copts.cache_dir = "off";
  if (inverse && (simulate || do_static)) {
    std::cerr << "mbsc: error: --inverse-dynamics cannot be combined with --simulate or --static\n";
    return kExitUsage;
  }
  if (inverse) copts.inverse_dynamics = true;
  iopts.balance = balance == "bodies" ? mbs::rt::BalanceForm::Bodies : mbs::rt::BalanceForm::Tree;
  if (!trajectory.empty() && !inverse) {
    std::cerr << "mbsc: error: --trajectory is an input of --inverse-dynamics\n";
    return kExitUsage;
  }
  // NAME=VALUE pairs of --set (parameters) and --start (start values)
  auto assignments = [](const std::vector<std::string>& items, const char* option,
                        std::map<std::string, double>& into) {
    for (const auto& s : items) {
      auto eq = s.find('=');
      if (eq == std::string::npos || eq == 0) {
        std::cerr << "mbsc: error: " << option << " expects NAME=VALUE, got '" << s << "'\n";
        return false;
      }
      std::string name = s.substr(0, eq), value = s.substr(eq + 1);
      char* end = nullptr;
      double x = std::strtod(value.c_str(), &end);
      if (value == "true" || value == "false") {  // a Boolean parameter
        x = value == "true" ? 1.0 : 0.0;
        end = nullptr;
      }
      if (value.empty() || (end != nullptr && *end != '\0')) {
        std::cerr << "mbsc: error: " << option << " " << name << ": '" << value
                  << "' is not a number\n";
        return false;
      }
      into[name] = x;
    }
    return true;
  };
  if (!assignments(sets, "--set", copts.overrides) ||
      !assignments(starts, "--start", copts.start_overrides))
    return kExitUsage;
  if (do_static && simulate) {
    std::cerr
        << "mbsc: error: --static and --simulate cannot be combined: run them one at a time\n";
    return kExitUsage;
  }
  if (auto err = mbs::rt::validate(sopts)) {
    std::cerr << "mbsc: error: " << *err << "\n";
    return kExitUsage;
  }

  // ---- MPI (docs/studies.md, "Across machines: MPI"): every rank compiles; rank 0 runs the
  // study and prints, the other ranks evaluate its runs silently
  const mbs::cli::MpiScope mpi_scope;
  if (const int code = mbs::cli::start_mpi(study); code >= 0) return code;
  std::ostream quiet_worker(nullptr);
  std::ostream& diag_out = mbs::rt::mpi_worker() ? quiet_worker : std::cerr;
  std::ostream& emit_out = mbs::rt::mpi_worker() ? quiet_worker : std::cout;

  // ---- compile
  if (study.needs_sensitivity_kernels()) copts.sensitivities = true;
  if (fmu.active()) {
    if (study.active() || inverse || !copts.emit.empty()) {
      std::cerr << "mbsc: error: --fmu exports the model; it cannot be combined with a study, "
                   "--inverse-dynamics or --emit\n";
      return kExitUsage;
    }
    copts.cpu = fmu.compile_cpu();
    copts.keep_object_files = true;
    copts.sensitivities = true;  // d outputs / d states: the dependencies of the FMU's outputs
  }
  mbs::Session session(copts, diag_out);
  if (!session.compile(emit_out)) return session.usage_error() ? kExitUsage : kExitModelError;
  const mbs::CompileResult& compiled = session.compile_result();
  session.options() = sopts;
  double ready_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_process)
          .count();
  if (copts.verbose)
    std::cerr << fmt::format("mbsc: compiled in {:.1f} ms ({:.1f} ms since process start)\n",
                             compiled.total_ms, ready_ms);
  if (!copts.emit.empty()) return kExitOk;
  if (fmu.active()) {
    if (const int code = mbs::cli::run_fmu_export(session, fmu, copts.verbose); code != kExitOk)
      return code;
    if (!simulate && !do_static && !do_linearize && !do_eigen) return kExitOk;
  }
  if (study.active()) {
    if (inverse || do_linearize || do_eigen) {
      std::cerr << "mbsc: error: a study (--vary) runs simulations (or --static); it cannot be "
                   "combined with --inverse-dynamics, --linearize or --eigen\n";
      return kExitUsage;
    }
    mbs::rt::install_interrupt_handler();
    mbs::rt::StderrProgress progress(mbs::rt::progress_mode(copts.verbose, quiet),
                                     progress_interval);
    return mbs::cli::run_study(session, study, do_static, output, progress);
  }
  mbs::rt::install_interrupt_handler();
  mbs::rt::StderrProgress progress(mbs::rt::progress_mode(copts.verbose, quiet), progress_interval);
  if (inverse) {
    mbs::cli::InverseRequest r;
    r.options = iopts;
    r.options.t_end = sopts.t_end;
    r.options.h = sopts.h;
    r.options.trajectory = trajectory;
    // with a trajectory file and neither --t-end nor --step: its own sample times from t0
    r.times_from_trajectory =
        !trajectory.empty() && app.count("--t-end") == 0 && app.count("--step") == 0;
    r.output = output;
    return mbs::cli::run_inverse_dynamics(session, r, progress);
  }
  mbs::cli::AnalysisRequest r;
  r.simulate = simulate;
  r.do_static = do_static;
  r.linearize = do_linearize;
  r.eigen = do_eigen;
  r.output = output;
  r.stats_csv = stats_csv;
  r.verbose = copts.verbose;
  return mbs::cli::run_analyses(session, r, progress);
}
