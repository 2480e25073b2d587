// 3-vectors and 3x3 matrices of symbolic expressions, for the multibody lowering. Every operation
// builds simplified DAG nodes, so structural zeros (a constant axis, a zero offset) vanish as the
// kinematics is built and common subexpressions are shared between frames.
#pragma once

#include <array>
#include <cmath>
#include <span>
#include <utility>
#include <vector>

#include "compiler/flatten/FlatModel.h"
#include "compiler/symbolic/Expr.h"
#include "runtime/model/RotationSeries.h"

namespace mbs::mech {

using V3 = std::array<sym::Expr, 3>;
using M3 = std::array<sym::Expr, 9>;  // row-major

class Algebra {
 public:
  explicit Algebra(sym::Context& cx) : cx_(cx) {}

  V3 zero3() const { return {cx_.zero(), cx_.zero(), cx_.zero()}; }
  M3 identity() const {
    M3 m;
    for (int i = 0; i < 9; ++i) m[i] = (i % 4 == 0) ? cx_.one() : cx_.zero();
    return m;
  }
  V3 add(const V3& a, const V3& b) const {
    return {cx_.add(a[0], b[0]), cx_.add(a[1], b[1]), cx_.add(a[2], b[2])};
  }
  V3 sub(const V3& a, const V3& b) const {
    return {cx_.sub(a[0], b[0]), cx_.sub(a[1], b[1]), cx_.sub(a[2], b[2])};
  }
  V3 neg(const V3& a) const { return {cx_.neg(a[0]), cx_.neg(a[1]), cx_.neg(a[2])}; }
  V3 scale(sym::Expr s, const V3& a) const {
    return {cx_.mul(s, a[0]), cx_.mul(s, a[1]), cx_.mul(s, a[2])};
  }
  sym::Expr dot(const V3& a, const V3& b) const {
    return cx_.add({cx_.mul(a[0], b[0]), cx_.mul(a[1], b[1]), cx_.mul(a[2], b[2])});
  }
  V3 cross(const V3& a, const V3& b) const {
    return {cx_.sub(cx_.mul(a[1], b[2]), cx_.mul(a[2], b[1])),
            cx_.sub(cx_.mul(a[2], b[0]), cx_.mul(a[0], b[2])),
            cx_.sub(cx_.mul(a[0], b[1]), cx_.mul(a[1], b[0]))};
  }
  V3 mul(const M3& m, const V3& v) const {
    V3 r;
    for (int i = 0; i < 3; ++i)
      r[i] = cx_.add(
          {cx_.mul(m[3 * i], v[0]), cx_.mul(m[3 * i + 1], v[1]), cx_.mul(m[3 * i + 2], v[2])});
    return r;
  }
  M3 mul(const M3& a, const M3& b) const {
    M3 r;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        r[3 * i + j] = cx_.add({cx_.mul(a[3 * i], b[j]), cx_.mul(a[3 * i + 1], b[3 + j]),
                                cx_.mul(a[3 * i + 2], b[6 + j])});
    return r;
  }
  M3 transpose(const M3& m) const { return {m[0], m[3], m[6], m[1], m[4], m[7], m[2], m[5], m[8]}; }
  // Rotation by angle t about the unit axis n: cos t I + (1 - cos t) n n^T + sin t [n]x.
  M3 rodrigues(const V3& n, sym::Expr t) const {
    sym::Expr c = cx_.unary(sym::Op::Cos, t), s = cx_.unary(sym::Op::Sin, t);
    sym::Expr k = cx_.sub(cx_.one(), c);
    M3 r;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) r[3 * i + j] = cx_.mul({k, n[i], n[j]});
    for (int i = 0; i < 3; ++i) r[4 * i] = cx_.add(r[4 * i], c);
    r[1] = cx_.sub(r[1], cx_.mul(s, n[2]));
    r[2] = cx_.add(r[2], cx_.mul(s, n[1]));
    r[3] = cx_.add(r[3], cx_.mul(s, n[2]));
    r[5] = cx_.sub(r[5], cx_.mul(s, n[0]));
    r[6] = cx_.sub(r[6], cx_.mul(s, n[1]));
    r[7] = cx_.add(r[7], cx_.mul(s, n[0]));
    return r;
  }
  // Rotation matrix of the unit quaternion q = {w, x, y, z}.
  M3 quaternion(const std::array<sym::Expr, 4>& q) const {
    auto two = [&](sym::Expr a, sym::Expr b) { return cx_.mul({cx_.num(2.0), a, b}); };
    sym::Expr w = q[0], x = q[1], y = q[2], z = q[3];
    return {cx_.sub(cx_.one(), cx_.add(two(y, y), two(z, z))),
            cx_.sub(two(x, y), two(w, z)),
            cx_.add(two(x, z), two(w, y)),
            cx_.add(two(x, y), two(w, z)),
            cx_.sub(cx_.one(), cx_.add(two(x, x), two(z, z))),
            cx_.sub(two(y, z), two(w, x)),
            cx_.sub(two(x, z), two(w, y)),
            cx_.add(two(y, z), two(w, x)),
            cx_.sub(cx_.one(), cx_.add(two(x, x), two(y, y)))};
  }
  // Angular velocity (resolved in the parent frame) of the rotation of q: 2 E(q) dq with
  // E = [-x w -z y; -y z w -x; -z -y x w].
  V3 quaternion_rate(const std::array<sym::Expr, 4>& q, const std::array<sym::Expr, 4>& dq) const {
    sym::Expr w = q[0], x = q[1], y = q[2], z = q[3];
    auto row = [&](sym::Expr a, sym::Expr b, sym::Expr c, sym::Expr d) {
      return cx_.mul(cx_.num(2.0), cx_.add({cx_.mul(a, dq[0]), cx_.mul(b, dq[1]), cx_.mul(c, dq[2]),
                                            cx_.mul(d, dq[3])}));
    };
    return {row(cx_.neg(x), w, cx_.neg(z), y), row(cx_.neg(y), z, w, cx_.neg(x)),
            row(cx_.neg(z), cx_.neg(y), x, w)};
  }
  // Hamilton product a b of quaternions {w, x, y, z}.
  std::array<sym::Expr, 4> quaternion_product(const std::array<sym::Expr, 4>& a,
                                              const std::array<sym::Expr, 4>& b) const {
    auto sum = [&](sym::Expr p, sym::Expr q, sym::Expr r, sym::Expr t) {
      return cx_.add({p, q, r, t});
    };
    auto m = [&](sym::Expr p, sym::Expr q) { return cx_.mul(p, q); };
    auto n = [&](sym::Expr p, sym::Expr q) { return cx_.neg(cx_.mul(p, q)); };
    return {sum(m(a[0], b[0]), n(a[1], b[1]), n(a[2], b[2]), n(a[3], b[3])),
            sum(m(a[0], b[1]), m(a[1], b[0]), m(a[2], b[3]), n(a[3], b[2])),
            sum(m(a[0], b[2]), n(a[1], b[3]), m(a[2], b[0]), m(a[3], b[1])),
            sum(m(a[0], b[3]), m(a[1], b[2]), n(a[2], b[1]), m(a[3], b[0]))};
  }
  // f(x) for x = |theta|, an even function given as f(sqrt(s)) with s = |theta|^2 and, for
  // s < rt::kRotationSeriesBelow, as its Taylor polynomial in s (runtime/model/RotationSeries.h,
  // shared with the runtime's chart move). The select is appended to `quiet` (no event at the
  // switch between the two: they agree there).
  sym::Expr even_function(sym::Expr s, sym::Expr closed, const std::array<double, 5>& series,
                          std::vector<sym::Expr>& quiet) const {
    std::vector<sym::Expr> terms;
    sym::Expr power = cx_.one();
    for (double c : series) {
      terms.push_back(cx_.mul(cx_.num(c), power));
      power = cx_.mul(power, s);
    }
    sym::Expr e = cx_.select(cx_.binary(sym::Op::Lt, s, cx_.num(rt::kRotationSeriesBelow)),
                             cx_.add(std::span<const sym::Expr>(terms)), closed);
    quiet.push_back(e);
    return e;
  }
  // The unit quaternion of the rotation by the rotation vector theta (the exponential map):
  // {cos(x/2), sin(x/2)/x theta}, x = |theta|.
  std::array<sym::Expr, 4> quaternion_exp(const V3& theta, std::vector<sym::Expr>& quiet) const {
    sym::Expr s = dot(theta, theta);
    sym::Expr x = cx_.unary(sym::Op::Sqrt, s);
    sym::Expr half = cx_.mul(cx_.num(0.5), x);
    sym::Expr k =
        even_function(s, cx_.div(cx_.unary(sym::Op::Sin, half), x), rt::kSinHalfOverXSeries, quiet);
    // cos(x/2) too: d/ds of the closed form is 0/0 at s = 0
    sym::Expr c = even_function(s, cx_.unary(sym::Op::Cos, half), rt::kCosHalfSeries, quiet);
    return {c, cx_.mul(k, theta[0]), cx_.mul(k, theta[1]), cx_.mul(k, theta[2])};
  }
  // der(theta) of the chart R = R_ref exp([theta]x) for the angular velocity w resolved in the
  // rotated frame (R^T der(R) = [w]x): the inverse of the right Jacobian,
  // w + theta x w / 2 + c(x) theta x (theta x w), c = (1 - (x/2) cot(x/2)) / x^2.
  V3 rotation_vector_rate(const V3& theta, const V3& w, std::vector<sym::Expr>& quiet) const {
    sym::Expr s = dot(theta, theta);
    sym::Expr x = cx_.unary(sym::Op::Sqrt, s);
    sym::Expr half = cx_.mul(cx_.num(0.5), x);
    sym::Expr cot = cx_.div(cx_.unary(sym::Op::Cos, half), cx_.unary(sym::Op::Sin, half));
    sym::Expr c = even_function(s, cx_.div(cx_.sub(cx_.one(), cx_.mul(half, cot)), s),
                                rt::kDexpInverseSeries, quiet);
    V3 tw = cross(theta, w);
    return add(add(w, scale(cx_.num(0.5), tw)), scale(c, cross(theta, tw)));
  }
  V3 total_derivative(DerivativeTable& ders, const V3& a) const {
    return {ders.total_derivative(a[0]), ders.total_derivative(a[1]), ders.total_derivative(a[2])};
  }

 private:
  sym::Context& cx_;
};

// Two unit vectors e1, e2 with (e1, e2, n) right-handed and orthonormal, for a unit n.
inline std::pair<std::array<double, 3>, std::array<double, 3>> perpendicular_basis(
    const std::array<double, 3>& n) {
  // e1: the coordinate axis least aligned with n, made perpendicular
  int k = 0;
  for (int i = 1; i < 3; ++i)
    if (std::fabs(n[i]) < std::fabs(n[k])) k = i;
  std::array<double, 3> a = {0, 0, 0};
  a[k] = 1;
  double d = a[0] * n[0] + a[1] * n[1] + a[2] * n[2];
  std::array<double, 3> e1 = {a[0] - d * n[0], a[1] - d * n[1], a[2] - d * n[2]};
  double l = std::sqrt(e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2]);
  for (double& x : e1) x /= l;
  std::array<double, 3> e2 = {n[1] * e1[2] - n[2] * e1[1], n[2] * e1[0] - n[0] * e1[2],
                              n[0] * e1[1] - n[1] * e1[0]};
  return {e1, e2};
}

}  // namespace mbs::mech
