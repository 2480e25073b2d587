#include "tools/mbsc/StudyCli.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "compiler/driver/Studies.h"
#include "runtime/drivers/StudyFile.h"
#include "runtime/io/AtomicFile.h"
#include "runtime/io/ResultWriter.h"
#include "runtime/io/Suggest.h"
#include "tools/mbsc/Analyses.h"

namespace mbs::cli {

namespace {

// Where the most recent study's file is noted, for `mbsc monitor` without a file.
std::string last_study_note() {
  const std::string dir = default_cache_dir();
  return dir.empty() || dir == "off" ? std::string() : dir + "/last-study";
}

}  // namespace

void add_study_flags(CLI::App& app, StudyFlags& flags) {
  const std::string group = "Studies (docs/studies.md)";
  app.add_option("--vary", flags.vary,
                 "vary a parameter or start value: NAME=1,2,5 (a list), NAME=FROM:TO:COUNT (a "
                 "linear range) or NAME=FROM:TO:COUNT:log; several --vary make the full grid "
                 "(the first outermost); results in --output (default <model>_variation.csv), "
                 "one row per run")
      ->type_name("NAME=VALUES")
      ->allow_extra_args(false)
      ->group(group);
  app.add_flag("--paired", flags.paired,
               "the --vary lists are paired (run i takes the i-th value of each) instead of a grid")
      ->group(group);
  app.add_option("--objective", flags.objectives,
                 "an objective per run: final(e), max(e), min(e), maxabs(e), mean(e), integral(e), "
                 "rms(e), l2(e) or fit(e, \"data.csv\"[, \"column\"]) of an expression e of the "
                 "model's variables")
      ->type_name("EXPR")
      ->allow_extra_args(false)
      ->group(group);
  app.add_flag("--resume", flags.resume,
               "continue the study in --output: runs already there are not run again")
      ->group(group);
  app.add_option("-j,--threads", flags.threads, "threads for a study (default: all cores)")
      ->check(CLI::Range(0, 4096))
      ->group(group);
  app.add_option("--optimize", flags.optimize,
                 "minimise the first --objective over the --range variables: genetic (seed 002's "
                 "genetic optimisation) or minimize (NLopt, --method)")
      ->check(CLI::IsMember({"genetic", "minimize"}))
      ->group(group);
  app.add_option("--range", flags.ranges,
                 "a variable of --optimize with its bounds: NAME=LOWER:UPPER, or "
                 "NAME=LOWER:UPPER:START (the minimiser's start; default the middle)")
      ->type_name("NAME=LO:HI")
      ->allow_extra_args(false)
      ->group(group);
  app.add_option("--sensitivity", flags.sensitivity,
                 "d objective / d NAME at the model's values (with --set/--start), exact by "
                 "default or by central differences (--sensitivity-method fd); NAME=LOWER:UPPER "
                 "keeps the differences inside bounds")
      ->type_name("NAME")
      ->allow_extra_args(false)
      ->group(group);
  auto& g = flags.genetic;
  app.add_option("--initial-population", g.initial_population,
                 "genetic: random individuals of the first generation (default 100)")
      ->check(CLI::Range(1, 100000000))
      ->group(group);
  app.add_option("--population", g.population,
                 "genetic: children per later generation (default 100)")
      ->check(CLI::Range(1, 100000000))
      ->group(group);
  app.add_option("--generations", g.generations,
                 "genetic: generations, the first included (default 10)")
      ->check(CLI::Range(1, 100000))
      ->group(group);
  app.add_option("--survivors", g.survivors,
                 "genetic: best individuals kept per generation (default 10)")
      ->check(CLI::Range(1, 100000000))
      ->group(group);
  app.add_option("--crossover-amount", g.crossover_amount,
                 "genetic: share of the children made by crossover (default 0.5)")
      ->check(CLI::Range(0.0, 1.0))
      ->group(group);
  app.add_option("--range-reduction", g.range_reduction,
                 "genetic: the mutation range shrinks by this factor per generation (default 0.7)")
      ->check(CLI::Range(0.0, 1.0))
      ->group(group);
  app.add_option("--distance-factor", g.distance_factor,
                 "genetic: least relative distance between survivors (default 0.1; 0: none)")
      ->check(CLI::Range(0.0, 1.0))
      ->group(group);
  app.add_option("--seed", flags.seed,
                 "genetic: the random seed (default: drawn and printed); the same seed gives the "
                 "same study, whatever -j")
      ->check(CLI::Range(int64_t{0}, std::numeric_limits<int64_t>::max()))
      ->group(group);
  app.add_option("--method", flags.method,
                 "minimize: nelder-mead (default), bobyqa, cobyla (derivative-free), lbfgs, slsqp "
                 "(gradient-based: the gradient from the exact sensitivities, or by central "
                 "differences with --sensitivity-method fd)")
      ->check(CLI::IsMember({"nelder-mead", "bobyqa", "cobyla", "lbfgs", "slsqp"}))
      ->group(group);
  auto& m = flags.minimize;
  app.add_option("--x-rel-tol", m.x_rel_tol,
                 "minimize: stop when a step changes every variable by less than this relative "
                 "amount (default 1e-4)")
      ->check(non_negative_number())
      ->group(group);
  app.add_option("--x-abs-tol", m.x_abs_tol, "minimize: ... or by less than this (default off)")
      ->check(non_negative_number())
      ->group(group);
  app.add_option("--f-rel-tol", m.f_rel_tol,
                 "minimize: stop when a step changes the objective by less than this relative "
                 "amount (default off)")
      ->check(non_negative_number())
      ->group(group);
  app.add_option("--f-abs-tol", m.f_abs_tol, "minimize: ... or by less than this (default off)")
      ->check(non_negative_number())
      ->group(group);
  app.add_option("--max-evaluations", m.max_evaluations,
                 "minimize: objective evaluations at most (default 200 per variable)")
      ->check(CLI::Range(0, 100000000))
      ->group(group);
  app.add_option("--sensitivity-method", flags.sensitivity_method,
                 "exact (default: forward sensitivities of the discrete solution, one run; "
                 "every integrator) or fd (central differences); also the "
                 "gradient of lbfgs/slsqp")
      ->check(CLI::IsMember({"exact", "fd"}))
      ->group(group);
  app.add_option("--fd-step", flags.fd.relative_step,
                 "finite differences (--sensitivity, the gradient of lbfgs/slsqp): relative step "
                 "h_i = STEP * max(|x_i|, 1) (default eps^(1/3) = 6.06e-6)")
      ->check(positive_number())
      ->group(group);
  app.add_flag("--mpi", flags.mpi,
               "distribute the study over the ranks of an MPI job: mpirun -np N mbsc ... (implied "
               "under mpirun with N > 1; rank 0 writes the file, N - 1 ranks run)")
      ->group(group);
}

bool expand_study_files(int argc, char** argv, std::vector<std::string>& args,
                        const CLI::App& app) {
  std::vector<std::string> names;  // the long options, without their dashes
  for (const CLI::Option* opt : app.get_options())
    for (const std::string& n : opt->get_lnames()) names.push_back(n);
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    std::string file;
    if (a == "--study" && i + 1 < argc)
      file = argv[++i];
    else if (a.rfind("--study=", 0) == 0)
      file = a.substr(8);
    else {
      args.push_back(a);
      continue;
    }
    std::ifstream in(file);
    if (!in) {
      std::cerr << "mbsc: error: cannot read the study file '" << file << "'\n";
      return false;
    }
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      const size_t b = line.find_first_not_of(" \t\r");
      if (b == std::string::npos || line[b] == '#') continue;
      const size_t e = line.find_last_not_of(" \t\r");
      line = line.substr(b, e - b + 1);
      const size_t sp = line.find_first_of(" \t");
      const std::string key = line.substr(0, sp);
      if (key.rfind("-", 0) == 0 || key == "study") {
        std::cerr << fmt::format(
            "{}:{}: error: '{}': a line is an option without its leading '--' and its value, "
            "e.g. 'vary k=1,2,5' (a study file cannot name another)\n",
            file, n, key);
        return false;
      }
      if (std::find(names.begin(), names.end(), key) == names.end()) {
        const std::string meant = rt::meant_name(key, names);
        std::cerr << fmt::format(
            "{}:{}: error: '{}' is no option of mbsc{}\n", file, n, key,
            meant.empty() ? "; `mbsc --help` lists them" : "; did you mean '" + meant + "'?");
        return false;
      }
      args.push_back("--" + key);
      if (sp != std::string::npos) {
        const std::string value = line.substr(line.find_first_not_of(" \t", sp));
        args.push_back(value);
      }
    }
  }
  return true;
}

