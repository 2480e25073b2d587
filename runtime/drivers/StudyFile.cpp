#include "runtime/drivers/StudyFile.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "runtime/io/AtomicFile.h"
#include "runtime/io/Csv.h"
#include "runtime/io/InputFile.h"

namespace mbs::rt {

namespace {

constexpr const char* kStatistics[] = {"steps", "rejected_steps", "newton_iterations",
                                       "factorizations", "message"};

std::string quoted(const std::string& s) {
  bool plain = true;
  for (char c : s)
    if (c == ',' || c == '"' || c == '\n' || c == '\r' || c == ' ') plain = false;
  if (plain) return s;
  std::string r = "\"";
  for (char c : s) {
    if (c == '"')
      r += "\"\"";
    else if (c == '\n' || c == '\r')
      r += " / ";  // one row per line: the lines of a message are joined
    else
      r += c;
  }
  return r + "\"";
}

std::string number(double x) {
  return std::isnan(x) ? std::string() : fmt::format("{:.17g}", x);
}

double parse_number(const std::string& s) {
  if (s.empty()) return std::numeric_limits<double>::quiet_NaN();
  char* end = nullptr;
  const double x = std::strtod(s.c_str(), &end);
  if (*end != '\0') throw std::runtime_error("'" + s + "' is not a number");
  return x;
}

std::string sidecar(const std::string& csv) {
  return csv + ".study";
}

}  // namespace

std::string study_header(const StudyDescription& d) {
  std::string h = "run,status";
  for (const auto& e : d.extra) h += "," + quoted(e);
  for (const auto& v : d.variables) h += "," + quoted(v);
  for (const auto& o : d.objectives) h += "," + quoted(o);
  for (const char* s : kStatistics) h += std::string(",") + s;
  return h;
}

std::vector<StudyRow> read_study_rows(const std::string& path, const StudyDescription& d,
                                      std::string* header_out) {
  // a snapshot: the file of a running study grows (mbsc monitor reads it as it is written)
  const std::string text = read_input_file_or_throw(path, kDataFileLimit, "study file", true);
  std::vector<StudyRow> rows;
  size_t pos = 0, line_no = 0;
  const size_t n_fields =
      2 + d.extra.size() + d.variables.size() + d.objectives.size() + std::size(kStatistics);
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) break;  // a last line cut short: not a row
    const std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line_no++ == 0) {
      if (header_out) *header_out = line;
      continue;
    }
    auto f = split_csv_line(line);
    if (f.size() != n_fields)
      throw std::runtime_error(
          fmt::format("'{}' line {}: {} fields, expected {}", path, line_no, f.size(), n_fields));
    StudyRow r;
    size_t k = 0;
    try {
      r.run = static_cast<int64_t>(parse_number(f[k++]));
      r.status = f[k++];
      for (size_t i = 0; i < d.extra.size(); ++i) r.extra.push_back(parse_number(f[k++]));
      for (size_t i = 0; i < d.variables.size(); ++i) r.values.push_back(parse_number(f[k++]));
      for (size_t i = 0; i < d.objectives.size(); ++i) r.objectives.push_back(parse_number(f[k++]));
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("'{}' line {}: {}", path, line_no, e.what()));
    }
    r.message = f.back();
    rows.push_back(std::move(r));
  }
  return rows;
}

