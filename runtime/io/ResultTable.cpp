#include "runtime/io/ResultTable.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "runtime/io/Csv.h"
#include "runtime/io/CsvWriter.h"
#include "runtime/io/InputFile.h"

namespace mbs::rt {

ResultTable::ResultTable(std::string first, std::vector<std::string> names)
    : first_(std::move(first)), names_(std::move(names)) {}

ResultTable ResultTable::read_csv(const std::string& path) {
  std::istringstream in(read_input_file_or_throw(path, kDataFileLimit, "result file"));
  std::string line;
  if (!std::getline(in, line))
    throw std::runtime_error(fmt::format("'{}' is empty: no header", path));
  std::vector<std::string> header = split_csv_line(line);
  if (header.empty() || header[0].empty())
    throw std::runtime_error(fmt::format("{}:1: the header names no columns", path));
  ResultTable table(header[0], std::vector<std::string>(header.begin() + 1, header.end()));
  std::vector<double> values(table.names_.size());
  int64_t line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::vector<std::string> cells = split_csv_line(line);
    if (cells.size() != header.size())
      throw std::runtime_error(fmt::format("{}:{}: {} fields where the header has {}", path,
                                           line_no, cells.size(), header.size()));
    for (size_t c = 0; c < cells.size(); ++c) {
      double x = std::numeric_limits<double>::quiet_NaN();
      if (!cells[c].empty()) {
        char* end = nullptr;
        x = std::strtod(cells[c].c_str(), &end);
        if (*end != '\0')
          throw std::runtime_error(fmt::format("{}:{}: '{}' in column '{}' is not a number", path,
                                               line_no, cells[c], header[c]));
      }
      if (c == 0) {
        if (std::isnan(x))
          throw std::runtime_error(
              fmt::format("{}:{}: the first column ('{}') is empty", path, line_no, header[0]));
        table.x_.push_back(x);
      } else {
        values[c - 1] = x;
      }
    }
    table.data_.insert(table.data_.end(), values.begin(), values.end());
  }
  return table;
}

void ResultTable::reserve(int64_t rows) {
  x_.reserve(static_cast<size_t>(rows));
  data_.reserve(static_cast<size_t>(rows) * names_.size());
}

void ResultTable::add_row(double x, std::span<const double> values) {
  if (values.size() != names_.size())
    throw std::logic_error("ResultTable::add_row: wrong number of values");
  x_.push_back(x);
  data_.insert(data_.end(), values.begin(), values.end());
}

std::vector<std::string> ResultTable::columns() const {
  std::vector<std::string> all{first_};
  all.insert(all.end(), names_.begin(), names_.end());
  return all;
}

int32_t ResultTable::column(std::string_view name) const {
  if (name == first_) return 0;
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return static_cast<int32_t>(i + 1);
  return -1;
}

double ResultTable::at(int64_t r, int32_t c) const {
  if (c == 0) return x_[static_cast<size_t>(r)];
  return data_[static_cast<size_t>(r) * names_.size() + static_cast<size_t>(c - 1)];
}

std::optional<double> ResultTable::interpolate(int32_t c, double x) const {
  if (x_.empty() || x < x_.front() || x > x_.back()) return std::nullopt;
  // the last row with x_[r] <= x (the later of repeated rows: the state after an event)
  auto it = std::upper_bound(x_.begin(), x_.end(), x);
  const int64_t hi = it - x_.begin();
  const int64_t r = hi - 1;
  if (x_[static_cast<size_t>(r)] == x || hi == rows()) return at(r, c);
  const double x0 = x_[static_cast<size_t>(r)], x1 = x_[static_cast<size_t>(hi)];
  const double w = (x - x0) / (x1 - x0);
  return (1.0 - w) * at(r, c) + w * at(hi, c);
}

void ResultTable::write_csv(const std::string& path) const {
  CsvWriter out(path, names_, std::chrono::milliseconds(100), first_);
  out.set_nan_as_empty(true);
  for (int64_t r = 0; r < rows(); ++r) out.write_row(x_[static_cast<size_t>(r)], row(r));
  out.close();
}

void ResultTable::write(const std::string& path, const ResultColumns* columns,
                        std::span<const int32_t> selection) const {
  ResultColumns bare;
  if (columns == nullptr || columns->names != names_) {
    bare.first = first_;
    bare.names = names_;
    columns = &bare;
  }
  const auto out = open_result_writer(path, *columns, selection);
  out->set_nan_as_empty(true);
  for (int64_t r = 0; r < rows(); ++r) out->write_row(x_[static_cast<size_t>(r)], row(r));
  out->close();
}

}  // namespace mbs::rt
