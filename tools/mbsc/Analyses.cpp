#include "tools/mbsc/Analyses.h"

#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <span>
#include <sstream>

#include "runtime/analysis/Linearize.h"
#include "runtime/analysis/Modes.h"
#include "runtime/anim/Animation.h"
#include "runtime/invdyn/Trajectory.h"
#include "runtime/io/AtomicFile.h"
#include "runtime/io/ColumnSelect.h"
#include "runtime/io/ResultWriter.h"

namespace mbs::cli {

namespace {
// The columns of the result file: the model's outputs with the run's parameter values (the
// compiled ones when the values set are refused: the run then reports that itself).
rt::ResultColumns columns_of(Session& session, const std::string& first) {
  const rt::CompiledModel& model = *session.model();
  try {
    return rt::result_columns(model, session.instance().start_vector(), first);
  } catch (const std::exception&) {
    return rt::result_columns(model, model.v0, first);
  }
}
}  // namespace

int run_inverse_dynamics(Session& session, const InverseRequest& request,
                         rt::ProgressSink& progress) {
  const rt::CompiledModel& model = *session.model();
  {
    std::string output = request.output;
    if (output.empty()) output = model.name + "_inverse.csv";
    rt::InverseDynamicsOptions io = request.options;
    io.start = session.instance().start_vector();
    const std::string& trajectory = io.trajectory;
    if (request.times_from_trajectory) {
      const double t0 = model.v0[static_cast<size_t>(model.slot_time)];
      try {
        const rt::Trajectory file(trajectory);
        for (double t : file.times())
          if (t >= t0 - 1e-12) io.times.push_back(t);
      } catch (const std::exception& e) {
        std::cerr << "mbsc: error: " << e.what() << "\n";
        return kExitUsage;
      }
      if (io.times.empty()) {
        std::cerr << "mbsc: error: the trajectory file '" << trajectory
                  << "' has no sample at or after the model's start time " << t0 << "\n";
        return kExitUsage;
      }
    }
    auto t_run = std::chrono::steady_clock::now();
    rt::InverseDynamicsRun run;
    try {
      run = rt::inverse_dynamics_to_csv(session.model(), io, output, &progress);
    } catch (const std::exception& e) {
      progress.finish();
      std::cerr << "mbsc: error: " << e.what() << "\n";
      return kExitUsage;
    }
    double run_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_run).count();
    std::cerr << rt::format_inverse_summary(run);
    if (run.interrupted) {
      std::cerr << fmt::format(
          "mbsc: interrupted; the {} samples computed so far are in {}, each row whole\n",
          run.samples, output);
      return kExitInterrupted;
    }
    if (!run.ok) {
      std::cerr << "error: inverse dynamics: " << run.message << "\n";
      std::cerr << fmt::format("mbsc: {} samples are in {}\n", run.samples, output);
      return kExitSolverFailure;
    }
    std::cerr << fmt::format(
        "mbsc: compile {:.1f} ms, inverse dynamics {:.1f} ms; {} samples written to {}\n",
        session.compile_result().total_ms, run_s * 1e3, run.samples, output);
    if (!request.animate.empty()) {
      // the prescribed motion: the poses from the coordinates of the result file, by the model
      // compiled with the animation's outputs (docs/animation.md)
      CompileOptions copts = session.compile_options();
      copts.inverse_dynamics = false;
      copts.animation = true;
      std::ostringstream emit, diag;  // its warnings are those of the compile before
      const CompileResult compiled = compile(copts, emit, diag);
      if (!compiled.ok || !compiled.model) {
        std::cerr << diag.str();
        return kExitModelError;
      }
      try {
        const rt::AnimationTrack track =
            rt::replay_result(*compiled.model, rt::ResultTable::read_csv(output),
                              request.animate_show, request.animate_fps);
        rt::write_animation(request.animate, *compiled.model, track, compiled.model->name);
        std::cerr << fmt::format("mbsc: animation of {} shapes, {} time frames written to {}\n",
                                 compiled.model->shapes.size(), track.size(), request.animate);
      } catch (const std::exception& e) {
        std::cerr << "mbsc: error: " << e.what() << "\n";
        return kExitUsage;
      }
    }
    return kExitOk;
  }
}