StudyFile::StudyFile(std::string path, const StudyDescription& description, bool resume)
    : path_(std::move(path)), description_(description) {
  const std::string header = study_header(description);
  bool append = false;
  const OutputTarget target = output_target(path_);  // refuses a directory, disk or socket
  if (target.in_place && resume)
    throw std::runtime_error(fmt::format(
        "cannot resume '{}': it is a device or FIFO, not a study file that holds runs", path_));
  if (resume && ::access(path_.c_str(), F_OK) == 0) {
    std::string old_header;
    previous_ = read_study_rows(path_, description, &old_header);
    if (old_header != header)
      throw std::runtime_error(fmt::format(
          "cannot resume '{}': it is the file of another study (its columns are\n  {}\nthis "
          "study's are\n  {})",
          path_, old_header, header));
    append = true;
  }
  fd_ = target.in_place
            ? open_in_place(path_)
            : ::open(path_.c_str(), O_WRONLY | O_CREAT | (append ? 0 : O_TRUNC) | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw std::runtime_error(
        fmt::format("cannot write the study file '{}': {}", path_, std::strerror(errno)));
  if (append) {
    // drop a last line cut short (a write interrupted by kill -9): keep whole rows only
    std::ifstream in(path_, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t end = text.rfind('\n');
    const off_t keep = end == std::string::npos ? 0 : static_cast<off_t>(end + 1);
    if (::ftruncate(fd_, keep) != 0 || ::lseek(fd_, keep, SEEK_SET) < 0)
      throw std::runtime_error(fmt::format("cannot resume '{}': {}", path_, std::strerror(errno)));
  } else {
    const std::string line = header + "\n";
    if (::write(fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
      throw std::runtime_error(
          fmt::format("cannot write the study file '{}': {}", path_, std::strerror(errno)));
  }
  // the description for mbsc monitor (none beside a device: /dev/null.study is nobody's file)
  if (target.in_place) return;
  std::string s = "kind=" + description.kind + "\n";
  s += fmt::format("total={}\nminimize={}\n", description.total, description.minimize);
  for (const auto& v : description.variables) s += "variable=" + v + "\n";
  for (const auto& o : description.objectives) s += "objective=" + o + "\n";
  for (const auto& e : description.extra) s += "extra=" + e + "\n";
  s += fmt::format(
      "started={:.3f}\npid={}\n",
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(),
      static_cast<int64_t>(::getpid()));
  write_file_atomically(sidecar(path_), s);
}

StudyFile::~StudyFile() {
  if (fd_ >= 0) ::close(fd_);
}

void StudyFile::write(int64_t run, std::span<const double> extra, std::span<const double> values,
                      const RunOutcome& outcome) {
  std::string line = fmt::format("{},{}", run, run_status_name(outcome.status));
  for (double x : extra) line += "," + number(x);
  for (double x : values) line += "," + number(x);
  for (size_t i = 0; i < description_.objectives.size(); ++i)
    line += "," + (outcome.status == RunOutcome::Status::Ok && i < outcome.objectives.size()
                       ? number(outcome.objectives[i])
                       : std::string());
  const Statistics& st = outcome.statistics;
  line += fmt::format(",{},{},{},{},", st.steps, st.rejected_steps, st.newton_iterations,
                      st.factorizations);
  line += quoted(outcome.message) + "\n";
  // one write: a killed study leaves whole rows (and a cut last line, if any, is dropped on
  // resume)
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    const ssize_t w = ::write(fd_, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      throw std::runtime_error(
          fmt::format("cannot write the study file '{}': {}", path_, std::strerror(errno)));
    p += w;
    left -= static_cast<size_t>(w);
  }
  ++written_;
}

StudyDescription read_study_description(const std::string& csv_path, double* started, int64_t* pid,
                                        int64_t* resumed) {
  std::ifstream in(sidecar(csv_path));
  if (!in) throw std::runtime_error("cannot read '" + sidecar(csv_path) + "'");
  StudyDescription d;
  std::string line;
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "kind") d.kind = value;
    if (key == "total") d.total = std::stoll(value);
    if (key == "minimize") d.minimize = std::stoi(value);
    if (key == "variable") d.variables.push_back(value);
    if (key == "objective") d.objectives.push_back(value);
    if (key == "extra") d.extra.push_back(value);
    if (key == "started" && started) *started = std::stod(value);
    if (key == "pid" && pid) *pid = std::stoll(value);
    if (key == "resumed" && resumed) *resumed = std::stoll(value);
  }
  return d;
}

}  // namespace mbs::rt

namespace mbs::rt {

StudySummary summarize_study(const std::string& csv_path) {
  StudySummary s;
  double started = 0;
  int64_t pid = 0;
  s.description = read_study_description(csv_path, &started, &pid, &s.resumed);
  const auto rows = read_study_rows(csv_path, s.description);
  std::vector<int64_t> seen;
  for (const StudyRow& r : rows) {
    if (r.status != "ok" && r.status != "failed") continue;
    if (std::find(seen.begin(), seen.end(), r.run) != seen.end()) continue;
    seen.push_back(r.run);
    ++s.done;
    if (r.status == "failed") {
      ++s.failed;
      s.last_failure = r.message;
    }
    const int32_t k = s.description.minimize;
    if (r.status == "ok" && k >= 0 && static_cast<size_t>(k) < r.objectives.size() &&
        std::isfinite(r.objectives[static_cast<size_t>(k)]) &&
        (s.best_run < 0 || r.objectives[static_cast<size_t>(k)] < s.best_objective)) {
      s.best_run = r.run;
      s.best_objective = r.objectives[static_cast<size_t>(k)];
      s.best_values = r.values;
    }
  }
  // running: its process is alive and runs are left (a study in a REPL session has ended while
  // the process goes on)
  const int64_t total = s.description.total;
  s.running = pid > 0 && ::kill(static_cast<pid_t>(pid), 0) == 0 && !(total > 0 && s.done >= total);
  // a running study's time goes on; one that ended took until its file's last row was written
  double end =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  struct stat st {};
  if (!s.running && ::stat(csv_path.c_str(), &st) == 0)
    end = static_cast<double>(st.st_mtim.tv_sec) + 1e-9 * static_cast<double>(st.st_mtim.tv_nsec);
  s.elapsed_s = started > 0 ? std::max(end - started, 0.0) : 0;
  s.runs_per_s = s.elapsed_s > 0 ? static_cast<double>(s.done - s.resumed) / s.elapsed_s : 0;
  if (total > 0 && s.done > 0 && s.running && s.elapsed_s > 0) {
    const double rate = static_cast<double>(s.done - s.resumed) / s.elapsed_s;
    if (rate > 0) s.left_s = static_cast<double>(total - s.done) / rate;
  }
  return s;
}

std::string format_study_summary(const StudySummary& s, const std::string& csv_path) {
  const StudyDescription& d = s.description;
  std::string out = fmt::format("study {} ({}): ", csv_path, d.kind);
  if (d.total > 0)
    out += fmt::format("{} of {} runs done ({:.0f} %)", s.done, d.total,
                       100.0 * static_cast<double>(s.done) / static_cast<double>(d.total));
  else
    out += fmt::format("{} runs done", s.done);
  out += fmt::format(", {} failed\n", s.failed);
  out += fmt::format("  {:.3g} runs/s, {:.0f} s elapsed", s.runs_per_s, s.elapsed_s);
  if (s.left_s >= 0) out += fmt::format(", ~{:.0f} s left", s.left_s);
  out += s.running ? " (running)\n" : " (not running)\n";
  if (s.best_run >= 0) {
    out += fmt::format("  best so far: run {}, {} = {:.10g} at", s.best_run,
                       d.objectives[static_cast<size_t>(d.minimize)], s.best_objective);
    for (size_t i = 0; i < d.variables.size() && i < s.best_values.size(); ++i)
      out += fmt::format("{} {} = {:.10g}", i == 0 ? "" : ",", d.variables[i], s.best_values[i]);
    out += "\n";
  }
  if (!s.last_failure.empty()) out += "  last failure: " + s.last_failure + "\n";
  return out;
}

}  // namespace mbs::rt