int run_study(Session& session, const StudyFlags& flags, bool static_analysis, std::string output,
              rt::ProgressSink& progress) {
  const int kinds = !flags.vary.empty() + !flags.optimize.empty() + !flags.sensitivity.empty();
  if (kinds > 1) {
    std::cerr << "mbsc: error: --vary, --optimize and --sensitivity are three studies: run one at "
                 "a time\n";
    return kExitUsage;
  }
  if (!flags.ranges.empty() && flags.optimize.empty()) {
    std::cerr << "mbsc: error: --range names a variable of --optimize\n";
    return kExitUsage;
  }
  const std::string kind = !flags.vary.empty()       ? "variation"
                           : !flags.optimize.empty() ? flags.optimize
                                                     : "sensitivity";
  if (output.empty()) output = session.model()->name + "_" + kind + ".csv";
  if (rt::is_mat_path(output)) {  // one row per run, not a result over time
    std::cerr << "mbsc: error: a study's results file is CSV (one row per run); --output '"
              << output << "' ends in .mat\n";
    return kExitUsage;
  }
  StudyOptions options;
  options.objectives = flags.objectives;
  options.output = output;
  options.resume = flags.resume;
  options.threads = flags.threads;
  options.analysis = static_analysis ? rt::StudyAnalysis::Static : rt::StudyAnalysis::Simulate;
  VariationOptions variation;
  variation.axes = flags.vary;
  variation.paired = flags.paired;
  if (const std::string note = last_study_note(); !note.empty() && !rt::mpi_worker()) {
    try {
      std::filesystem::create_directories(std::filesystem::path(note).parent_path());
      rt::write_file_atomically(note, std::filesystem::absolute(output).string() + "\n");
    } catch (const std::exception&) {
      // only a convenience for `mbsc monitor`
    }
  }
  StudyReport r;
  SensitivityReport sens;
  std::ostream quiet_worker(nullptr);  // MPI: rank 0 prints the diagnostics
  std::ostream& diag = rt::mpi_worker() ? quiet_worker : std::cerr;
  if (!flags.vary.empty()) {
    r = run_variation(session, variation, options, diag, &progress);
  } else if (!flags.optimize.empty()) {
    OptimizeOptions o;
    o.kind = flags.optimize == "genetic" ? OptimizerKind::Genetic : OptimizerKind::Minimize;
    o.ranges = flags.ranges;
    o.genetic = flags.genetic;
    if (flags.seed >= 0) o.genetic.seed = static_cast<uint64_t>(flags.seed);
    o.minimize = flags.minimize;
    o.minimize.method = *rt::minimize_method_from_name(flags.method);
    o.minimize.gradient = flags.fd;
    o.exact_gradient = flags.sensitivity_method == "exact";
    r = run_optimization(session, o, options, diag, &progress);
  } else {
    sens = run_sensitivity(session, flags.sensitivity, flags.fd,
                           flags.sensitivity_method == "exact", options, diag, &progress);
    r = sens.study;
  }
  progress.finish();
  // MPI: a worker has served rank 0, which reports and writes the file
  if (rt::mpi_worker()) return r.ok ? kExitOk : r.model_error ? kExitModelError : kExitUsage;
  if (!r.ok) {
    if (r.model_error) return kExitModelError;
    std::cerr << "mbsc: error: " << r.error << "\n";
    return kExitUsage;
  }
  std::cerr << fmt::format(
      "mbsc: {} of {}: {} runs ({} run now, {} from the file), {} "
      "failed, {:.1f} s {}; rows in {}\n",
      kind, session.model()->name, r.total, r.run_now, r.resumed, r.failed, r.wall_ms / 1e3,
      rt::mpi_active() ? fmt::format("on {} MPI worker ranks", rt::mpi_size() - 1)
                       : fmt::format("with {} threads", rt::study_threads(flags.threads)),
      output);
  if (!r.message.empty()) std::cerr << "mbsc: " << kind << ": " << r.message << "\n";
  const std::vector<std::string>& specs = !flags.vary.empty()     ? flags.vary
                                          : !flags.ranges.empty() ? flags.ranges
                                                                  : flags.sensitivity;
  const auto name_of = [&](size_t i) { return specs[i].substr(0, specs[i].find('=')); };
  if (r.best >= 0 && flags.sensitivity.empty()) {
    std::string where;
    for (size_t i = 0; i < specs.size() && i < r.best_values.size(); ++i)
      where += fmt::format("{}{} = {:.10g}", i ? ", " : "", name_of(i), r.best_values[i]);
    std::cerr << fmt::format("mbsc: smallest {} = {:.10g} in run {} ({})\n", flags.objectives[0],
                             r.best_value, r.best, where);
  }
  if (!flags.sensitivity.empty()) {
    // the derivatives to stdout: one line per objective and variable
    const auto& res = sens.result;
    for (const auto& w : res.warnings) std::cerr << "mbsc: warning: " << w << "\n";
    std::cout << fmt::format("sensitivities of {} at", session.model()->name);
    for (size_t i = 0; i < res.reference.size(); ++i)
      std::cout << fmt::format("{} {} = {:.10g}", i ? "," : "", name_of(i), res.reference[i]);
    std::cout << (sens.exact ? " (exact: sensitivities of the discrete solution):\n"
                             : " (central differences):\n");
    for (size_t k = 0; k < res.derivative.size(); ++k)
      for (size_t i = 0; i < res.derivative[k].size(); ++i)
        std::cout << fmt::format("  d {} / d {} = {:.10g}\n", flags.objectives[k], name_of(i),
                                 res.derivative[k][i]);
  }
  if (r.interrupted) {
    std::cerr << "mbsc: interrupted; every finished run is in " << output
              << (flags.vary.empty() ? "\n" : " (continue with --resume)\n");
    return kExitInterrupted;
  }
  return kExitOk;
}

