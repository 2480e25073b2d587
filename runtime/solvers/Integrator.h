// The life cycle every time integrator shares (SUNDIALS-like):
//
//   auto solver = make_integrator(model, options);  // checks model and options, allocates all;
//                                                   //   shares (or copies) the model
//   solver->initialize();                           // consistent initial values (optional:
//                                                   //   run() does it if not done)
//   solver->run(observer);                          // to t_end, observer at output points
//   solver->statistics(); solver->failure();        // what it cost, why it stopped
//
// or step() for one step of the output grid at a time (REPL). The grid is t0 + n h, the last
// point is t_end. A failed step attempt (Newton failure, a kernel's non-finite status) is
// retried with half the step, down to h_min; after two successful steps the step doubles again,
// back up to h. Nothing allocates inside step() and run() (besides the observer's own work and
// the one-time failure message).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/io/Interrupt.h"
#include "runtime/io/Progress.h"
#include "runtime/model/CompiledModel.h"
#include "runtime/model/RotationCharts.h"
#include "runtime/model/Workspace.h"
#include "runtime/solvers/Failure.h"
#include "runtime/solvers/Options.h"
#include "runtime/solvers/Statistics.h"

namespace mbs::rt {

enum class SolveStatus : uint8_t {
  Ok,           // step() or initialize() succeeded, t_end not reached yet
  Finished,     // t_end reached
  Interrupted,  // SIGINT (interrupt_requested()) seen; the last accepted point was output
  Stopped,      // the observer returned non-zero
  Failed,       // see failure()
};
std::string_view status_name(SolveStatus s);

// One direction of exact sensitivities: how the parameters and the start values change along it
// (rt::Instance::sensitivity_direction builds them for a parameter or a start value).
struct SensitivityDirection {
  std::vector<double> dp;     // per parameter: d parameter / d direction (derived ones included)
  std::vector<double> start;  // d [q | qd | y](t0) / d direction (2 n_q + n_y)
};

// Called at output points with t and the model's outputs there (model.outputs, in the order of
// model.output_names). Return 0 to continue; anything else stops the run (status Stopped).
using Observer = std::function<int(double t, std::span<const double> outputs)>;

class Integrator {
 public:
  virtual ~Integrator() = default;
  Integrator(const Integrator&) = delete;
  Integrator& operator=(const Integrator&) = delete;

  virtual SolveStatus initialize() = 0;
  // Exact forward sensitivities of the discrete solution along `directions` (before
  // initialize(); needs a model compiled with sensitivities). Throws SolverSetupError when the
  // method or the model cannot provide them.
  void enable_sensitivities(std::vector<SensitivityDirection> directions);
  int32_t sensitivity_directions() const { return n_directions_; }
  // d outputs / d direction at the current point: directions x outputs, row-major.
  void output_sensitivities(std::span<double> out);
  // Starts from the symbol vector `v` (parameters and start values set at run time,
  // rt::Instance) instead of the model's v0. Before initialize(); v has n_v entries. Its time
  // (v[slot_time]) is the start time: another than the model's re-bases the grid (t0 + n h up to
  // options.t_end, which must lie after it). Throws SolverSetupError otherwise.
  void set_start(std::span<const double> v);
  // ---- co-simulation (an FMU's doStep; docs/fmu.md, "Co-simulation")
  // From the current point to t_stop exactly, in steps of options.h on a grid re-based at the
  // current time (t_stop - t need not be a multiple of h: the last step is shorter). Initializes
  // first if needed. Ok when t_stop is reached (also at or beyond options.t_end: the grid of
  // step() and run() is replaced by [t, t_stop]; t_end() tells the current end), Failed with
  // failure() set, Interrupted on SIGINT (adaptive methods). t_stop before the current time
  // throws SolverSetupError. Pieces that are multiples of h reproduce one run to the same end
  // bitwise for a fixed-step method and a model that does not read time (the grid points are
  // computed from another origin otherwise, which changes them by rounding).
  SolveStatus advance_to(double t_stop);
  // Sets top-level input i (model.inputs) to `value`, held constant over the following steps
  // until set again. A changed value restarts the method at the next step like an event: the
  // derivatives at the current point are recomputed with it (the consistent accelerations of
  // the implicit family, when options.initial_accelerations; the first stage of an explicit
  // method), so a step integrates with the input held (zero-order hold), not interpolated
  // between its old and new values (step(), run() and advance_to() alike). Exact
  // sensitivities are not restarted. Throws SolverSetupError for a bad index.
  void set_input(size_t i, double value);
  // Copies the parameter slots (model.parameter_slot) of the symbol vector `v` (rt::Instance's
  // start_vector() after tunable parameters were set): they take effect at the next step, with
  // the same restart as a changed input. Throws SolverSetupError for a wrong size.
  void set_parameters(std::span<const double> v);
  // ---- snapshots (an FMU's get/set FMU state): everything the continuation depends on, as
  // numbers (counters exactly: below 2^53). The implicit methods' Newton matrix is part of it
  // (its values; a restore factors them again), so saving changes nothing in the run that saves
  // and a continuation from a restored snapshot is bitwise the one from the saved point.
  // Statistics and exact sensitivities are not part of it. restore() returns false (and changes
  // nothing) for a snapshot of another size; a failed integrator cannot be saved (false).
  bool save(std::vector<double>& out);
  bool restore(std::span<const double> in);
  // One step of the output grid, t_n -> t_{n+1}. Finished if already at t_end.
  virtual SolveStatus step() = 0;
  // From the current point to t_end: the observer gets the current point (if not output yet),
  // every output_every-th grid point, and the last point (also when interrupted, and the last
  // accepted point when a step fails). A null
  // observer means no output at all.
  virtual SolveStatus run(const Observer& observer) = 0;

