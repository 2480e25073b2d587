// The study flags of mbsc (--vary, --objective, ...), the study file (--study FILE: its lines
// are options) and `mbsc monitor`: views of compiler/driver/Studies and runtime/drivers.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "compiler/driver/Session.h"
#include "runtime/drivers/Genetic.h"
#include "runtime/drivers/Minimize.h"
#include "runtime/drivers/Mpi.h"
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
  bool mpi = false;  // distribute over the ranks of mpirun (implied by a launcher of >1 ranks)
  bool active() const { return !vary.empty() || !optimize.empty() || !sensitivity.empty(); }
};

void add_study_flags(CLI::App& app, StudyFlags& flags);

// Checks of a number option: finite and above 0 (`what` names it in the message: "number of
// seconds"), or finite and not negative. The messages say so in words, where CLI11's
// PositiveNumber and NonNegativeNumber print the range of doubles in 300 digits.
CLI::Validator positive_number(const std::string& what = "number");
CLI::Validator non_negative_number();

// argv with every `--study FILE` replaced by the options its lines hold (docs/studies.md, "The
// study file"). False (after a message) when a file cannot be read or has a bad line: one that
// names no option of `app` is reported at FILE:LINE with the option meant.
bool expand_study_files(int argc, char** argv, std::vector<std::string>& args, const CLI::App& app);

// Runs the study and prints its summary; returns the exit code.
int run_study(Session& session, const StudyFlags& flags, bool static_analysis, std::string output,
              rt::ProgressSink& progress);

// ---- MPI (docs/studies.md, "Across machines: MPI")
// Starts MPI when a launcher (mpirun) started several ranks or --mpi asks for it. Returns the exit
// code when this process has nothing more to do — this mbsc was built without MPI (it says so and
// how to get it), or it is rank > 0 of a command that is not a study (that runs on rank 0 alone)
// — else -1. Every rank then compiles; rank 0 runs the study, the others serve it.
int start_mpi(const StudyFlags& flags);
// Ends MPI (rt::mpi_stop: rank 0 stops the workers) on every way out of main.
struct MpiScope {
  MpiScope() = default;
  MpiScope(const MpiScope&) = delete;
  MpiScope& operator=(const MpiScope&) = delete;
  ~MpiScope() { rt::mpi_stop(); }
};

// `mbsc monitor [FILE.csv] [--once] [--interval S]`.
int monitor_command(int argc, char** argv);

}  // namespace mbs::cli
