#include "runtime/io/MatWriter.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace mbs::rt {

namespace {

constexpr int32_t kByteOrder = std::endian::native == std::endian::big ? 1000 : 0;
constexpr int32_t kDouble = 0, kInt32 = 20, kText = 51;  // P*10 + T (uint8 text: 5*10 + 1)
constexpr size_t kBufferBytes = 64 * 1024;

// A matrix as bytes: header, name with its NUL, then `data` (column by column).
void append_matrix(std::string& out, const char* name, int32_t type, int32_t rows, int32_t cols,
                   const void* data, size_t bytes) {
  const int32_t header[5] = {kByteOrder + type, rows, cols, 0,
                             static_cast<int32_t>(std::strlen(name) + 1)};
  out.append(reinterpret_cast<const char*>(header), sizeof header);
  out.append(name, std::strlen(name) + 1);
  if (bytes > 0) out.append(static_cast<const char*>(data), bytes);
}

// Strings as a text matrix of one string per column, NUL-padded to the longest plus one.
void append_text_columns(std::string& out, const char* name, const std::vector<std::string>& s) {
  size_t length = 1;
  for (const std::string& x : s) length = std::max(length, x.size() + 1);
  std::string data(length * s.size(), '\0');
  for (size_t j = 0; j < s.size(); ++j)
    std::memcpy(data.data() + j * length, s[j].data(), s[j].size());
  append_matrix(out, name, kText, static_cast<int32_t>(length), static_cast<int32_t>(s.size()),
                data.data(), data.size());
}

std::string with_unit(const std::string& description, const std::string& unit) {
  if (unit.empty()) return description;
  return description.empty() ? "[" + unit + "]" : description + " [" + unit + "]";
}

const std::string& at_or_empty(const std::vector<std::string>& v, size_t i) {
  static const std::string empty;
  return i < v.size() ? v[i] : empty;
}

}  // namespace