  std::string_view name() const { return solver_name(options_.solver); }
  const CompiledModel& model() const { return model_; }
  const SolverOptions& options() const { return options_; }
  double time() const { return t_; }
  int64_t grid_index() const { return n_done_; }   // grid steps done
  int64_t grid_steps() const { return n_steps_; }  // grid steps to t_end
  double t_end() const { return t_end_; }          // the end of the current grid
  bool initialized() const { return initialized_; }
  // The symbol vector at the current accepted point (q, qd, qdd, y, yd, z, t, parameters).
  std::span<const double> symbols() const { return ws_.v; }
  // model.outputs at the current point (empty if the model has no outputs).
  std::span<const double> evaluate_outputs();
  const Statistics& statistics() const { return stats_; }
  // Warnings about the choice of method for this model, found at creation, and warnings found
  // while running (a non-finite output with --nonfinite warn), which also go to the progress
  // sink when there is one (the front end shows them; the library prints nothing).
  const std::vector<std::string>& warnings() const { return warnings_; }
  // Reports progress (and run-time warnings) to `sink` from run() and step() on; null: none.
  void set_progress(ProgressSink* sink) { progress_sink_ = sink; }
  // Set when a call returned Failed; message() is the rendered text.
  const FailureRecord* failure() const { return failure_ ? &*failure_ : nullptr; }

 protected:
  Integrator(std::shared_ptr<const CompiledModel> model, const SolverOptions& options);

  // What went wrong in one step attempt, before it is known whether halving helps.
  struct AttemptFailure {
    FailureKind kind = FailureKind::NewtonDiverged;
    int32_t kernel_status = 0;
    int32_t equation = -1;
    double residual = std::numeric_limits<double>::quiet_NaN();
    int32_t unknown = -1;
    double update = std::numeric_limits<double>::quiet_NaN();
    // halving does not help: a kernel that cannot be evaluated, or a sliding mode (chattering)
    bool fatal() const {
      return kind == FailureKind::KernelFatal || kind == FailureKind::Chattering;
    }
  };

  // Grid time of step n (exact t_end for the last one).
  double grid_time(int64_t n) const {
    return n >= n_steps_ ? t_end_ : t0_ + static_cast<double>(n) * options_.h;
  }
  void fail(const AttemptFailure& a, FailurePhase phase, double h, int32_t halvings);
  // What every failure record of a step shares: kind, phase, solver, t, h and the smallest step.
  FailureRecord step_record(FailureKind kind, double h, double h_min) const;
  // The outputs at the current point to the observer: 0 go on, non-zero the observer stopped
  // the run, kEmitFailed a non-finite output with --nonfinite error (failure_ is set and the
  // observer is not called: the row is not written).
  static constexpr int kEmitFailed = std::numeric_limits<int>::min();
  int emit(const Observer& observer);