int start_mpi(const StudyFlags& flags) {
  const int launched = rt::mpi_launcher_size();
  if (!flags.mpi && launched <= 1) return -1;
  if (!flags.active()) {
    if (flags.mpi) {
      std::cerr << "mbsc: error: --mpi distributes a study (--vary, --optimize, --sensitivity)\n";
      return kExitUsage;
    }
    // a simulation under mpirun: one rank runs it, the others would write the same files
    return rt::mpi_launcher_rank() == 0 ? -1 : kExitOk;
  }
  if (!rt::mpi_available) {
    if (rt::mpi_launcher_rank() == 0)
      std::cerr << fmt::format(
          "mbsc: error: this mbsc was built without MPI, so it cannot share a study between {}: "
          "install Open MPI (Debian: apt-get install libopenmpi-dev openmpi-bin), run cmake again "
          "(it turns MBS_MPI on when it finds MPI) and rebuild, or run the study without mpirun "
          "(-j N for threads)\n",
          launched > 1 ? fmt::format("the {} ranks of mpirun", launched)
                       : std::string("the ranks of an MPI job (--mpi)"));
    return kExitUsage;
  }
  rt::mpi_start();
  if (rt::mpi_size() == 1)
    std::cerr << "mbsc: note: --mpi with one rank: the study runs on threads (start it with "
                 "mpirun -np N, N > 1)\n";
  return -1;
}

