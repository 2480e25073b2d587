// A reader of MATLAB v4 files for the tests, written from the format's rules (not from the
// writer): each matrix is a header of five int32 (type code M*1000 + O*100 + P*10 + T; rows;
// columns; imaginary flag; length of the name with its NUL), the name, then rows x columns
// elements column by column. Only what result files use: little-endian (M = 0), real, full
// (T = 0) or text (T = 1), elements double (P = 0), int32 (P = 2) or uint8 (P = 5).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace mbs::mat4test {

struct Matrix {
  int32_t type = 0;  // the header's type code
  int32_t rows = 0, cols = 0;
  std::vector<double> numbers;  // double and int32 elements, column by column
  std::string text;             // uint8 elements, column by column
  double at(int32_t r, int32_t c) const { return numbers.at(static_cast<size_t>(c * rows + r)); }
  // column c of a text matrix without its NUL padding
  std::string column_text(int32_t c) const {
    std::string s = text.substr(static_cast<size_t>(c * rows), static_cast<size_t>(rows));
    return s.substr(0, s.find('\0'));
  }
  // row r of a text matrix without its padding (Aclass)
  std::string row_text(int32_t r) const {
    std::string s;
    for (int32_t c = 0; c < cols; ++c) s += text.at(static_cast<size_t>(c * rows + r));
    return s.substr(0, s.find('\0'));
  }
};

struct File {
  std::vector<std::string> order;  // the matrices' names in file order
  std::map<std::string, Matrix> matrices;
  size_t trailing = 0;  // bytes after the last complete matrix (a killed writer)
};

inline File read(const std::string& path, bool allow_trailing = false) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string bytes = ss.str();
  File f;
  size_t pos = 0;
  while (pos < bytes.size()) {
    if (f.order.size() == 6 && allow_trailing) {  // after data_2: what a killed writer left
      f.trailing = bytes.size() - pos;
      break;
    }
    int32_t h[5];
    if (bytes.size() - pos < sizeof h) throw std::runtime_error("truncated header");
    std::memcpy(h, bytes.data() + pos, sizeof h);
    pos += sizeof h;
    Matrix m;
    m.type = h[0];
    m.rows = h[1];
    m.cols = h[2];
    if (h[0] / 1000 != 0 || (h[0] / 100) % 10 != 0) throw std::runtime_error("not little-endian");
    if (h[3] != 0) throw std::runtime_error("imaginary part");
    const int32_t p = (h[0] / 10) % 10, t = h[0] % 10;
    if (t > 1 || (p != 0 && p != 2 && p != 5)) throw std::runtime_error("unexpected type code");
    const auto name_length = static_cast<size_t>(h[4]);
    if (bytes.size() - pos < name_length || name_length == 0 || bytes[pos + name_length - 1] != 0)
      throw std::runtime_error("bad name");
    const std::string name(bytes.data() + pos, name_length - 1);
    pos += name_length;
    const size_t n = static_cast<size_t>(m.rows) * static_cast<size_t>(m.cols);
    const size_t size = p == 0 ? 8 : p == 2 ? 4 : 1;
    if (bytes.size() - pos < n * size) throw std::runtime_error("truncated data of " + name);
    for (size_t i = 0; i < n; ++i) {
      const char* e = bytes.data() + pos + i * size;
      if (p == 0) {
        double d;
        std::memcpy(&d, e, 8);
        m.numbers.push_back(d);
      } else if (p == 2) {
        int32_t v;
        std::memcpy(&v, e, 4);
        m.numbers.push_back(v);
      } else {
        m.text += *e;
      }
    }
    pos += n * size;
    f.order.push_back(name);
    f.matrices[name] = std::move(m);
  }
  return f;
}

}  // namespace mbs::mat4test
