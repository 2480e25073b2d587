// The results file of a study: one CSV row per finished run or evaluation, written whole and at
// once as the run finishes (a killed study keeps every row it wrote), and resumable: reopened
// with `resume`, the rows already there are read back and the study skips those runs.
//
// Columns: run, status, the study's extra columns (e.g. generation), every variable, every
// objective, the solver statistics (steps, rejected_steps, newton_iterations, factorizations)
// and message (why a run failed). Nothing in a row depends on timing or threads, so a study
// written in run order is the same file byte for byte with any number of threads. Numbers are
// written exactly (17 significant digits); a run that failed has empty objective fields.
//
// Beside it, FILE.study (replaced atomically) says what the study is for `mbsc monitor`:
// kind, total runs, the objective to minimise, the start time and the process id.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "runtime/drivers/Study.h"

namespace mbs::rt {

struct StudyDescription {
  std::string kind;                     // "variation", "genetic", "minimize", "sensitivity"
  std::vector<std::string> extra;       // columns between status and the variables
  std::vector<std::string> variables;   // names (a start value as written)
  std::vector<std::string> objectives;  // texts
  int64_t total = -1;                   // runs in all (-1: not known in advance)
  int32_t minimize = -1;                // index of the objective minimised (-1: none)
};

// One row read back from a file.
struct StudyRow {
  int64_t run = 0;
  std::string status;
  std::vector<double> extra, values, objectives;
  std::string message;
};

class StudyFile {
 public:
  // Creates (or truncates) `path` and writes the header; with `resume`, an existing file must
  // have the same columns (else std::runtime_error saying which differ): its whole rows are
  // read back (rows()), a last line cut short is dropped, and new rows are appended. Throws
  // std::runtime_error when the file cannot be written.
  StudyFile(std::string path, const StudyDescription& description, bool resume);
  ~StudyFile();
  StudyFile(const StudyFile&) = delete;
  StudyFile& operator=(const StudyFile&) = delete;

  const std::vector<StudyRow>& previous_rows() const { return previous_; }
  // Appends one row with a single write. Throws std::runtime_error when the write fails.
  void write(int64_t run, std::span<const double> extra, std::span<const double> values,
             const RunOutcome& outcome);
  int64_t rows_written() const { return written_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  StudyDescription description_;
  int fd_ = -1;
  int64_t written_ = 0;
  std::vector<StudyRow> previous_;
};

// The header line of a study's file (without newline), and the parse of a file's lines
// (throws std::runtime_error on a malformed file).
std::string study_header(const StudyDescription& d);
std::vector<StudyRow> read_study_rows(const std::string& path, const StudyDescription& d,
                                      std::string* header_out = nullptr);
// The description in FILE.study (kind, total, minimize, variables, objectives, started, pid);
// throws std::runtime_error when it cannot be read.
StudyDescription read_study_description(const std::string& csv_path, double* started = nullptr,
                                        int64_t* pid = nullptr, int64_t* resumed = nullptr);

}  // namespace mbs::rt

namespace mbs::rt {

// What `mbsc monitor` shows of a study's file as it grows.
struct StudySummary {
  StudyDescription description;
  int64_t done = 0, failed = 0;  // distinct runs finished (ok or failed), of them failed
  int64_t resumed = 0;           // rows in the file when the study (re)started
  double runs_per_s = 0;         // runs finished per second since then
  double elapsed_s = 0;          // since the study (or its last resume) started
  double left_s = -1;            // estimated time left (-1: unknown)
  bool running = false;          // the study's process is alive
  int64_t best_run = -1;         // the smallest value of the minimised objective
  double best_objective = 0;
  std::vector<double> best_values;
  std::string last_failure;  // the message of the last failed run
};
// Throws std::runtime_error when the file or its description cannot be read.
StudySummary summarize_study(const std::string& csv_path);
std::string format_study_summary(const StudySummary& s, const std::string& csv_path);

}  // namespace mbs::rt