  // ---- guards (docs/solvers.md, "Guards")
  // The largest |component| of the state [q | der(q) | y] in v (index, -1 if there is none).
  int32_t largest_state(double& value) const;
  // After an accepted step: false (failure_ set: Diverged) when a state component is beyond
  // options.divergence_limit or not finite.
  bool check_divergence(double h);
  // A step failure that ends the run (h is the last step tried, `from_t` says that the floor
  // relative to t, not h_min, stopped the halving; `too_many`: the rejection limit): the kind
  // is Diverged if the state has grown by kDivergedGrowth over its start scale, else
  // TooManyRejections / StepCollapsed / the attempt's own kind. Sets failure_.
  void fail_step(double h, bool from_t, bool too_many);
  // The smallest step allowed at time t: h_min, and 64 eps max(|t|, |t_end|) (below 64 eps |t|,
  // t + h/2 can hardly be told from t; the |t_end| term keeps a user's tiny --h-min from
  // driving 1/h^2 towards overflow near t = 0).
  double step_floor() const {
    return std::max(h_min_, 64.0 * std::numeric_limits<double>::epsilon() *
                                std::max(std::fabs(t_), std::fabs(t_end_)));
  }
  void start_progress();
  // Called by initialize() once the start state is consistent: initialized_, state_scale_.
  void mark_initialized();
  // The grid t0 + n h up to t_end (n_steps_; n_done_ = 0). Throws SolverSetupError unless
  // t_end > t0.
  void set_grid(double t0, double t_end);
  // After a changed input or parameter, at an accepted point: recompute what the method keeps
  // of the derivatives there (false with failure_ set). Default: nothing.
  virtual bool restart();
  // The method's part of save()/restore(): appends its state; reads it back from `in` at
  // `pos` (advancing it), false on a size mismatch.
  virtual void save_method(std::vector<double>& out);
  virtual bool restore_method(std::span<const double> in, size_t& pos);
  bool restart_pending_ = false;  // an input or parameter changed since the last step

  // ---- events (docs/solvers.md, "Events")
  // After a successful attempt(h) of the step from the current point: 0 when no when-condition
  // became true in (t, t + h]; 1 when one did: h is shortened to the first such point (located
  // to options.event_tolerance by a bracketing search over steps of the method from t: regula
  // falsi (Illinois) on the zero-crossing functions, bisection where that is slow) and the
  // state of that shorter step is the attempt's; -1 on failure (failure_ set).
  template <class D>
  int locate_event(D& self, double& h);
  // After a successful attempt(h) (the last one of the interval to t_target when `last`): an
  // event located in it shortens it, the method accepts, time and statistics advance, the
  // divergence guard runs and the event fires. False with failure_ set.
  template <class D>
  bool accept_step(D& self, double h, bool last, double t_target);
  // At the accepted point that ends a located step: the branches whose condition became true
  // fire (row before, reinits, restart of the method, row after); false with failure_ set.
  bool fire_events();
  // The branches in fired_ fire at the current point, where ev_try_ holds the conditions before
  // any change: their reinits and assignments (all values taken before them), then the event
  // iteration (rt::apply_event, runtime/model/Events.h): the first branch of each when whose
  // condition rose with the new values (pre(x) still the values before the iteration) fires in
  // turn, until none does (at most kMaxEventIterations times). Then the impulse, the method's
  // restart and ev_old_ at the new point. False with failure_ set.
  bool apply_fired();
  // At the end of initialize(): the branches whose condition reads initial() and is true with
  // initial() = 1 fire (no rows: the start's row shows the state after them). False with
  // failure_ set.
  bool initial_event();
  // At the end of run() when t_end is reached: the branches whose condition rises with
  // terminal() = 1 fire, and the row after them is written. False with failure_ set.
  bool terminal_event();
  std::vector<double> ev_iter_;
  // After the reinits of an event in a model with position-level constraints: the impulse that
  // makes the velocities consistent (mass-weighted); false with failure_ set.
  bool project_velocities();
  // The events kernel at ws_.v into `out` (size n_crossings + branches); false (failure_ set)
  // when it reports a fatal status.
  bool evaluate_events(std::vector<double>& out, double h);
  // Whether an event happened between ev_old_ and `now`: a branch's condition is true in `now`
  // and was false in ev_old_, or a switch changed (switched()).
  bool event_between(const std::vector<double>& now) const;
  // Whether the sign of a switch's crossing function differs between ev_old_ and `now`.
  bool switched(const std::vector<double>& now) const;
  // Before a step: the events at the current point (once per point).
  bool prepare_events();
  // The method takes over the accepted state from ws_.v (q, der(q), y) after a reinit changed it
  // there; followed by restart(). Default: nothing (a method whose state is v).
  virtual void take_state_from_v();
  std::vector<double> ev_old_, ev_try_, ev_lo_, ev_hi_, reinit_values_;
  bool events_valid_ = false;                 // ev_old_ is at the current point
  const Observer* event_observer_ = nullptr;  // run(): the rows before and after an event
  int32_t event_burst_ = 0;                   // events in a row close together (chattering)
  double last_event_t_ = -std::numeric_limits<double>::infinity();
  std::vector<int32_t> fired_;   // the branches firing at an event
  bool stop_requested_ = false;  // the observer asked to stop at an event's row
  // locate_event() is running: the attempts are trial steps of the event's location or the step
  // that ends at the event (NewmarkFamily takes short ones of those by Taylor expansion)
  bool locating_ = false;
  std::vector<double> q_before_event_;  // the coordinates when apply_fired() began
  // restart() if one is pending (every step does this first); false with failure_ set.
  bool apply_restart();

