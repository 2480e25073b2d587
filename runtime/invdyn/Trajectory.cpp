#include "runtime/invdyn/Trajectory.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "runtime/io/InputFile.h"

namespace mbs::rt {

namespace {

// Second derivatives M of the cubic spline through (t, y) with not-a-knot ends (the third
// derivative is continuous at the second and the second-last sample, so M is linear over the
// first two and the last two intervals): exact for cubics, and without the natural spline's
// wrong M = 0 at the ends. Three samples: the parabola through them.
std::vector<double> spline_second_derivatives(const std::vector<double>& t,
                                              const std::vector<double>& y) {
  const size_t n = t.size();
  std::vector<double> m(n, 0.0);
  if (n < 3) return m;
  auto h = [&](size_t i) { return t[i + 1] - t[i]; };
  auto r = [&](size_t i) { return (y[i + 1] - y[i]) / h(i) - (y[i] - y[i - 1]) / h(i - 1); };
  if (n == 3) {
    double mm = 2 * r(1) / (h(0) + h(1));
    return {mm, mm, mm};
  }
  // unknowns M_1..M_{n-2}; row i: a_i M_{i-1} + b_i M_i + c_i M_{i+1} = r_i, with M_0 and M_{n-1}
  // expressed by the not-a-knot conditions
  const size_t k = n - 2;
  std::vector<double> lo(k, 0.0), di(k, 0.0), up(k, 0.0), rh(k, 0.0);
  for (size_t j = 0; j < k; ++j) {
    size_t i = j + 1;
    lo[j] = h(i - 1) / 6;
    di[j] = (h(i - 1) + h(i)) / 3;
    up[j] = h(i) / 6;
    rh[j] = r(i);
  }
  {  // M_0 = (1 + h0/h1) M_1 - (h0/h1) M_2
    double q = h(0) / h(1);
    di[0] += lo[0] * (1 + q);
    up[0] -= lo[0] * q;
    lo[0] = 0;
  }
  {  // M_{n-1} = (1 + h_{n-2}/h_{n-3}) M_{n-2} - (h_{n-2}/h_{n-3}) M_{n-3}
    double q = h(n - 2) / h(n - 3);
    di[k - 1] += up[k - 1] * (1 + q);
    lo[k - 1] -= up[k - 1] * q;
    up[k - 1] = 0;
  }
  // Thomas algorithm
  for (size_t j = 1; j < k; ++j) {
    double w = lo[j] / di[j - 1];
    di[j] -= w * up[j - 1];
    rh[j] -= w * rh[j - 1];
  }
  std::vector<double> x(k);
  x[k - 1] = rh[k - 1] / di[k - 1];
  for (size_t j = k - 1; j-- > 0;) x[j] = (rh[j] - up[j] * x[j + 1]) / di[j];
  for (size_t j = 0; j < k; ++j) m[j + 1] = x[j];
  double q0 = h(0) / h(1), q1 = h(n - 2) / h(n - 3);
  m[0] = (1 + q0) * m[1] - q0 * m[2];
  m[n - 1] = (1 + q1) * m[n - 2] - q1 * m[n - 3];
  return m;
}

}  // namespace

Trajectory::Trajectory(const std::string& path) : path_(path) {
  std::istringstream in(read_input_file_or_throw(path, kDataFileLimit, "trajectory file"));
  std::string line;
  if (!std::getline(in, line))
    throw std::runtime_error("the trajectory file '" + path + "' is empty");
  std::vector<std::string> header = split_csv_line(line);
  if (header.empty() || header[0] != "time")
    throw std::runtime_error(
        fmt::format("{}:1: the first column of a trajectory file must be 'time', found '{}'", path,
                    header.empty() ? "" : header[0]));
  std::vector<std::vector<double>> data(header.size());
  size_t lineno = 1;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line == "\r") continue;
    auto f = split_csv_line(line);
    if (f.size() != header.size())
      throw std::runtime_error(fmt::format("{}:{}: {} fields, the header has {}", path, lineno,
                                           f.size(), header.size()));
    for (size_t k = 0; k < f.size(); ++k) {
      char* end = nullptr;
      double x = std::strtod(f[k].c_str(), &end);
      if (f[k].empty() || *end != '\0' || !std::isfinite(x))
        throw std::runtime_error(fmt::format("{}:{}: '{}' in column '{}' is not a finite number",
                                             path, lineno, f[k], header[k]));
      data[k].push_back(x);
    }
    size_t r = data[0].size();
    if (r > 1 && !(data[0][r - 1] > data[0][r - 2]))
      throw std::runtime_error(fmt::format("{}:{}: times must increase ({} after {})", path, lineno,
                                           data[0][r - 1], data[0][r - 2]));
  }
  if (data[0].size() < 2)
    throw std::runtime_error("the trajectory file '" + path + "' needs at least two samples");
  t_ = data[0];
  std::map<std::string, size_t> col;
  for (size_t k = 1; k < header.size(); ++k) col[header[k]] = k;
  for (size_t k = 1; k < header.size(); ++k) {
    const std::string& h = header[k];
    if (h.rfind("der(", 0) == 0) {
      // der(NAME) or der(der(NAME)): belongs to NAME
      std::string inner = h;
      while (inner.rfind("der(", 0) == 0 && inner.back() == ')')
        inner = inner.substr(4, inner.size() - 5);
      if (!col.count(inner))
        throw std::runtime_error(
            fmt::format("{}:1: column '{}' is a derivative of '{}', which the file does not have",
                        path, h, inner));
      continue;
    }
    Column c;
    c.q = data[k];
    auto d1 = col.find("der(" + h + ")"), d2 = col.find("der(der(" + h + "))");
    if (d1 != col.end() && d2 != col.end()) {
      c.qd = data[d1->second];
      c.qdd = data[d2->second];
    } else if (d1 != col.end() || d2 != col.end()) {
      throw std::runtime_error(fmt::format(
          "{0}:1: give both der({1}) and der(der({1})), or neither (then a spline is used)", path,
          h));
    } else {
      c.m = spline_second_derivatives(t_, c.q);
    }
    names_.push_back(h);
    cols_.push_back(std::move(c));
  }
}

