// The analyses of one model from the command line (simulate, static, linearise, eigenvalues,
// inverse dynamics): views of the session that write the result files and print the summaries.
#pragma once

#include <string>
#include <vector>

#include "compiler/driver/Session.h"
#include "runtime/invdyn/InverseDynamics.h"
#include "runtime/io/Progress.h"

namespace mbs::cli {

// Exit codes (documented in --help and docs/cli.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitModelError = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitSolverFailure = 3;
inline constexpr int kExitInterrupted = 130;

struct AnalysisRequest {
  bool simulate = false, do_static = false, linearize = false, eigen = false;
  std::string output;  // result file ("" = <model>.csv, <model>_static.csv; .mat: MATLAB v4)
  std::vector<std::string> outputs;  // --outputs: the columns written (names, globs; empty: all)
  std::string stats_csv;             // solver statistics as CSV ("" = none)
  bool verbose = false;
  // --animate FILE (the model compiled with CompileOptions::animation), --animate-fps,
  // --animate-show: the animation of the simulation (docs/animation.md)
  std::string animate;
  double animate_fps = 60;
  std::vector<std::string> animate_show;
};
// --simulate, --static, --linearize, --eigen (or only the check when none): the exit code.
int run_analyses(Session& session, const AnalysisRequest& request, rt::ProgressSink& progress);

struct InverseRequest {
  rt::InverseDynamicsOptions options;  // t_end, h, trajectory, logged, ranks, balance
  bool times_from_trajectory = false;  // the trajectory file's own sample times from t0
  std::string output;                  // "" = <model>_inverse.csv
  // --animate FILE: the prescribed motion from the result file (rt::replay_result)
  std::string animate;
  double animate_fps = 60;
  std::vector<std::string> animate_show;
};
int run_inverse_dynamics(Session& session, const InverseRequest& request,
                         rt::ProgressSink& progress);

}  // namespace mbs::cli
