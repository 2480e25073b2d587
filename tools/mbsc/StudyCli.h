// The study flags of mbsc (--vary, --objective, ...), the study file (--study FILE: its lines
// are options) and `mbsc monitor`: views of compiler/driver/Studies and runtime/drivers.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "compiler/driver/Session.h"
#include "runtime/drivers/Genetic.h"
#include "runtime/drivers/Minimize.h"
#include "runtime/drivers/Sensitivity.h"
#include "runtime/io/Progress.h"

namespace mbs::cli {

struct StudyFlags {
  std::vector<std::string> vary;
  bool paired = false;
  std::vector<std::string> objectives;
  bool resume = false;
  int threads = 0;
  std::string optimize;                  // "genetic" or "minimize"
  std::vector<std::string> ranges;       // NAME=LOWER:UPPER[:START]
  std::vector<std::string> sensitivity;  // NAME: d objectives / d NAME at the current values
  std::string method = "nelder-mead";
  int64_t seed = -1;
  rt::GeneticOptions genetic;
  rt::MinimizeOptions minimize;
  rt::SensitivityOptions fd;
  std::string sensitivity_method = "exact";  // exact | fd
  // the model needs the kernels of exact sensitivities
  bool needs_sensitivity_kernels() const {
    return (!sensitivity.empty() && sensitivity_method == "exact") ||
           (optimize == "minimize" && (method == "lbfgs" || method == "slsqp") &&
            sensitivity_method == "exact");
  }
  bool active() const { return !vary.empty() || !optimize.empty() || !sensitivity.empty(); }
};

void add_study_flags(CLI::App& app, StudyFlags& flags);

// argv with every `--study FILE` replaced by the options its lines hold (docs/studies.md, "The
// study file"). False (after a message) when a file cannot be read or has a bad line.
bool expand_study_files(int argc, char** argv, std::vector<std::string>& args);

// Runs the study and prints its summary; returns the exit code.
int run_study(Session& session, const StudyFlags& flags, bool static_analysis, std::string output,
              rt::ProgressSink& progress);

// `mbsc monitor [FILE.csv] [--once] [--interval S]`.
int monitor_command(int argc, char** argv);

}  // namespace mbs::cli