  // One grid step with step halving; D provides `bool attempt(double h)` (false: attempt_failure_
  // says why; the state is unchanged) and `void accept(double h)`.
  template <class D>
  SolveStatus advance_grid_step(D& self);
  // The run() loop, non-virtual in the derived class's attempt/accept.
  template <class D>
  SolveStatus run_loop(D& self, const Observer& observer);

  std::shared_ptr<const CompiledModel> model_owner_;
  const CompiledModel& model_;  // *model_owner_
  SolverOptions options_;
  Workspace ws_;
  // ---- rotations integrated as a Lie group (model.rotation_charts; docs/mechanics.md)
  // After every accepted step the charts move to the current rotation in ws_.v
  // (RotationCharts::move: theta = 0, der(theta) = w, Q_ref the rotation) and the method takes
  // that over (charts_moved), so the next step is taken in the chart about its start point.
  RotationCharts charts_;
  void move_rotation_charts() {
    charts_.move(ws_.v.data());
    charts_moved();
  }
  // The method's part of move_rotation_charts: the theta and der(theta) components of what it
  // keeps of the accepted point follow ws_.v (charts_.theta_y()). Default: nothing.
  virtual void charts_moved();
  Statistics stats_;
  std::optional<FailureRecord> failure_;
  std::vector<std::string> warnings_;
  AttemptFailure attempt_failure_;
  double t0_ = 0.0, t_end_ = 0.0, t_ = 0.0;
  double h_try_ = 0.0;  // step size of the next attempt (h, or less after failures)
  double h_min_ = 0.0;
  int64_t n_steps_ = 0, n_done_ = 0;
  int64_t last_output_ = -1;  // grid index of the last output point
  int32_t success_streak_ = 0;
  bool initialized_ = false;
  double h_last_ = 0.0;              // the last accepted step
  double state_scale_ = 1.0;         // max(1, |state at t0|): the start scale of the state
  int64_t interval_rejections_ = 0;  // rejected attempts since the last grid point
  bool nonfinite_warned_ = false;
  bool skip_final_emit_ = false;  // the last accepted point diverged: it is not written
  ProgressSink* progress_sink_ = nullptr;
  ProgressMeter progress_;