namespace {
CLI::Validator number_check(bool zero_allowed, std::string words) {
  return CLI::Validator(
      [zero_allowed, words](std::string& text) -> std::string {
        double x = 0;
        if (CLI::detail::lexical_cast(text, x) && std::isfinite(x) &&
            (zero_allowed ? x >= 0 : x > 0))
          return {};
        return fmt::format("'{}' is not {}", text, words);
      },
      zero_allowed ? "NONNEGATIVE" : "POSITIVE");
}
}  // namespace

CLI::Validator positive_number(const std::string& what) {
  return number_check(false, "a positive " + what);
}

CLI::Validator non_negative_number() {
  return number_check(true, "a number >= 0");
}

int monitor_command(int argc, char** argv) {
  CLI::App app{"show a study's progress from its results file as it grows", "mbsc monitor"};
  std::string file;
  bool once = false;
  double interval = 1.0;
  app.add_option("file", file, "the study's results file (default: the most recent study's)")
      ->type_name("FILE.csv");
  app.add_flag("--once", once, "print the state once and exit");
  app.add_option("--interval", interval, "seconds between refreshes (default 1)")
      ->check(positive_number("number of seconds"));
  app.footer("Exit codes: 0 shown; 2 no such study file.\nDocumentation: docs/studies.md");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  if (file.empty()) {
    std::ifstream in(last_study_note());
    if (!in || !std::getline(in, file) || file.empty()) {
      std::cerr << "mbsc monitor: error: no study has run yet here; name its results file\n";
      return kExitUsage;
    }
  }
  const bool tty = ::isatty(1) != 0;
  for (;;) {
    rt::StudySummary s;
    try {
      s = rt::summarize_study(file);
    } catch (const std::exception& e) {
      std::cerr << "mbsc monitor: error: " << e.what() << "\n";
      return kExitUsage;
    }
    if (tty && !once) std::cout << "\x1b[H\x1b[J";  // redraw in place
    std::cout << rt::format_study_summary(s, file) << std::flush;
    if (once || !s.running) return kExitOk;
    std::this_thread::sleep_for(std::chrono::duration<double>(interval));
  }
}

}  // namespace mbs::cli
