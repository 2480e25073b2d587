#include "runtime/io/CsvWriter.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "runtime/io/AtomicFile.h"

namespace mbs::rt {

namespace {
// Longest shortest-round-trip double: "-2.2250738585072014e-308" is 24 characters.
constexpr size_t kMaxNumber = 32;
constexpr size_t kMinBuffer = 64 * 1024;

}  // namespace

CsvWriter::CsvWriter(const std::string& path, std::span<const std::string> names,
                     std::chrono::milliseconds flush_interval, const std::string& first_column)
    : path_(path), n_columns_(names.size()), flush_interval_(flush_interval) {
  // a device or FIFO is written in place (without waiting for a reader that is not there); a
  // directory, disk or socket is refused (AtomicFile.h)
  if (output_target(path).in_place) {
    fd_ = open_in_place(path);
  } else {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw io_error("cannot open result file", path, errno);
  }
  max_row_ = (n_columns_ + 1) * (kMaxNumber + 1) + 1;
  if (const long page = ::sysconf(_SC_PAGESIZE); page > 0) page_ = static_cast<size_t>(page);
  // room for one more row and the padding in front of it, whatever the buffer holds
  buffer_.resize(std::max(kMinBuffer, 4 * (max_row_ + page_)));
  // RFC 4180: a name with a comma or a quote (`R[1,2]`) is quoted, quotes doubled
  auto field = [](const std::string& n) {
    if (n.find_first_of(",\"\n") == std::string::npos) return n;
    std::string q = "\"";
    for (char c : n) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  std::string header = field(first_column);
  for (const std::string& n : names) header += "," + field(n);
  header += "\n";
  write_fully(fd_, header.data(), header.size(), "cannot write result file", path_);
  written_ = static_cast<int64_t>(header.size());
  last_write_ = std::chrono::steady_clock::now();
}

CsvWriter::~CsvWriter() {
  try {
    close();
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
  }
}

void CsvWriter::write_row(double t, std::span<const double> values) {
  if (fd_ < 0) throw std::runtime_error("result file '" + path_ + "' is closed");
  if (values.size() != n_columns_) {
    throw std::invalid_argument("CsvWriter::write_row: " + std::to_string(values.size()) +
                                " values for " + std::to_string(n_columns_) + " columns");
  }
  if (buffer_.size() - used_ < max_row_ + page_) flush();
  const size_t start = used_;
  char* p = buffer_.data() + used_;
  char* const end = buffer_.data() + buffer_.size();
  p = std::to_chars(p, end, t).ptr;
  for (double x : values) {
    *p++ = ',';
    if (nan_empty_ && std::isnan(x)) continue;
    p = std::to_chars(p, end, x).ptr;
  }
  *p++ = '\n';
  used_ = static_cast<size_t>(p - buffer_.data());
  // Keep page boundaries at row ends: a row that would straddle one starts on it instead, moved
  // there by spaces in front of the previous buffered row (or in front of itself after the
  // header, where the previous line cannot be padded).
  const size_t length = used_ - start;
  const size_t room = to_boundary(written_ + static_cast<int64_t>(start));
  if (length > room && room < page_ && length <= page_)
    insert_padding(last_row_start_ >= 0 ? static_cast<size_t>(last_row_start_) : start, room);
  last_row_start_ = static_cast<int64_t>(used_ - length);
  ++rows_;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_write_ >= flush_interval_) flush();
}

void CsvWriter::insert_padding(size_t at, size_t n) {
  std::memmove(buffer_.data() + at + n, buffer_.data() + at, used_ - at);
  std::memset(buffer_.data() + at, ' ', n);
  used_ += n;
}

void CsvWriter::flush() {
  write_buffer(true);
}

void CsvWriter::write_buffer(bool more_rows_follow) {
  if (fd_ < 0 || used_ == 0) return;
  // The next row is written after these, perhaps by another flush: if it might not fit before
  // the next page boundary, pad the last row here to end on the boundary.
  const size_t room = to_boundary(written_ + static_cast<int64_t>(used_));
  if (more_rows_follow && last_row_start_ >= 0 && room < page_ && room < max_row_)
    insert_padding(static_cast<size_t>(last_row_start_), room);
  write_fully(fd_, buffer_.data(), used_, "cannot write result file", path_);
  written_ += static_cast<int64_t>(used_);
  used_ = 0;
  last_row_start_ = -1;
  last_write_ = std::chrono::steady_clock::now();
}

void CsvWriter::close() {
  if (fd_ < 0) return;
  try {
    write_buffer(false);
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    throw;
  }
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) throw io_error("cannot close result file", path_, errno);
}

}  // namespace mbs::rt