int Trajectory::index(const std::string& name) const {
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return static_cast<int>(i);
  return -1;
}

void Trajectory::eval(int i, double t, double& q, double& qd, double& qdd) const {
  const Column& c = cols_[static_cast<size_t>(i)];
  const size_t n = t_.size();
  if (seg_ + 1 >= n || t < t_[seg_] || t > t_[seg_ + 1]) {
    auto it = std::upper_bound(t_.begin(), t_.end(), t);
    size_t k = it == t_.begin() ? 0 : static_cast<size_t>(it - t_.begin()) - 1;
    seg_ = std::min(k, n - 2);
  }
  const size_t k = seg_;
  const double h = t_[k + 1] - t_[k], a = (t_[k + 1] - t) / h, b = (t - t_[k]) / h;
  if (!c.qd.empty()) {
    // cubic Hermite on values and velocities for q and qd; accelerations linear
    double h00 = (1 + 2 * b) * a * a, h10 = b * a * a, h01 = b * b * (3 - 2 * b), h11 = -b * b * a;
    q = h00 * c.q[k] + h10 * h * c.qd[k] + h01 * c.q[k + 1] + h11 * h * c.qd[k + 1];
    qd = a * c.qd[k] + b * c.qd[k + 1];
    qdd = a * c.qdd[k] + b * c.qdd[k + 1];
    if (b == 0) q = c.q[k], qd = c.qd[k];
    if (a == 0) q = c.q[k + 1], qd = c.qd[k + 1];
    return;
  }
  const double mk = c.m[k], m1 = c.m[k + 1];
  q = a * c.q[k] + b * c.q[k + 1] + ((a * a * a - a) * mk + (b * b * b - b) * m1) * h * h / 6;
  qd = (c.q[k + 1] - c.q[k]) / h + ((1 - 3 * a * a) * mk + (3 * b * b - 1) * m1) * h / 6;
  qdd = a * mk + b * m1;
}

}  // namespace mbs::rt
