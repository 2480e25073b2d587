// The rows of one run held in memory (the REPL's last result): the independent variable (time,
// load) and one column per output, appended as the run goes, read back by name, interpolated
// and written as CSV by the one CsvWriter. A run that stopped (failure, Ctrl-C) keeps the rows
// it reached.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/io/ResultWriter.h"

namespace mbs::rt {

class ResultTable {
 public:
  ResultTable() = default;
  // An empty table with these columns: `first` names the independent variable.
  ResultTable(std::string first, std::vector<std::string> names);

  // Reads a result file (header, then rows; an empty field is NaN: "not determined"). Throws
  // std::runtime_error naming the file and line.
  static ResultTable read_csv(const std::string& path);

  // Room for `rows` rows without reallocating.
  void reserve(int64_t rows);
  // Appends a row; values.size() must equal the number of output columns.
  void add_row(double x, std::span<const double> values);

  int64_t rows() const { return static_cast<int64_t>(x_.size()); }
  bool empty() const { return x_.empty(); }
  const std::string& first() const { return first_; }
  const std::vector<std::string>& names() const { return names_; }
  // All columns, the independent variable first.
  std::vector<std::string> columns() const;

  // Column index of `name` in columns() (0: the independent variable), or -1.
  int32_t column(std::string_view name) const;
  double at(int64_t row, int32_t column) const;
  std::span<const double> row(int64_t r) const {
    return {data_.data() + r * static_cast<int64_t>(names_.size()), names_.size()};
  }

  // The value of `column` at x by linear interpolation between the rows around it (the
  // independent variable must not decrease; at a repeated x the later row counts). nullopt when
  // x lies outside [first x, last x].
  std::optional<double> interpolate(int32_t column, double x) const;

  // The table as a result file (exact numbers, as mbsc writes them). Throws std::runtime_error.
  void write_csv(const std::string& path) const;
  // The table as a result file in the format of the path's extension (CSV, or .mat:
  // ResultWriter.h), with what `columns` says about the columns (its names are names(); the
  // names alone when it is null), only the columns `selection` when it is not empty. Throws
  // std::runtime_error.
  void write(const std::string& path, const ResultColumns* columns,
             std::span<const int32_t> selection = {}) const;

 private:
  std::string first_ = "time";
  std::vector<std::string> names_;
  std::vector<double> x_;
  std::vector<double> data_;  // row-major, names_.size() per row
};

}  // namespace mbs::rt
