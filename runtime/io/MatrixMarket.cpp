#include "runtime/io/MatrixMarket.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include "runtime/io/AtomicFile.h"

namespace mbs::rt {

namespace {

void append_double(std::string& out, double x) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  out.append(buf, r.ptr);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// Splits `line` into whitespace-separated fields.
std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

template <class T>
bool parse(std::string_view s, T& value) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), value);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

}  // namespace

void write_matrix_market(const std::string& path, const Eigen::MatrixXd& a,
                         const std::string& comment) {
  std::string out = "%%MatrixMarket matrix coordinate real general\n";
  std::istringstream lines(comment);
  for (std::string line; std::getline(lines, line);) out += "% " + line + "\n";
  int64_t nnz = 0;
  for (Eigen::Index j = 0; j < a.cols(); ++j) {
    for (Eigen::Index i = 0; i < a.rows(); ++i) nnz += a(i, j) != 0.0 ? 1 : 0;
  }
  out += fmt::format("{} {} {}\n", a.rows(), a.cols(), nnz);
  for (Eigen::Index j = 0; j < a.cols(); ++j) {
    for (Eigen::Index i = 0; i < a.rows(); ++i) {
      if (a(i, j) == 0.0) continue;
      out += fmt::format("{} {} ", i + 1, j + 1);
      append_double(out, a(i, j));
      out += '\n';
    }
  }
  write_file_atomically(path, out);
}

Eigen::MatrixXd read_matrix_market(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open '" + path + "' for reading");
  auto bad = [&](int64_t line, const std::string& what) {
    return std::runtime_error(fmt::format("{}:{}: {}", path, line, what));
  };
  std::string line;
  int64_t line_no = 1;
  if (!std::getline(f, line)) throw bad(1, "empty file");
  const auto header = fields(line);
  if (header.size() != 5 || header[0] != "%%MatrixMarket" || lower(header[1]) != "matrix" ||
      lower(header[2]) != "coordinate" || lower(header[3]) != "real" ||
      lower(header[4]) != "general") {
    throw bad(1, "expected '%%MatrixMarket matrix coordinate real general'");
  }
  Eigen::MatrixXd a;
  int64_t nnz = -1, seen = 0;
  while (std::getline(f, line)) {
    ++line_no;
    const std::string_view t = trim(line);
    if (t.empty() || t.front() == '%') continue;
    const auto x = fields(t);
    if (nnz < 0) {
      int64_t rows = 0, cols = 0;
      if (x.size() != 3 || !parse(x[0], rows) || !parse(x[1], cols) || !parse(x[2], nnz) ||
          rows < 0 || cols < 0 || nnz < 0) {
        throw bad(line_no, "expected 'rows cols nnz'");
      }
      a = Eigen::MatrixXd::Zero(rows, cols);
      continue;
    }
    int64_t i = 0, j = 0;
    double value = 0.0;
    if (x.size() != 3 || !parse(x[0], i) || !parse(x[1], j) || !parse(x[2], value)) {
      throw bad(line_no, "expected 'row col value'");
    }
    if (i < 1 || i > a.rows() || j < 1 || j > a.cols()) {
      throw bad(line_no,
                fmt::format("entry ({}, {}) outside the {} x {} matrix", i, j, a.rows(), a.cols()));
    }
    if (++seen > nnz) throw bad(line_no, fmt::format("more than the {} entries declared", nnz));
    a(i - 1, j - 1) += value;
  }
  if (nnz < 0) throw bad(line_no, "no size line");
  if (seen != nnz) {
    throw bad(line_no, fmt::format("{} entries declared, {} found", nnz, seen));
  }
  return a;
}

}  // namespace mbs::rt
