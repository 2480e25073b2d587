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
#include "runtime/anim/Animation.h"
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
#include "tools/mbsc/AnimateCli.h"
#include "tools/mbsc/FmuCli.h"
#include "tools/mbsc/Help.h"
#include "tools/mbsc/Options.h"
#include "tools/mbsc/StudyCli.h"
#include "tools/repl/ReplMain.h"

namespace {

using mbs::cli::kExitModelError;
using mbs::cli::kExitOk;
using mbs::cli::kExitUsage;

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
  // internal: the man page and bash completion at build time, and the completion's name lists
  if (argc >= 2 && std::string(argv[1]) == "__generate")
    return mbs::cli::generate_command(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[1]) == "__complete")
    return mbs::cli::complete_command(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[1]) == "plot") return plot_command(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[1]) == "animate")
    return mbs::cli::animate_command(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[1]) == "repl")
    return mbs::repl::repl_command(argc - 1, argv + 1);
  if (argc == 1 && ::isatty(0)) {
    std::cerr << "mbsc: no model file. `mbsc MODEL.mbs --simulate` runs a model, `mbsc repl "
                 "[MODEL.mbs]` starts the interactive mbs, `mbsc --help` lists the options.\n";
    return kExitUsage;
  }
  if (argc >= 2 && std::string(argv[1]) == "monitor")
    return mbs::cli::monitor_command(argc - 1, argv + 1);
  auto t_process = std::chrono::steady_clock::now();
  CLI::App app{mbs::cli::kMainDescription, "mbsc"};
  app.set_version_flag("--version", std::string("mbsc ") + MBS_VERSION);

  mbs::cli::MainOptions o;
  mbs::cli::add_main_options(app, o);
  // an option given twice (in a --study file and on the command line): the last one counts
  for (CLI::Option* opt : app.get_options())
    if (opt->get_items_expected_max() == 1 && opt->get_expected_min() == 1)
      opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  // --study FILE: its lines are options (docs/studies.md, "The study file")
  std::vector<std::string> args;
  if (!mbs::cli::expand_study_files(argc, argv, args, app)) return kExitUsage;
  std::vector<char*> arg_ptrs;
  for (auto& a : args) arg_ptrs.push_back(a.data());
  argc = static_cast<int>(arg_ptrs.size());
  argv = arg_ptrs.data();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  if (o.no_cache) o.copts.cache_dir = "off";
  if (o.inverse && (o.simulate || o.do_static)) {
    std::cerr << "mbsc: error: --inverse-dynamics cannot be combined with --simulate or --static\n";
    return kExitUsage;
  }
  if (o.inverse) o.copts.inverse_dynamics = true;
  o.iopts.balance =
      o.balance == "bodies" ? mbs::rt::BalanceForm::Bodies : mbs::rt::BalanceForm::Tree;
  if (!o.trajectory.empty() && !o.inverse) {
    std::cerr << "mbsc: error: --trajectory is an input of --inverse-dynamics\n";
    return kExitUsage;
  }
  if (!mbs::cli::parse_assignments(o.sets, "--set", o.copts.overrides, "mbsc") ||
      !mbs::cli::parse_assignments(o.starts, "--start", o.copts.start_overrides, "mbsc"))
    return kExitUsage;
  if (!o.animate.empty()) {
    // checked before the compile: a request that cannot be met costs no run
    try {
      mbs::rt::check_animation_target(o.animate);
    } catch (const mbs::rt::AnimationError& e) {
      std::cerr << "mbsc: error: " << e.what() << "\n";
      return kExitUsage;
    }
    if ((!o.simulate && !o.do_static && !o.inverse) || o.study.active() || o.fmu.active()) {
      std::cerr << "mbsc: error: --animate records the run of --simulate, the load steps of "
                   "--static or the motion of --inverse-dynamics (not a study or --fmu)\n";
      return kExitUsage;
    }
    // inverse dynamics: the motion is drawn from its result file afterwards
    if (!o.inverse) o.copts.animation = true;
  } else if (!o.animate_show.empty() || app.count("--animate-fps") > 0) {
    std::cerr << "mbsc: error: --animate-show and --animate-fps belong to --animate FILE\n";
    return kExitUsage;
  }
  if (o.do_static && o.simulate) {
    std::cerr
        << "mbsc: error: --static and --simulate cannot be combined: run them one at a time\n";
    return kExitUsage;
  }
  if (!o.outputs.empty() && (o.inverse || o.study.active() || (!o.simulate && !o.do_static))) {
    std::cerr << "mbsc: error: --outputs chooses the columns of the result file of --simulate "
                 "or --static"
              << (o.inverse          ? "; not of --inverse-dynamics"
                  : o.study.active() ? "; a study writes one row per run"
                                     : ", and neither is given")
              << "\n";
    return kExitUsage;
  }
  if (auto err = mbs::rt::validate(o.sopts)) {
    std::cerr << "mbsc: error: " << *err << "\n";
    return kExitUsage;
  }

  // ---- MPI (docs/studies.md, "Across machines: MPI"): every rank compiles; rank 0 runs the
  // study and prints, the other ranks evaluate its runs silently
  const mbs::cli::MpiScope mpi_scope;
  if (const int code = mbs::cli::start_mpi(o.study); code >= 0) return code;
  std::ostream quiet_worker(nullptr);
  std::ostream& diag_out = mbs::rt::mpi_worker() ? quiet_worker : std::cerr;
  std::ostream& emit_out = mbs::rt::mpi_worker() ? quiet_worker : std::cout;

  // ---- compile
  if (o.study.needs_sensitivity_kernels()) o.copts.sensitivities = true;
  if (o.fmu.active()) {
    if (o.study.active() || o.inverse || !o.copts.emit.empty()) {
      std::cerr << "mbsc: error: --fmu exports the model; it cannot be combined with a study, "
                   "--inverse-dynamics or --emit\n";
      return kExitUsage;
    }
    o.copts.cpu = o.fmu.compile_cpu();
    o.copts.keep_object_files = true;
    o.copts.sensitivities = true;  // d outputs / d states: the dependencies of the FMU's outputs
  }
  mbs::Session session(o.copts, diag_out);
  if (!session.compile(emit_out)) return session.usage_error() ? kExitUsage : kExitModelError;
  const mbs::CompileResult& compiled = session.compile_result();
  session.options() = o.sopts;
  // the model's experiment annotation: the defaults of what the command line did not give
  // (no model after --emit)
  if (session.model() != nullptr) {
    const mbs::rt::CompiledModel& m = *session.model();
    const std::string applied = mbs::rt::apply_experiment(m, session.options(), o.sopts_given);
    if (!applied.empty() && o.copts.verbose)
      std::cerr << "mbsc: from the model's experiment annotation: " << applied << "\n";
    if (auto err = mbs::rt::validate(session.options())) {
      std::cerr << "mbsc: error: with the model's experiment annotation (" << applied
                << "): " << *err << "\n";
      return kExitUsage;
    }
  }
  double ready_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_process)
          .count();
  if (o.copts.verbose)
    std::cerr << fmt::format("mbsc: compiled in {:.1f} ms ({:.1f} ms since process start)\n",
                             compiled.total_ms, ready_ms);
  if (!o.copts.emit.empty()) return kExitOk;
  if (o.fmu.active()) {
    if (const int code = mbs::cli::run_fmu_export(session, o.fmu, o.copts.verbose); code != kExitOk)
      return code;
    if (!o.simulate && !o.do_static && !o.do_linearize && !o.do_eigen) return kExitOk;
  }
  if (o.study.active()) {
    if (o.inverse || o.do_linearize || o.do_eigen) {
      std::cerr << "mbsc: error: a study (--vary) runs simulations (or --static); it cannot be "
                   "combined with --inverse-dynamics, --linearize or --eigen\n";
      return kExitUsage;
    }
    mbs::rt::install_interrupt_handler();
    mbs::rt::StderrProgress progress(mbs::rt::progress_mode(o.copts.verbose, o.quiet),
                                     o.progress_interval);
    return mbs::cli::run_study(session, o.study, o.do_static, o.output, progress);
  }
  mbs::rt::install_interrupt_handler();
  mbs::rt::StderrProgress progress(mbs::rt::progress_mode(o.copts.verbose, o.quiet),
                                   o.progress_interval);
  if (o.inverse) {
    mbs::cli::InverseRequest r;
    r.options = o.iopts;
    r.options.t_end = o.sopts.t_end;
    r.options.h = o.sopts.h;
    r.options.trajectory = o.trajectory;
    // with a trajectory file and neither --t-end nor --step: its own sample times from t0
    r.times_from_trajectory =
        !o.trajectory.empty() && app.count("--t-end") == 0 && app.count("--step") == 0;
    r.output = o.output;
    r.animate = o.animate;
    r.animate_fps = o.animate_fps;
    r.animate_show = o.animate_show;
    return mbs::cli::run_inverse_dynamics(session, r, progress);
  }
  mbs::cli::AnalysisRequest r;
  r.simulate = o.simulate;
  r.do_static = o.do_static;
  r.linearize = o.do_linearize;
  r.eigen = o.do_eigen;
  r.output = o.output;
  r.outputs = o.outputs;
  r.stats_csv = o.stats_csv;
  r.verbose = o.copts.verbose;
  r.animate = o.animate;
  r.animate_fps = o.animate_fps;
  r.animate_show = o.animate_show;
  return mbs::cli::run_analyses(session, r, progress);
}
