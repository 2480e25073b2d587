#include "runtime/model/RotationCharts.h"

#include <cmath>
#include <stdexcept>
#include <unordered_map>

#include "runtime/model/RotationSeries.h"

namespace mbs::rt {

std::array<double, 4> quaternion_exp(const std::array<double, 3>& theta) {
  const double s = theta[0] * theta[0] + theta[1] * theta[1] + theta[2] * theta[2];
  const double x = std::sqrt(s);
  // as the compiled model's quaternion_exp evaluates it (runtime/model/RotationSeries.h)
  const bool series = s < kRotationSeriesBelow;
  const double k = series ? rotation_series(kSinHalfOverXSeries, s) : std::sin(0.5 * x) / x;
  const double c = series ? rotation_series(kCosHalfSeries, s) : std::cos(0.5 * x);
  return {c, k * theta[0], k * theta[1], k * theta[2]};
}

RotationCharts::RotationCharts(const CompiledModel& model) : m_(model) {
  if (model.rotation_charts.empty()) return;
  std::unordered_map<int32_t, int32_t> y_of_slot;
  for (int32_t j = 0; j < model.n_y; ++j) y_of_slot.emplace(model.y_slot[j], j);
  const auto n = static_cast<size_t>(model.n_rotation_charts());
  for (size_t c = 0; c < n; ++c)
    for (size_t k = 0; k < 6; ++k) {
      auto it = y_of_slot.find(model.rotation_charts[10 * c + k]);
      if (it == y_of_slot.end())
        throw std::invalid_argument("a rotation chart's theta or w is not a y slot");
      (k < 3 ? theta_y_ : w_y_).push_back(it->second);
    }
}

bool RotationCharts::due(const double* v, double above) const {
  for (size_t c = 0; c + 2 < theta_y_.size(); c += 3) {
    double s = 0.0;
    for (size_t k = 0; k < 3; ++k) {
      const double x = v[m_.y_slot[theta_y_[c + k]]];
      s += x * x;
    }
    if (!(s <= above)) return true;
  }
  return false;
}

void RotationCharts::move(double* v) const {
  const auto n = theta_y_.size() / 3;
  for (size_t c = 0; c < n; ++c) {
    const int32_t* ref = m_.rotation_charts.data() + 10 * c + 6;
    std::array<double, 3> theta{};
    for (size_t k = 0; k < 3; ++k) theta[k] = v[m_.y_slot[theta_y_[3 * c + k]]];
    const std::array<double, 4> e = quaternion_exp(theta);
    const double a[4] = {v[ref[0]], v[ref[1]], v[ref[2]], v[ref[3]]};
    double q[4] = {a[0] * e[0] - a[1] * e[1] - a[2] * e[2] - a[3] * e[3],
                   a[0] * e[1] + a[1] * e[0] + a[2] * e[3] - a[3] * e[2],
                   a[0] * e[2] - a[1] * e[3] + a[2] * e[0] + a[3] * e[1],
                   a[0] * e[3] + a[1] * e[2] - a[2] * e[1] + a[3] * e[0]};
    const double norm = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    for (size_t k = 0; k < 4; ++k) v[ref[k]] = q[k] / norm;
    for (size_t k = 0; k < 3; ++k) {
      const int32_t j = theta_y_[3 * c + k];
      v[m_.y_slot[j]] = 0.0;
      v[m_.yd_slot[j]] = v[m_.y_slot[w_y_[3 * c + k]]];
    }
  }
}

}  // namespace mbs::rt
