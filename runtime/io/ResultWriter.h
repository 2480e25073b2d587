// The result files of a run (simulation, static load steps, the REPL's save), one interface for
// every format: the format follows the file's extension (`.mat`: the MATLAB v4 result format of
// OpenModelica and Dymola, MatWriter.h; anything else: CSV, CsvWriter.h), chosen in one place,
// open_result_writer. A writer takes the rows as the run produces them, so that an interrupted
// or killed run leaves the rows it reached (each writer's header says how).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace mbs::rt {

struct CompiledModel;

// What a result file says about its columns besides their values: the model's names, units,
// descriptions, which columns are aliases of others (a = b, a = -b: the .mat format stores them
// once), and the parameters with their values for the run (the .mat format's data_1). Only the
// names are needed: CSV writes nothing else.
struct ResultColumns {
  std::string first = "time";      // the independent variable (time; load for the static solver)
  std::vector<std::string> names;  // one per column after the first
  // Per column (or empty): the declaration's unit and description ("" when it has none).
  std::vector<std::string> units, descriptions;
  // Per column (or empty): the column (index into names) whose values this one's are times
  // alias_sign (+1 or -1), or -1 when it has its own values. The target has alias_of -1.
  std::vector<int32_t> alias_of;
  std::vector<int8_t> alias_sign;
  // The parameters of the run: names, values, units and descriptions (units and descriptions
  // may be empty).
  std::vector<std::string> parameter_names;
  std::vector<double> parameter_values;
  std::vector<std::string> parameter_units, parameter_descriptions;
};

// The columns of every output of `model` (CompiledModel::output_names, in order) with their
// units, descriptions and aliases, and its parameters with their values in `v` (a symbol
// vector of the model: the run's start vector). `first` names the independent variable. An
// alias a = +-b (OutputSource) is an alias of b's column; when b has no column (der(x) when
// v = der(x) is the column), of the first column that is an alias of b.
ResultColumns result_columns(const CompiledModel& model, std::span<const double> v,
                             const std::string& first = "time");

// The columns `indices` (into columns.names, increasing) of `columns`: an alias whose target is
// not among them gets values of its own. The parameters stay.
ResultColumns select_result_columns(const ResultColumns& columns, std::span<const int32_t> indices);

class ResultWriter {
 public:
  virtual ~ResultWriter() = default;
  // Appends the row `x, values...` (values: one per column of the file, or one per column of
  // the full table when the writer was opened with a selection).
  virtual void write_row(double x, std::span<const double> values) = 0;
  // Writes the buffered rows to the file now.
  virtual void flush() = 0;
  // Flushes and closes; throws std::runtime_error on a write error. Idempotent.
  virtual void close() = 0;
  virtual int64_t rows() const = 0;
  virtual const std::string& path() const = 0;
  // CSV: NaN values are written as empty fields ("not determined"); .mat files hold the NaN.
  virtual void set_nan_as_empty(bool /*on*/) {}
};

// True when `path` names a .mat result file (its extension, any case).
bool is_mat_path(const std::string& path);

// Opens the result file `path` in the format of its extension, for `columns` (all of them, or
// the columns `selection` (indices into columns.names, increasing) when it is not empty: the rows
// given to write_row still hold every column). Throws std::runtime_error naming the path when it
// cannot be opened.
std::unique_ptr<ResultWriter> open_result_writer(
    const std::string& path, const ResultColumns& columns, std::span<const int32_t> selection = {},
    std::chrono::milliseconds flush_interval = std::chrono::milliseconds(100));

}  // namespace mbs::rt
