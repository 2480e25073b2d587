// The functions of a rotation vector's length that the Lie-group form of a rotation needs
// (docs/mechanics.md, "Rotations as a Lie group"), as the compiler's symbolic form
// (mech::Algebra::quaternion_exp, rotation_vector_rate) and the runtime's chart move
// (rt::quaternion_exp) both evaluate them: even functions of x = |theta|, taken for
// s = x^2 < kRotationSeriesBelow as the Taylor polynomial sum_k series[k] s^k, where the closed
// form loses digits (0/0 at s = 0) and five terms are exact to rounding (the next term is below
// 1e-20 there).
#pragma once

#include <array>

namespace mbs::rt {

inline constexpr double kRotationSeriesBelow = 1e-2;

// sin(x/2)/x = 1/2 - s/48 + s^2/3840 - s^3/645120 + s^4/185794560
inline constexpr std::array<double, 5> kSinHalfOverXSeries = {0.5, -1.0 / 48.0, 1.0 / 3840.0,
                                                              -1.0 / 645120.0, 1.0 / 185794560.0};
// cos(x/2) = 1 - s/8 + s^2/384 - s^3/46080 + s^4/10321920
inline constexpr std::array<double, 5> kCosHalfSeries = {1.0, -1.0 / 8.0, 1.0 / 384.0,
                                                         -1.0 / 46080.0, 1.0 / 10321920.0};
// c(x) = (1 - (x/2) cot(x/2)) / x^2 = 1/12 + s/720 + s^2/30240 + s^3/1209600 + s^4/47900160
inline constexpr std::array<double, 5> kDexpInverseSeries = {1.0 / 12.0, 1.0 / 720.0, 1.0 / 30240.0,
                                                             1.0 / 1209600.0, 1.0 / 47900160.0};

// sum_k series[k] s^k (Horner)
inline double rotation_series(const std::array<double, 5>& series, double s) {
  double p = 0.0;
  for (auto c = series.rbegin(); c != series.rend(); ++c) p = p * s + *c;
  return p;
}

}  // namespace mbs::rt
