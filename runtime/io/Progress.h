// Progress of a long computation, reported to whoever wants it: an observer interface the
// solvers call (ProgressSink), a cheap meter that they tick from inside their step loops
// (ProgressMeter), and a sink that writes to stderr as mbsc does (StderrProgress).
//
// A solver owns a ProgressMeter and ticks it once per step attempt (or Newton iteration, or
// sample). A tick without a sink is one branch; with a sink it is a counter, and the clock is
// read only every `stride` ticks, the stride adapted so that clock reads happen about every
// 20 ms, so reporting costs far below 1 % of a run. Every `interval` seconds the sink gets a
// ProgressInfo. The same interface serves the integrators, the static solver and, later,
// inverse dynamics, parameter studies and the REPL: solvers know nothing about terminals.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace mbs::rt {

struct ProgressInfo {
  std::string_view task;    // "gen-alpha", "static"
  std::string_view what;    // the name of the running variable: "t" or "load"
  double t = 0.0;           // where the run is
  double t0 = 0.0;          // where it started
  double t_end = 0.0;       // where it ends
  double h = 0.0;           // the current step (load increment); 0 if none
  int64_t steps = 0;        // steps (attempts, iterations) so far
  std::string_view unit = "steps";  // what `steps` counts: "steps", "samples", "runs"
  double elapsed = 0.0;     // wall time since the meter was started [s]
  double fraction() const;  // (t - t0) / (t_end - t0), in [0, 1]
};

class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  // Called about every interval() seconds while a run is going.
  virtual void progress(const ProgressInfo& info) = 0;
  // A warning found while running (e.g. a non-finite value written with --nonfinite warn).
  virtual void warning(std::string_view text) = 0;
  // The run is over (whatever the outcome): clear an updating line.
  virtual void finish() {}
  // Seconds between progress() calls.
  virtual double interval() const { return 2.0; }
};

class ProgressMeter {
 public:
  // Starts measuring; `sink` may be null (then tick() does nothing).
  void start(ProgressSink* sink, std::string_view task, std::string_view what, double t0,
             double t_end);
  // One unit of work done at t with step h; reads the clock only every stride_ ticks.
  void tick(double t, double h) {
    if (sink_ == nullptr) return;
    ++steps_;
    if (--countdown_ > 0) return;
    check(t, h);
  }
  void finish();
  // What a tick counts, for the rate ("steps" unless set; a string literal).
  void set_unit(std::string_view unit) { info_.unit = unit; }
  ProgressSink* sink() const { return sink_; }
  int64_t clock_reads() const { return clock_reads_; }

 private:
  using Clock = std::chrono::steady_clock;
  void check(double t, double h);

  ProgressSink* sink_ = nullptr;
  ProgressInfo info_;
  Clock::time_point start_{}, last_check_{}, next_report_{};
  int64_t steps_ = 0;
  int64_t stride_ = 1, countdown_ = 1;
  int64_t clock_reads_ = 0;
};

// Writes progress to a stdio stream (stderr for mbsc):
//  * Lines: a line every interval seconds,
//    "mbsc: t = 0.42 of 2 (21 %), 120000 steps/s, h = 1e-06, 3 s elapsed, ~11 s left";
//  * Updating: the same text on one line rewritten with '\r' (a terminal), shown only once the
//    run has lasted `delay` seconds and erased by finish();
//  * Off: no progress, but warnings are still written.
class StderrProgress final : public ProgressSink {
 public:
  enum class Mode : uint8_t { Off, Lines, Updating };
  StderrProgress(Mode mode, double interval, std::string prefix = "mbsc: ", std::FILE* out = stderr,
                 double delay = 1.0);
  void progress(const ProgressInfo& info) override;
  void warning(std::string_view text) override;
  void finish() override;
  double interval() const override;
  int64_t lines() const { return lines_; }

  // The text of one progress report (without prefix or line end).
  static std::string format(const ProgressInfo& info);

 private:
  void clear_line();
  Mode mode_;
  double interval_, delay_;
  std::string prefix_;
  std::FILE* out_;
  size_t shown_ = 0;  // characters of the updating line on screen
  int64_t lines_ = 0;
};

// The mode mbsc uses: Off when quiet, else Lines with -v, else Updating when `fd` is a terminal.
StderrProgress::Mode progress_mode(bool verbose, bool quiet, int fd = 2);

}  // namespace mbs::rt