namespace {

// --animate (docs/animation.md): the recorder of a run's rows, and the result file's columns,
// which leave the poses of the shapes' frames out.
class AnimatedRows {
 public:
  // fps 0: every row is a frame (the load steps of --static)
  AnimatedRows(const rt::CompiledModel& model, const AnalysisRequest& request, double fps)
      : model_(model), request_(request) {
    for (size_t i = 0; i < model.output_names.size(); ++i)
      if (!model.output_role.empty() && model.output_role[i] == rt::OutputRole::ShapePose)
        poses_ = true;
    if (request.animate.empty()) return;
    try {
      recorder_ = std::make_unique<rt::AnimationRecorder>(model, request.animate_show, fps);
    } catch (const rt::AnimationError& e) {
      error_ = e.what();
      return;
    }
    if (model.shapes.empty())
      std::cerr << "mbsc: warning: " << model.name
                << " has no shapes to draw (it has no multibody elements, or its World has "
                   "enableAnimation = false)\n";
  }
  const std::string& error() const { return error_; }
  // The columns of the result file: those chosen by --outputs (all when `chosen` is empty)
  // without the poses of the shapes' frames; false when only poses were chosen.
  bool result_selection(std::vector<int32_t>& chosen) const {
    if (!poses_) return true;
    const bool all = chosen.empty();
    if (all)
      for (size_t i = 0; i < model_.output_names.size(); ++i)
        chosen.push_back(static_cast<int32_t>(i));
    std::erase_if(chosen, [&](int32_t i) {
      return model_.output_role[static_cast<size_t>(i)] == rt::OutputRole::ShapePose;
    });
    return all || !chosen.empty();
  }
  void write(rt::ResultWriter& out, double t, std::span<const double> values) {
    if (recorder_) recorder_->add_row(t, values);
    out.write_row(t, values);
  }
  // Writes the animation (also after a failure or an interrupt: the rows so far); false after
  // an error, which it prints.
  bool finish(const char* abscissa) {
    if (!recorder_) return true;
    const auto t0 = std::chrono::steady_clock::now();
    rt::AnimationTrack track = recorder_->finish();
    track.abscissa = abscissa;
    try {
      rt::write_animation(request_.animate, model_, track, model_.name);
    } catch (const std::exception& e) {
      std::cerr << "mbsc: error: " << e.what() << "\n";
      return false;
    }
    std::cerr << fmt::format(
        "mbsc: animation of {} shapes on {} frames, {} {} frames written to {} in {:.1f} ms\n",
        model_.shapes.size(), model_.shape_frames.size(), track.size(), abscissa, request_.animate,
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    return true;
  }

 private:
  const rt::CompiledModel& model_;
  const AnalysisRequest& request_;
  std::unique_ptr<rt::AnimationRecorder> recorder_;
  bool poses_ = false;  // the model has the poses of the shapes' frames among its outputs
  std::string error_;
};

}  // namespace

int run_analyses(Session& session, const AnalysisRequest& request, rt::ProgressSink& progress) {
  const rt::CompiledModel& model = *session.model();
  const bool simulate = request.simulate, do_static = request.do_static;
  const bool do_linearize = request.linearize, do_eigen = request.eigen;
  const bool analyse = do_linearize || do_eigen;
  std::string output = request.output;
  const std::string& stats_csv = request.stats_csv;
  if (!simulate && !do_static && !analyse) {
    std::cerr << fmt::format(
        "mbsc: {}: model '{}' is fine: {} ODE2, {} ODE1, {} algebraic unknowns\n",
        session.compile_options().file, model.name, model.n_q, model.n_y, model.n_z);
    return kExitOk;
  }
  std::vector<int32_t> selection;  // --outputs: the chosen columns (empty: all)
  if (!request.outputs.empty()) {
    try {
      selection = rt::select_columns(model.output_names, request.outputs);
    } catch (const rt::ColumnSelectError& e) {
      std::cerr << "mbsc: error: --outputs: " << e.what() << "\n";
      return kExitUsage;
    }
  }
  // --animate: the recorder of the rows (every load step is a frame of --static; --simulate's
  // rows are resampled), and the result file's columns without the poses of the shapes
  AnimatedRows rows(model, request, do_static ? 0.0 : request.animate_fps);
  if (!rows.error().empty()) {
    std::cerr << "mbsc: error: " << rows.error() << "\n";
    return kExitUsage;
  }
  if (!rows.result_selection(selection)) {
    std::cerr << "mbsc: error: --outputs chose only the poses of the animation's shapes\n";
    return kExitUsage;
  }
  std::vector<double> state;  // the state linearised at: the equilibrium, or the start
  const rt::Statistics* last_stats = nullptr;
  rt::Statistics static_stats;

  // ---- static equilibrium
  if (do_static) {
    if (output.empty()) output = model.name + "_static.csv";
    std::unique_ptr<rt::ResultWriter> csv;
    try {
      csv = rt::open_result_writer(output, columns_of(session, "load"), selection);
    } catch (const std::exception& e) {
      std::cerr << "mbsc: error: " << e.what() << "\n";
      return kExitUsage;
    }
    rt::StaticResult res;
    try {
      res = session.solve_static(
          [&](double load, std::span<const double> values) {
            rows.write(*csv, load, values);
            return 0;
          },
          &progress);
    } catch (const rt::SolverSetupError& e) {
      std::cerr << "mbsc: error: " << e.what() << "\n";
      return kExitUsage;
    }
    try {
      csv->close();
    } catch (const std::exception& e) {
      std::cerr << "mbsc: error: " << e.what() << "\n";
      return kExitUsage;
    }
    static_stats = res.statistics;
    last_stats = &static_stats;
    if (!rows.finish("load")) return kExitUsage;
    if (res.status == rt::SolveStatus::Failed) {
      std::cerr << res.failure->message;
      if (!res.failure->message.empty() && res.failure->message.back() != '\n') std::cerr << "\n";
      std::cerr << fmt::format("mbsc: {} load steps are in {}\n", csv->rows(), output);
      return kExitSolverFailure;
    }
    std::cerr << fmt::format(
        "mbsc: {} static equilibrium in {} load steps ({} rejected), {} Newton iterations; "
        "{} rows written to {}\n",
        model.name, res.statistics.steps, res.statistics.rejected_steps,
        res.statistics.newton_iterations, csv->rows(), output);
    if (res.status == rt::SolveStatus::Interrupted) return kExitInterrupted;
    state = res.v;
  }

  // ---- simulate (or only the consistent start state, to linearise at)
  mbs::SimulationRun run;
  const auto print_failure = [&](const mbs::SimulationRun& r) {
    std::cerr << r.failure->message;
    if (!r.failure->message.empty() && r.failure->message.back() != '\n') std::cerr << "\n";
  };
  if (analyse && state.empty() && !simulate) {
    run = session.initialize();
    if (!run.setup_error.empty()) {
      // the model is fine, the chosen solver or its options do not fit it
      std::cerr << "mbsc: error: " << run.setup_error << "\n";
      return kExitUsage;
    }
    for (const auto& w : run.warnings) std::cerr << w << "\n";
    if (run.status == rt::SolveStatus::Failed) {
      print_failure(run);
      return kExitSolverFailure;
    }
    state = run.state;
  }
  if (simulate) {
    if (output.empty()) output = model.name + ".csv";
    std::unique_ptr<rt::ResultWriter> csv;
    const auto open_csv = [&]() -> bool {
      try {
        csv = rt::open_result_writer(output, columns_of(session, "time"), selection);
        return true;
      } catch (const std::exception& e) {
        std::cerr << "mbsc: error: " << e.what() << "\n";
        return false;
      }
    };
    // the file is opened once the solver has accepted the model and options (as before: a
    // setup error leaves no file behind)
    bool opened = false, open_failed = false;
    run = session.simulate(
        [&](double t, std::span<const double> values) {
          if (!opened) {
            opened = true;
            if (!open_csv()) {
              open_failed = true;
              return 1;
            }
          }
          rows.write(*csv, t, values);
          return 0;
        },
        &progress);
    if (!run.setup_error.empty()) {
      std::cerr << "mbsc: error: " << run.setup_error << "\n";
      return kExitUsage;
    }
    if (open_failed) return kExitUsage;
    if (!opened && !open_csv()) return kExitUsage;
    try {
      csv->close();
    } catch (const std::exception& e) {
      std::cerr << "mbsc: error: " << e.what() << "\n";
      return kExitUsage;
    }
    const auto& st = run.statistics;
    last_stats = &run.statistics;
    if (!rows.finish("time")) return kExitUsage;
    if (run.status == rt::SolveStatus::Failed) {
      print_failure(run);
      std::cerr << fmt::format("mbsc: the run stopped at t = {}; the {} rows before are in {}\n",
                               run.t, csv->rows(), output);
      return kExitSolverFailure;
    }
    std::cerr << fmt::format(
        "mbsc: {} simulated to t = {} with {}: {} steps, {} Newton iterations, {} "
        "factorizations\n"
        "mbsc: compile {:.1f} ms, run {:.1f} ms; {} rows written to {}\n",
        model.name, run.t, run.solver, st.steps, st.newton_iterations, st.factorizations,
        session.compile_result().total_ms, run.run_ms, csv->rows(), output);
    if (run.status == rt::SolveStatus::Interrupted) {
      std::cerr << "mbsc: interrupted; the result file is complete up to the last row\n";
      return kExitInterrupted;
    }
  }
  if (last_stats) {
    if (request.verbose) std::cerr << rt::format_statistics_table(*last_stats, "solver statistics");
    if (!stats_csv.empty()) {
      try {
        rt::write_file_atomically(stats_csv, rt::statistics_csv_header() + "\n" +
                                                 rt::format_statistics_csv(*last_stats) + "\n");
      } catch (const std::exception& e) {
        std::cerr << "mbsc: error: the statistics: " << e.what() << "\n";
        return kExitUsage;
      }
    }
  }

  // ---- linearisation and eigenvalues
  if (analyse) {
    rt::LinearSystem sys;
    try {
      sys = rt::linearize(model, state);
    } catch (const std::exception& e) {
      std::cerr << "mbsc: error: linearisation failed: " << e.what() << "\n";
      return kExitSolverFailure;
    }
    if (do_linearize) {
      std::string prefix = model.name;
      if (!output.empty()) {
        prefix = output;
        auto dot = prefix.rfind('.');
        auto slash = prefix.rfind('/');
        if (dot != std::string::npos && (slash == std::string::npos || dot > slash))
          prefix.erase(dot);
      }
      std::vector<std::string> written;
      try {
        rt::write_linear_system(sys, prefix, &written);
      } catch (const std::exception& e) {
        std::cerr << "mbsc: error: " << e.what() << "\n";
        return kExitUsage;
      }
      std::cerr << "mbsc: linearised at " << (do_static ? "the static equilibrium" : "the start")
                << "; wrote";
      for (const auto& w : written) std::cerr << " " << w;
      std::cerr << "\n";
    }
    if (do_eigen) {
      std::string error;
      auto modes = rt::eigenmodes(sys, &error);
      if (!error.empty()) {
        std::cerr << "mbsc: error: eigenvalue analysis: " << error << "\n";
        return kExitSolverFailure;
      }
      std::cout << "eigenvalues of " << model.name << " at "
                << (do_static ? "the static equilibrium" : "the start") << ":\n"
                << rt::format_modes(modes);
    }
  }
  return kExitOk;
}

}  // namespace mbs::cli
