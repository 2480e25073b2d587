#include "runtime/io/CsvWriter.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace mbs::rt {

namespace {
// Longest shortest-round-trip double: "-2.2250738585072014e-308" is 24 characters.
constexpr size_t kMaxNumber = 32;
constexpr size_t kMinBuffer = 64 * 1024;

std::runtime_error io_error(const std::string& what, const std::string& path, int err) {
  return std::runtime_error(what + " '" + path + "': " + std::strerror(err));
}
}  // namespace

CsvWriter::CsvWriter(const std::string& path, std::span<const std::string> names,
                     std::chrono::milliseconds flush_interval, const std::string& first_column)
    : path_(path), n_columns_(names.size()), flush_interval_(flush_interval) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw io_error("cannot open result file", path, errno);
  max_row_ = (n_columns_ + 1) * (kMaxNumber + 1) + 1;
  buffer_.resize(std::max(kMinBuffer, 4 * max_row_));
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
  write_all(header.data(), header.size());
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
  if (buffer_.size() - used_ < max_row_) flush();
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
  ++rows_;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_write_ >= flush_interval_) flush();
}

void CsvWriter::flush() {
  if (fd_ < 0 || used_ == 0) return;
  write_all(buffer_.data(), used_);
  used_ = 0;
  last_write_ = std::chrono::steady_clock::now();
}

void CsvWriter::close() {
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
}

void CsvWriter::write_all(const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd_, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;  // e.g. the SIGINT that stops the run
      throw io_error("cannot write result file", path_, errno);
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
}

}  // namespace mbs::rt
