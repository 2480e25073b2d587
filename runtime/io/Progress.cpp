#include "runtime/io/Progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace mbs::rt {

namespace {

// Clock reads are aimed at this spacing: often enough for any report interval, rare enough to
// cost nothing (a read is some 20 ns).
constexpr double kCheckSpacing = 0.02;
constexpr int64_t kMaxStride = 1 << 20;

std::string seconds(double s) {
  if (s < 10.0) return fmt::format("{:.1f} s", s);
  if (s < 3600.0) return fmt::format("{:.0f} s", s);
  return fmt::format("{:.1f} h", s / 3600.0);
}

}  // namespace

double ProgressInfo::fraction() const {
  const double span = t_end - t0;
  if (!(span > 0.0)) return 0.0;
  return std::clamp((t - t0) / span, 0.0, 1.0);
}

void ProgressMeter::start(ProgressSink* sink, std::string_view task, std::string_view what,
                          double t0, double t_end) {
  sink_ = sink;
  info_ = ProgressInfo{};
  info_.task = task;
  info_.what = what;
  info_.t0 = t0;
  info_.t_end = t_end;
  steps_ = 0;
  stride_ = countdown_ = 1;
  clock_reads_ = 0;
  if (!sink_) return;
  start_ = last_check_ = Clock::now();
  next_report_ = start_ + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(sink_->interval()));
}

void ProgressMeter::check(double t, double h) {
  const Clock::time_point now = Clock::now();
  ++clock_reads_;
  // Adapt the stride so that the next read comes about kCheckSpacing later.
  const double since = std::chrono::duration<double>(now - last_check_).count();
  last_check_ = now;
  const double factor = since > 0.0 ? kCheckSpacing / since : 2.0;
  const auto next = static_cast<double>(stride_) * std::clamp(factor, 0.5, 2.0);
  stride_ = std::clamp<int64_t>(static_cast<int64_t>(next), 1, kMaxStride);
  countdown_ = stride_;
  if (now < next_report_) return;
  info_.t = t;
  info_.h = h;
  info_.steps = steps_;
  info_.elapsed = std::chrono::duration<double>(now - start_).count();
  next_report_ = now + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(sink_->interval()));
  sink_->progress(info_);
}

void ProgressMeter::finish() {
  if (sink_) sink_->finish();
}

StderrProgress::StderrProgress(Mode mode, double interval, std::string prefix, std::FILE* out,
                               double delay)
    : mode_(mode), interval_(interval), delay_(delay), prefix_(std::move(prefix)), out_(out) {}

double StderrProgress::interval() const {
  // An updating line is refreshed often; printed lines come every interval_.
  return mode_ == Mode::Updating ? std::min(interval_, 0.25) : interval_;
}

std::string StderrProgress::format(const ProgressInfo& i) {
  std::string s =
      fmt::format("{} = {:.6g} of {:.6g} ({:.0f} %)", i.what, i.t, i.t_end, 100.0 * i.fraction());
  if (i.elapsed > 0.0)
    s += fmt::format(", {:.{}f} {}/s", static_cast<double>(i.steps) / i.elapsed,
                     static_cast<double>(i.steps) / i.elapsed < 10 ? 1 : 0, i.unit);
  if (i.h > 0.0) s += fmt::format(", h = {:.3g}", i.h);
  s += fmt::format(", {} elapsed", seconds(i.elapsed));
  const double f = i.fraction();
  if (f > 0.0 && f < 1.0) s += fmt::format(", ~{} left", seconds(i.elapsed * (1.0 - f) / f));
  if (!i.task.empty()) s += fmt::format(" [{}]", i.task);
  return s;
}

void StderrProgress::clear_line() {
  if (shown_ == 0) return;
  std::fprintf(out_, "\r%*s\r", static_cast<int>(shown_), "");
  std::fflush(out_);
  shown_ = 0;
}

void StderrProgress::progress(const ProgressInfo& info) {
  if (mode_ == Mode::Off) return;
  if (mode_ == Mode::Lines) {
    std::fprintf(out_, "%s%s\n", prefix_.c_str(), format(info).c_str());
    std::fflush(out_);
    ++lines_;
    return;
  }
  if (info.elapsed < delay_) return;
  const std::string text = prefix_ + format(info);
  std::fprintf(out_, "\r%s", text.c_str());
  if (text.size() < shown_) std::fprintf(out_, "%*s", static_cast<int>(shown_ - text.size()), "");
  std::fflush(out_);
  shown_ = std::max(shown_, text.size());
  ++lines_;
}

void StderrProgress::warning(std::string_view text) {
  clear_line();
  std::fprintf(out_, "%.*s\n", static_cast<int>(text.size()), text.data());
  std::fflush(out_);
}

void StderrProgress::finish() {
  clear_line();
}

StderrProgress::Mode progress_mode(bool verbose, bool quiet, int fd) {
  if (quiet) return StderrProgress::Mode::Off;
  if (verbose) return StderrProgress::Mode::Lines;
  if (isatty(fd) == 1) return StderrProgress::Mode::Updating;
  return StderrProgress::Mode::Off;
}

}  // namespace mbs::rt