  // ---- exact sensitivities: what every method shares (the directions, the outputs' kernel)
  // The method's part of enable_sensitivities(), with directions_ set and checked: throw if it
  // cannot, size its buffers. Default: not available.
  virtual void prepare_sensitivities();
  // Direction k's derivative of [q | qd | qdd | y | yd | z] at the current point into w.
  virtual void sensitivity_state(size_t k, double* w) const;
  std::vector<SensitivityDirection> directions_;
  int32_t n_directions_ = 0;
  std::vector<double> sens_output_values_, sens_w_;
};

// Snapshot helpers of the methods' save_method/restore_method: a vector with its size;
// check_vector advances pos over one of size n (false if it is not that), load_vector reads it.
void save_vector(std::vector<double>& out, const std::vector<double>& x);
bool check_vector(std::span<const double> in, size_t& pos, size_t n);
void load_vector(std::span<const double> in, size_t& pos, std::vector<double>& x);

// A run that fails with its state grown by this factor over its start scale has diverged (the
// message says so, with the failure of the last attempt as a note).
inline constexpr double kDivergedGrowth = 1e8;

// Creates the integrator chosen by options.solver. Throws SolverSetupError when the options are
// invalid, the model is inconsistent (check_model) or the solver cannot handle the model (an
// explicit method with algebraic variables). The integrator shares the model (it is immutable); the
// overload taking a reference copies it.
std::unique_ptr<Integrator> make_integrator(std::shared_ptr<const CompiledModel> model,
                                            const SolverOptions& options);
std::unique_ptr<Integrator> make_integrator(const CompiledModel& model,
                                            const SolverOptions& options);

// ---- implementation of the templates

template <class D>
SolveStatus Integrator::advance_grid_step(D& self) {
  if (failure_) return SolveStatus::Failed;
  if (n_done_ >= n_steps_) return SolveStatus::Finished;
  if (!apply_restart()) return SolveStatus::Failed;
  const double t_target = grid_time(n_done_ + 1);
  while (t_ < t_target) {
    if (!prepare_events()) return SolveStatus::Failed;
    const double remaining = t_target - t_;
    // Take the rest of the grid step when it is (almost) within reach, so no sliver step remains.
    // Within rounding of the current step size, keep it exactly: the Newton matrix depends on
    // h, and t_target - t carries the rounding of t.
    const bool last = h_try_ >= remaining * (1.0 - 1e-3);
    const double h = !last || std::fabs(remaining - h_try_) <= 1e-9 * h_try_ ? h_try_ : remaining;
    progress_.tick(t_, h);
    if (self.attempt(h)) {
      if (!accept_step(self, h, last, t_target)) return SolveStatus::Failed;
      if (h_try_ < options_.h && ++success_streak_ >= 2) {
        h_try_ = std::min(2.0 * h_try_, options_.h);
        success_streak_ = 0;
      }
      continue;
    }
    ++stats_.rejected_steps;
    success_streak_ = 0;
    // Below h_min, or where t + h/2 could not be told from t, halving is over.
    if (attempt_failure_.fatal()) {
      const auto halvings = static_cast<int32_t>(std::lround(std::log2(options_.h / h)));
      fail(attempt_failure_, FailurePhase::Step, h, std::max(halvings, 0));
      return SolveStatus::Failed;
    }
    const bool too_many = ++interval_rejections_ > options_.max_rejections;
    if (0.5 * h < step_floor() || too_many) {
      fail_step(h, 0.5 * h >= h_min_, too_many);
      return SolveStatus::Failed;
    }
    h_try_ = 0.5 * h;
  }
  interval_rejections_ = 0;
  ++n_done_;
  return n_done_ >= n_steps_ ? SolveStatus::Finished : SolveStatus::Ok;
}

template <class D>
SolveStatus Integrator::run_loop(D& self, const Observer& observer) {
  if (failure_) return SolveStatus::Failed;
  if (!initialized_ && self.initialize() == SolveStatus::Failed) return SolveStatus::Failed;
  const auto start = std::chrono::steady_clock::now();
  start_progress();
  SolveStatus status = SolveStatus::Finished;
  const int64_t every = options_.output_every;
  // emit() != 0: the observer stopped the run, or (kEmitFailed) an output is not finite
  const auto stopped = [](int e) {
    return e == kEmitFailed ? SolveStatus::Failed : SolveStatus::Stopped;
  };
  if (observer && last_output_ != n_done_) {
    if (const int e = emit(observer)) status = stopped(e);
  }
  event_observer_ = observer ? &observer : nullptr;
  while (status == SolveStatus::Finished && n_done_ < n_steps_) {
    if (interrupt_requested()) {
      if (observer && last_output_ != n_done_) emit(observer);
      status = failure_ ? SolveStatus::Failed : SolveStatus::Interrupted;
      break;
    }
    if (advance_grid_step(self) == SolveStatus::Failed) {
      if (observer && last_output_ != n_done_) emit(observer);  // the last good point
      status = SolveStatus::Failed;
      break;
    }
    if (stop_requested_) {  // the observer said stop at the row of an event
      stop_requested_ = false;
      status = SolveStatus::Stopped;
      break;
    }
    if (observer && ((every > 0 && n_done_ % every == 0) || n_done_ == n_steps_)) {
      if (const int e = emit(observer)) status = stopped(e);
    }
  }
  if (status == SolveStatus::Finished && !terminal_event()) status = SolveStatus::Failed;
  event_observer_ = nullptr;
  progress_.finish();
  stats_.wall_time +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return status;
}

template <class D>
bool Integrator::accept_step(D& self, double h, bool last, double t_target) {
  double h_step = h;
  const int event = model_.has_events() ? locate_event(self, h_step) : 0;
  if (event < 0) return false;
  self.accept(h_step);
  if (!charts_.empty()) move_rotation_charts();
  t_ = last && h_step == h ? t_target : t_ + h_step;
  h_last_ = h_step;
  stats_.record_accepted_step(h_step);
  if (!check_divergence(h_step)) return false;
  if (event > 0) return fire_events();
  if (model_.has_events()) ev_old_.swap(ev_try_);  // the events at t_
  return true;
}

template <class D>
int Integrator::locate_event(D& self, double& h) {
  if (!evaluate_events(ev_try_, h)) return -1;
  if (!event_between(ev_try_)) return 0;
  struct Locating {
    bool& flag;
    explicit Locating(bool& f) : flag(f) { flag = true; }
    ~Locating() { flag = false; }
    Locating(const Locating&) = delete;
    Locating& operator=(const Locating&) = delete;
  } locating(locating_);
  const auto nc = static_cast<size_t>(model_.n_crossings);
  const double tol = options_.event_tolerance * std::max(1.0, std::fabs(t_));
  double lo = 0.0, hi = h;  // the condition has not risen at t + lo, has at t + hi
  ev_lo_ = ev_old_;
  ev_hi_ = ev_try_;
  double at = h;  // where the last attempt ended
  int kept = 0;   // which end was kept twice in a row (Illinois): -1 lo, +1 hi
  bool bisect = false;
  for (int it = 0; hi - lo > tol && it < 200; ++it) {
    const double width = hi - lo;
    // regula falsi on each crossing function that changes sign over [lo, hi]: the first root
    double s = std::numeric_limits<double>::infinity();
    for (size_t k = 0; k < nc && !bisect; ++k) {
      const double a = ev_lo_[k], b = ev_hi_[k];
      if ((a < 0.0) == (b < 0.0) || a == b) continue;
      s = std::min(s, lo + width * (a / (a - b)));
    }
    // keep the point well inside the bracket so that both ends move
    const double margin = std::min(0.5 * tol, 0.25 * width);
    if (!std::isfinite(s)) s = lo + 0.5 * width;
    s = std::clamp(s, lo + margin, hi - margin);
    if (!self.attempt(s)) {
      // a step to inside the last one failed: bisect once more before giving up
      s = lo + 0.5 * width;
      if (!self.attempt(s)) {
        FailureRecord f = step_record(FailureKind::EventFailed, s, h_min_);
        f.message = render_failure(f, model_);
        failure_ = std::move(f);
        return -1;
      }
    }
    at = s;
    if (!evaluate_events(ev_try_, s)) return -1;
    if (event_between(ev_try_)) {
      hi = s;
      ev_hi_.swap(ev_try_);
      if (kept == -1)
        for (size_t k = 0; k < nc; ++k) ev_lo_[k] *= 0.5;
      kept = -1;
    } else {
      lo = s;
      ev_lo_.swap(ev_try_);
      if (kept == 1)
        for (size_t k = 0; k < nc; ++k) ev_hi_[k] *= 0.5;
      kept = 1;
    }
    bisect = hi - lo > 0.5 * width;  // slow: the next point halves the bracket
  }
  // An event within 100 tolerances of the end of the step is put there: no sliver of a step
  // remains before the grid point (a time event on the grid lands on it).
  if (h - hi <= 100.0 * tol) hi = h;
  if (at != hi && !self.attempt(hi)) {
    FailureRecord f = step_record(FailureKind::EventFailed, hi, h_min_);
    f.message = render_failure(f, model_);
    failure_ = std::move(f);
    return -1;
  }
  h = hi;
  return 1;
}

}  // namespace mbs::rt