MatWriter::MatWriter(const std::string& path, const ResultColumns& columns,
                     std::chrono::milliseconds flush_interval)
    : path_(path),
      target_(output_target(path)),
      n_columns_(columns.names.size()),
      flush_interval_(flush_interval) {
  // data_2's rows: the independent variable, then every column that is not an alias of another
  row_of_.assign(n_columns_, -1);
  for (size_t c = 0; c < n_columns_; ++c) {
    const int32_t target = c < columns.alias_of.size() ? columns.alias_of[c] : -1;
    if (target < 0 || static_cast<size_t>(target) >= n_columns_ ||
        (static_cast<size_t>(target) < columns.alias_of.size() &&
         columns.alias_of[static_cast<size_t>(target)] >= 0))
      row_of_[c] = static_cast<int32_t>(n_rows2_++);
  }
  if (n_rows2_ > static_cast<size_t>(std::numeric_limits<int32_t>::max()) ||
      columns.parameter_names.size() + 1 > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    throw std::runtime_error("too many columns for a .mat result file '" + path + "'");

  // name, description, dataInfo: the independent variable, the columns, the parameters
  const size_t n_names = 1 + n_columns_ + columns.parameter_names.size();
  std::vector<std::string> names, descriptions;
  std::vector<int32_t> info;
  names.reserve(n_names);
  descriptions.reserve(n_names);
  info.reserve(4 * n_names);
  names.push_back(columns.first);
  descriptions.push_back(columns.first == "time" ? "Simulation time [s]" : "Load factor");
  info.insert(info.end(), {0, 1, 0, -1});
  for (size_t c = 0; c < n_columns_; ++c) {
    names.push_back(columns.names[c]);
    descriptions.push_back(
        with_unit(at_or_empty(columns.descriptions, c), at_or_empty(columns.units, c)));
    int32_t row = row_of_[c] + 1;
    if (row_of_[c] < 0) {
      const auto target = static_cast<size_t>(columns.alias_of[c]);
      row = (row_of_[target] + 1) * (columns.alias_sign[c] < 0 ? -1 : 1);
    }
    info.insert(info.end(), {2, row, 0, -1});
  }
  data1_rows_ = static_cast<int64_t>(1 + columns.parameter_names.size());
  std::vector<double> data1(2 * static_cast<size_t>(data1_rows_), 0.0);
  for (size_t p = 0; p < columns.parameter_names.size(); ++p) {
    names.push_back(columns.parameter_names[p]);
    descriptions.push_back(with_unit(at_or_empty(columns.parameter_descriptions, p),
                                     at_or_empty(columns.parameter_units, p)));
    info.insert(info.end(), {1, static_cast<int32_t>(p + 2), 0, 0});
    const double value = p < columns.parameter_values.size() ? columns.parameter_values[p] : 0.0;
    data1[p + 1] = value;
    data1[static_cast<size_t>(data1_rows_) + p + 1] = value;
  }

  std::string head;
  const char aclass[4][12] = {"Atrajectory", "1.1", "", "binTrans"};
  char aclass_data[44] = {};
  for (int c = 0; c < 11; ++c)
    for (int r = 0; r < 4; ++r) aclass_data[c * 4 + r] = aclass[r][c];
  append_matrix(head, "Aclass", kText, 4, 11, aclass_data, sizeof aclass_data);
  append_text_columns(head, "name", names);
  append_text_columns(head, "description", descriptions);
  append_matrix(head, "dataInfo", kInt32, 4, static_cast<int32_t>(n_names), info.data(),
                info.size() * sizeof(int32_t));
  // data_1 starts after its header and name
  data1_offset_ = static_cast<int64_t>(head.size() + 5 * sizeof(int32_t) + 7);
  append_matrix(head, "data_1", kDouble, static_cast<int32_t>(data1_rows_), 2, data1.data(),
                data1.size() * sizeof(double));
  data2_header_ = static_cast<int64_t>(head.size());
  append_matrix(head, "data_2", kDouble, static_cast<int32_t>(n_rows2_), 0, nullptr, 0);

  // a device or FIFO is written through a temporary file (the header is updated in place)
  const std::string file = target_.in_place ? (temporary_ = temporary_for(target_)) : path;
  fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw io_error("cannot open result file", path, errno);
  buffer_.resize(std::max<size_t>(1, kBufferBytes / (8 * n_rows2_)) * n_rows2_);
  try {
    write_fully(fd_, head.data(), head.size(), "cannot write result file", path_);
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    throw;
  }
  end_ = static_cast<int64_t>(head.size());
  last_write_ = std::chrono::steady_clock::now();
}

MatWriter::~MatWriter() {
  try {
    close();
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
  }
  if (!temporary_.empty()) ::unlink(temporary_.c_str());
}

void MatWriter::write_row(double x, std::span<const double> values) {
  if (fd_ < 0) throw std::runtime_error("result file '" + path_ + "' is closed");
  if (values.size() != n_columns_) {
    throw std::invalid_argument("MatWriter::write_row: " + std::to_string(values.size()) +
                                " values for " + std::to_string(n_columns_) + " columns");
  }
  if (rows_ == std::numeric_limits<int32_t>::max())
    throw std::runtime_error("result file '" + path_ + "': more than 2^31 - 1 rows");
  if (used_ + n_rows2_ > buffer_.size()) flush();
  double* out = buffer_.data() + used_;
  out[0] = x;
  for (size_t c = 0; c < n_columns_; ++c)
    if (row_of_[c] >= 0) out[row_of_[c]] = values[c];
  used_ += n_rows2_;
  if (rows_ == 0) first_x_ = x;
  last_x_ = x;
  ++rows_;
  if (std::chrono::steady_clock::now() - last_write_ >= flush_interval_) flush();
}

void MatWriter::flush() {
  if (fd_ < 0 || used_ == 0) return;
  write_fully(fd_, buffer_.data(), used_ * sizeof(double), "cannot write result file", path_);
  end_ += static_cast<int64_t>(used_ * sizeof(double));
  rows_in_file_ += static_cast<int64_t>(used_ / n_rows2_);
  used_ = 0;
  // the rows are in the file: now the header counts them, and data_1 gives the time range
  const auto cols = static_cast<int32_t>(rows_in_file_);
  write_fully(fd_, &cols, sizeof cols, "cannot write result file", path_,
              data2_header_ + 2 * static_cast<int64_t>(sizeof(int32_t)));
  write_fully(fd_, &first_x_, sizeof(double), "cannot write result file", path_, data1_offset_);
  write_fully(fd_, &last_x_, sizeof(double), "cannot write result file", path_,
              data1_offset_ + data1_rows_ * static_cast<int64_t>(sizeof(double)));
  last_write_ = std::chrono::steady_clock::now();
}

void MatWriter::close() {
  if (fd_ < 0) return;
  try {
    flush();
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    throw;
  }
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) throw io_error("cannot close result file", path_, errno);
  if (!temporary_.empty()) {
    const std::string tmp = std::move(temporary_);
    temporary_.clear();
    commit_temporary(tmp, target_, path_);
  }
}

}  // namespace mbs::rt
