// Result files written as the run goes: a header `time,<names...>`, then one row per output
// point. Numbers are printed in the shortest form that reads back to the same double
// (std::to_chars), so a result file is an exact record. Rows are collected in a buffer that only
// ever holds complete rows and is written with one write(2) when it fills up, when flush_interval
// of wall time has passed since the last write, and on close -- so a file read during the run, or
// left behind by an interrupted one, consists of complete rows. No allocation per row.
//
// Whole rows even after SIGKILL. Linux copies a buffered write into the file one page (or one
// page-aligned folio) at a time and, when the process is being killed, stops between two of them
// (mm/filemap.c: generic_perform_write checks fatal_signal_pending before each chunk). A write
// cut short therefore ends at a multiple of the page size. The writer keeps every page boundary of
// the file at the end of a row: a row that would straddle one is preceded by spaces in front of
// the previous row's first field (`   0.125,1,2`), which every CSV reader parses as the same
// number, so that it starts on the boundary. A killed writer thus leaves whole rows only. The
// guarantee covers rows no longer than a page (about 170 columns of the longest numbers; a
// typical row of 4096 bytes has 200 or more columns), and every row after the first page boundary
// behind the header.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/io/ResultWriter.h"

namespace mbs::rt {

class CsvWriter final : public ResultWriter {
 public:
  // Opens (truncates) `path` and writes the header. Throws std::runtime_error naming the path and
  // the reason if it cannot be opened.
  // `first_column` names the independent variable ("time"; "load" for the static solver).
  CsvWriter(const std::string& path, std::span<const std::string> names,
            std::chrono::milliseconds flush_interval = std::chrono::milliseconds(100),
            const std::string& first_column = "time");
  ~CsvWriter() override;  // close()s; errors at that point are lost, call close() to see them
  CsvWriter(const CsvWriter&) = delete;
  CsvWriter& operator=(const CsvWriter&) = delete;

  // Appends the row `t,values...`; values.size() must equal the number of names.
  void write_row(double t, std::span<const double> values) override;
  // Writes the buffered rows to the file now.
  void flush() override;
  // Flushes and closes; throws std::runtime_error on a write error. Idempotent.
  void close() override;

  // NaN values are written as empty fields ("not determined") instead of "nan".
  void set_nan_as_empty(bool on) override { nan_empty_ = on; }
  const std::string& path() const override { return path_; }
  int64_t rows() const override { return rows_; }

 private:
  void write_buffer(bool more_rows_follow);
  // Inserts n spaces at buffer position `at`, shifting what follows.
  void insert_padding(size_t at, size_t n);
  // Bytes from file offset `offset` to the next page boundary (a full page at a boundary).
  size_t to_boundary(int64_t offset) const {
    return page_ - static_cast<size_t>(offset % static_cast<int64_t>(page_));
  }

  std::string path_;
  int fd_ = -1;
  size_t n_columns_ = 0;
  std::vector<char> buffer_;
  size_t used_ = 0;
  size_t max_row_ = 0;
  size_t page_ = 4096;
  int64_t written_ = 0;          // bytes in the file (header included)
  int64_t last_row_start_ = -1;  // buffer position of the last row, -1 if none buffered
  int64_t rows_ = 0;
  bool nan_empty_ = false;
  std::chrono::steady_clock::duration flush_interval_;
  std::chrono::steady_clock::time_point last_write_;
};

}  // namespace mbs::rt
