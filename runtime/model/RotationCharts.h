// The charts of rotations integrated as a Lie group (CompiledModel::rotation_charts): a rotation
// is R(Q_ref) exp([theta]x) with the rotation vector theta and the angular velocity w as ODE1
// states and the reference quaternion Q_ref a discrete value. After every accepted step the
// solvers move each chart to the current rotation, so that theta stays small and every step of
// a method is taken in the chart about its start point (Holzinger, Arnold, Gerstmayr 2023: the
// Runge-Kutta-Munthe-Kaas form of an explicit method; docs/mechanics.md, "Rotations as a Lie
// group").
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "runtime/model/CompiledModel.h"

namespace mbs::rt {

// exp of a rotation vector as a unit quaternion {w, x, y, z}.
std::array<double, 4> quaternion_exp(const std::array<double, 3>& theta);

class RotationCharts {
 public:
  explicit RotationCharts(const CompiledModel& model);
  bool empty() const { return theta_y_.empty(); }
  // Moves every chart in the symbol vector v: Q_ref := Q_ref exp(theta) (normalised),
  // theta := 0 and der(theta) := w, its value at theta = 0. The rotation, w and everything that
  // depends on them are unchanged.
  void move(double* v) const;
  // Whether some chart's |theta|^2 in v exceeds `above` (or is not finite): a model-exchange FMU
  // moves its charts then, since the importer's solver does not (rt::fmi::Unit).
  bool due(const double* v, double above) const;
  // Per chart three indices into the model's y: of theta[1..3] and of w[1..3].
  const std::vector<int32_t>& theta_y() const { return theta_y_; }
  const std::vector<int32_t>& w_y() const { return w_y_; }

 private:
  const CompiledModel& m_;
  std::vector<int32_t> theta_y_, w_y_;
};

}  // namespace mbs::rt
