#include "runtime/drivers/Variation.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace mbs::rt {

namespace {

double number(const std::string& text, const std::string& what, const std::string& spec) {
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(x))
    throw std::invalid_argument(
        fmt::format("'{}': {} '{}' is not a finite number", spec, what, text));
  return x;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t p = s.find(sep, start);
    parts.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) return parts;
    start = p + 1;
  }
}

}  // namespace

VariationAxis parse_variation_axis(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw std::invalid_argument(fmt::format(
        "'{}': expected NAME=LIST (1,2,5), NAME=FROM:TO:COUNT or NAME=FROM:TO:COUNT:log", text));
  VariationAxis axis;
  axis.name = text.substr(0, eq);
  const std::string spec = text.substr(eq + 1);
  if (spec.find(':') != std::string::npos) {
    auto parts = split(spec, ':');
    const bool log = parts.size() == 4 && parts[3] == "log";
    if (parts.size() != 3 && !log)
      throw std::invalid_argument(fmt::format(
          "'{}': a range is FROM:TO:COUNT or FROM:TO:COUNT:log (COUNT values, both ends included)",
          text));
    const double a = number(parts[0], "the start", text);
    const double b = number(parts[1], "the end", text);
    const double c = number(parts[2], "the count", text);
    if (c < 1 || c != std::floor(c) || c > 1e7)
      throw std::invalid_argument(
          fmt::format("'{}': the count {} must be a whole number from 1 to 10^7", text, parts[2]));
    const auto n = static_cast<size_t>(c);
    if (log && !(a > 0 && b > 0))
      throw std::invalid_argument(
          fmt::format("'{}': a logarithmic range needs positive ends", text));
    for (size_t i = 0; i < n; ++i) {
      const double f = n == 1 ? 0.0 : static_cast<double>(i) / static_cast<double>(n - 1);
      double x = log ? std::exp(std::log(a) + f * (std::log(b) - std::log(a))) : a + f * (b - a);
      if (i + 1 == n && n > 1) x = b;  // the end exactly
      if (i == 0) x = a;
      axis.values.push_back(x);
    }
    return axis;
  }
  for (const auto& part : split(spec, ',')) axis.values.push_back(number(part, "the value", text));
  return axis;
}

std::vector<std::vector<double>> variation_points(const std::vector<VariationAxis>& axes,
                                                  bool paired) {
  std::vector<std::vector<double>> points;
  if (axes.empty()) return points;
  for (const auto& a : axes)
    if (a.values.empty()) throw std::invalid_argument("'" + a.name + "' has no values");
  if (paired) {
    const size_t n = axes[0].values.size();
    for (const auto& a : axes)
      if (a.values.size() != n)
        throw std::invalid_argument(
            fmt::format("paired lists must be of one length: '{}' has {} values, '{}' has {}",
                        axes[0].name, n, a.name, a.values.size()));
    for (size_t i = 0; i < n; ++i) {
      std::vector<double> p;
      for (const auto& a : axes) p.push_back(a.values[i]);
      points.push_back(std::move(p));
    }
    return points;
  }
  size_t total = 1;
  for (const auto& a : axes) {
    if (total > 100'000'000 / a.values.size())
      throw std::invalid_argument("the grid has more than 10^8 points");
    total *= a.values.size();
  }
  std::vector<size_t> idx(axes.size(), 0);
  for (size_t k = 0; k < total; ++k) {
    std::vector<double> p;
    for (size_t j = 0; j < axes.size(); ++j) p.push_back(axes[j].values[idx[j]]);
    points.push_back(std::move(p));
    for (size_t j = axes.size(); j-- > 0;) {  // the last axis fastest
      if (++idx[j] < axes[j].values.size()) break;
      idx[j] = 0;
    }
  }
  return points;
}

}  // namespace mbs::rt
