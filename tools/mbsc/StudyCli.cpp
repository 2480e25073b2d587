#include "tools/mbsc/StudyCli.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "compiler/driver/Studies.h"
#include "runtime/drivers/StudyFile.h"
#include "runtime/io/AtomicFile.h"

namespace mbs::cli {

namespace {

constexpr int kExitOk = 0, kExitModelError = 1, kExitUsage = 2, kExitInterrupted = 130;

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
}

bool expand_study_files(int argc, char** argv, std::vector<std::string>& args) {
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
  if (output.empty()) output = session.model()->name + "_variation.csv";
  StudyOptions options;
  options.objectives = flags.objectives;
  options.output = output;
  options.resume = flags.resume;
  options.threads = flags.threads;
  options.analysis = static_analysis ? rt::StudyAnalysis::Static : rt::StudyAnalysis::Simulate;
  VariationOptions variation;
  variation.axes = flags.vary;
  variation.paired = flags.paired;
  if (const std::string note = last_study_note(); !note.empty()) {
    try {
      std::filesystem::create_directories(std::filesystem::path(note).parent_path());
      rt::write_file_atomically(note, std::filesystem::absolute(output).string() + "\n");
    } catch (const std::exception&) {
      // only a convenience for `mbsc monitor`
    }
  }
  StudyReport r = run_variation(session, variation, options, std::cerr, &progress);
  progress.finish();
  if (!r.ok) {
    if (r.model_error) return kExitModelError;
    std::cerr << "mbsc: error: " << r.error << "\n";
    return kExitUsage;
  }
  std::cerr << fmt::format(
      "mbsc: variation of {}: {} runs ({} run now, {} from the file), {} "
      "failed, {:.1f} s with {} threads; rows in {}\n",
      session.model()->name, r.total, r.run_now, r.resumed, r.failed, r.wall_ms / 1e3,
      rt::study_threads(flags.threads), output);
  if (r.best >= 0) {
    std::string where;
    for (size_t i = 0; i < flags.vary.size() && i < r.best_values.size(); ++i)
      where += fmt::format("{}{} = {:.10g}", i ? ", " : "",
                           flags.vary[i].substr(0, flags.vary[i].find('=')), r.best_values[i]);
    std::cerr << fmt::format("mbsc: smallest {} = {:.10g} in run {} ({})\n", flags.objectives[0],
                             r.best_value, r.best, where);
  }
  if (r.interrupted) {
    std::cerr << "mbsc: interrupted; every finished run is in " << output
              << " (continue with --resume)\n";
    return kExitInterrupted;
  }
  return kExitOk;
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
      ->check(CLI::PositiveNumber);
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
