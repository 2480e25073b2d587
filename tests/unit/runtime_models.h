// Hand-written CompiledModels for the runtime tests and benchmarks: the kernels the compiler will
// generate, written as plain C functions over the symbol vector v, with the patterns, equation
// levels and init systems a compiled model carries. Every model has an analytic or otherwise
// independent reference in the test that uses it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/model/CompiledModel.h"

namespace mbs::rt::testmodels {

// Status as a compiled kernel returns it: k + 1 for the first non-finite output k, else 0.
inline int32_t finite_status(const double* out, int32_t n) {
  for (int32_t k = 0; k < n; ++k) {
    if (!std::isfinite(out[k])) return k + 1;
  }
  return 0;
}

// The common symbol-vector layout: [t | q | qd | qdd | y | yd | z | c_q c_qd c_y | parameters].
struct Layout {
  int32_t nq, ny, nz, np;
  constexpr int32_t t() const { return 0; }
  constexpr int32_t q(int32_t i) const { return 1 + i; }
  constexpr int32_t qd(int32_t i) const { return 1 + nq + i; }
  constexpr int32_t qdd(int32_t i) const { return 1 + 2 * nq + i; }
  constexpr int32_t y(int32_t j) const { return 1 + 3 * nq + j; }
  constexpr int32_t yd(int32_t j) const { return 1 + 3 * nq + ny + j; }
  constexpr int32_t z(int32_t k) const { return 1 + 3 * nq + 2 * ny + k; }
  constexpr int32_t cq() const { return 1 + 3 * nq + 2 * ny + nz; }
  constexpr int32_t cqd() const { return cq() + 1; }
  constexpr int32_t cy() const { return cq() + 2; }
  constexpr int32_t p(int32_t i) const { return cq() + 3 + i; }
  constexpr int32_t n_v() const { return cq() + 3 + np; }
};

inline SourceRef src(const std::string& file, uint32_t line, const std::string& text) {
  return SourceRef{file, line, 1, text};
}

// Sizes, slots and start vector of a model with layout L (kernels are filled in by the caller).
inline CompiledModel make_shell(const std::string& name, const Layout& L) {
  CompiledModel m;
  m.name = name;
  m.n_v = L.n_v();
  m.slot_time = L.t();
  m.n_q = L.nq, m.n_y = L.ny, m.n_z = L.nz;
  for (int32_t i = 0; i < L.nq; ++i) {
    m.q_slot.push_back(L.q(i));
    m.qd_slot.push_back(L.qd(i));
    m.qdd_slot.push_back(L.qdd(i));
  }
  for (int32_t j = 0; j < L.ny; ++j) {
    m.y_slot.push_back(L.y(j));
    m.yd_slot.push_back(L.yd(j));
  }
  for (int32_t k = 0; k < L.nz; ++k) m.z_slot.push_back(L.z(k));
  m.slot_c_q = L.cq(), m.slot_c_qd = L.cqd(), m.slot_c_y = L.cy();
  m.v0.assign(static_cast<size_t>(L.n_v()), 0.0);
  m.eq_level.assign(static_cast<size_t>(L.nq + L.ny + L.nz), EquationLevel::Dynamic);
  return m;
}

// ---- mass-spring-damper  m x'' + d x' + k x = 0 (one ODE2 coordinate, no init kernel: the
// solver's fallback of F with c = 0 gives qdd_0). Parameters m, d, k and, for failure tests,
// t_fail (residual not finite for t > t_fail) and the window (t_lo, t_hi, h_max) in which steps
// larger than h_max give a non-finite residual.
namespace msd {
constexpr Layout L{1, 0, 0, 7};
constexpr int32_t M = L.p(0), D = L.p(1), K = L.p(2), T_FAIL = L.p(3), T_LO = L.p(4), T_HI = L.p(5),
                  H_MAX = L.p(6);

inline int32_t residual(const double* v, double* out) {
  out[0] = v[M] * v[L.qdd(0)] + v[D] * v[L.qd(0)] + v[K] * v[L.q(0)];
  const double t = v[L.t()];
  const double h = 2.0 * v[L.cy()];  // c_y = h/2 during a gen-alpha step
  if (t > v[T_FAIL] || (t > v[T_LO] && t < v[T_HI] && h > v[H_MAX])) out[0] = NAN;
  return finite_status(out, 1);
}
inline int32_t newton(const double* v, double* out) {
  out[0] = v[M] + v[L.cqd()] * v[D] + v[L.cq()] * v[K];
  return finite_status(out, 1);
}
inline int32_t outputs(const double* v, double* out) {
  out[0] = v[L.q(0)];
  out[1] = v[L.qd(0)];
  out[2] = v[L.qdd(0)];
  return 0;
}

inline CompiledModel make(double m_ = 1.0, double d = 0.0, double k = 1.0, double x0 = 1.0,
                          double v0 = 0.0) {
  CompiledModel m = make_shell("msd", L);
  m.v0[L.q(0)] = x0;
  m.v0[L.qd(0)] = v0;
  m.v0[M] = m_, m.v0[D] = d, m.v0[K] = k;
  m.v0[T_FAIL] = 1e300, m.v0[T_LO] = 1e300, m.v0[T_HI] = -1e300, m.v0[H_MAX] = 1e300;
  m.q = {Unknown{"mass.x", src("msd.mbs", 3, "Real x")}};
  m.eq_source = {src("msd.mbs", 7, "m*der(der(x)) + d*der(x) + k*x = 0")};
  m.residual = Kernel{residual, 1};
  m.newton_matrix = SparseKernel{Kernel{newton, 1}, 1, 1, {0}, {0}};
  m.outputs = Kernel{outputs, 3};
  m.output_names = {"mass.x", "der(mass.x)", "der(der(mass.x))"};
  return m;
}

// Exact solution of the underdamped oscillator.
inline double exact(double m_, double d, double k, double x0, double v0, double t) {
  const double w0 = std::sqrt(k / m_), zeta = d / (2.0 * std::sqrt(k * m_));
  const double wd = w0 * std::sqrt(1.0 - zeta * zeta);
  return std::exp(-zeta * w0 * t) *
         (x0 * std::cos(wd * t) + (v0 + zeta * w0 * x0) / wd * std::sin(wd * t));
}
}  // namespace msd

// ---- planar pendulum in Cartesian coordinates, index 3:
//   m xdd + 2 x lambda = 0,  m ydd + m g + 2 y lambda = 0,  x^2 + y^2 - L^2 = 0
// init system: the constraint replaced by its second time derivative.
namespace pendulum {
constexpr Layout L{2, 0, 1, 3};
constexpr int32_t X = L.q(0), Y = L.q(1), XD = L.qd(0), YD = L.qd(1), XDD = L.qdd(0),
                  YDD = L.qdd(1), LAM = L.z(0), CQ = L.cq(), M = L.p(0), G = L.p(1), LEN = L.p(2);

inline int32_t residual(const double* v, double* out) {
  out[0] = v[M] * v[XDD] + 2.0 * v[X] * v[LAM];
  out[1] = v[M] * v[YDD] + v[M] * v[G] + 2.0 * v[Y] * v[LAM];
  out[2] = v[X] * v[X] + v[Y] * v[Y] - v[LEN] * v[LEN];
  return finite_status(out, 3);
}
// Columns [xdd | ydd | lambda], compressed-column order.
inline int32_t newton(const double* v, double* out) {
  const double c = v[CQ];
  out[0] = v[M] + c * 2.0 * v[LAM];  // (0, 0)
  out[1] = c * 2.0 * v[X];           // (2, 0)
  out[2] = v[M] + c * 2.0 * v[LAM];  // (1, 1)
  out[3] = c * 2.0 * v[Y];           // (2, 1)
  out[4] = 2.0 * v[X];               // (0, 2)
  out[5] = 2.0 * v[Y];               // (1, 2)
  return finite_status(out, 6);
}
inline int32_t init_residual(const double* v, double* out) {
  out[0] = v[M] * v[XDD] + 2.0 * v[X] * v[LAM];
  out[1] = v[M] * v[YDD] + v[M] * v[G] + 2.0 * v[Y] * v[LAM];
  out[2] = 2.0 * (v[X] * v[XDD] + v[Y] * v[YDD] + v[XD] * v[XD] + v[YD] * v[YD]);
  return finite_status(out, 3);
}
inline int32_t init_matrix(const double* v, double* out) {
  out[0] = v[M];
  out[1] = 2.0 * v[X];
  out[2] = v[M];
  out[3] = 2.0 * v[Y];
  out[4] = 2.0 * v[X];
  out[5] = 2.0 * v[Y];
  return finite_status(out, 6);
}
inline int32_t outputs(const double* v, double* out) {
  out[0] = v[X];
  out[1] = v[Y];
  out[2] = v[LAM];
  out[3] = v[X] * v[X] + v[Y] * v[Y] - v[LEN] * v[LEN];
  out[4] = 0.5 * v[M] * (v[XD] * v[XD] + v[YD] * v[YD]) + v[M] * v[G] * v[Y];
  return 0;
}

// Released from rest at angle phi0 from the downward vertical.
inline CompiledModel make(double phi0 = 0.5, double m_ = 1.0, double g = 9.81, double len = 1.0) {
  CompiledModel m = make_shell("pendulum", L);
  m.v0[X] = len * std::sin(phi0);
  m.v0[Y] = -len * std::cos(phi0);
  m.v0[M] = m_, m.v0[G] = g, m.v0[LEN] = len;
  m.q = {Unknown{"x", src("pendulum.mbs", 2, "Real x")},
         Unknown{"y", src("pendulum.mbs", 3, "Real y")}};
  m.z = {Unknown{"lambda", src("pendulum.mbs", 4, "Real lambda")}};
  m.eq_level = {EquationLevel::Dynamic, EquationLevel::Dynamic, EquationLevel::Position};
  m.eq_source = {src("pendulum.mbs", 6, "m*der(der(x)) + 2*x*lambda = 0"),
                 src("pendulum.mbs", 7, "m*der(der(y)) + m*g + 2*y*lambda = 0"),
                 src("pendulum.mbs", 8, "x^2 + y^2 = L^2")};
  m.residual = Kernel{residual, 3};
  const std::vector<int32_t> row = {0, 2, 1, 2, 0, 1}, col = {0, 0, 1, 1, 2, 2};
  m.newton_matrix = SparseKernel{Kernel{newton, 6}, 3, 3, row, col};
  m.init_residual = Kernel{init_residual, 3};
  m.init_matrix = SparseKernel{Kernel{init_matrix, 6}, 3, 3, row, col};
  m.outputs = Kernel{outputs, 5};
  m.output_names = {"x", "y", "lambda", "constraint", "energy"};
  return m;
}

// Exact period of the pendulum released from rest at phi0: 4 sqrt(L/g) K(sin(phi0/2)), with the
// complete elliptic integral K(k) = pi / (2 AGM(1, sqrt(1 - k^2))).
inline double exact_period(double phi0, double g = 9.81, double len = 1.0) {
  const double k = std::sin(0.5 * phi0);
  double a = 1.0, b = std::sqrt(1.0 - k * k);
  for (int i = 0; i < 30; ++i) {
    const double an = 0.5 * (a + b);
    b = std::sqrt(a * b);
    a = an;
  }
  return 4.0 * std::sqrt(len / g) * (M_PI / (2.0 * a));
}
}  // namespace pendulum

// ---- ODE1: exponential decay y' = -k y.
namespace decay {
constexpr Layout L{0, 1, 0, 1};
constexpr int32_t K = L.p(0);
inline int32_t residual(const double* v, double* out) {
  out[0] = v[L.yd(0)] + v[K] * v[L.y(0)];
  return finite_status(out, 1);
}
inline int32_t newton(const double* v, double* out) {
  out[0] = 1.0 + v[L.cy()] * v[K];
  return finite_status(out, 1);
}
inline int32_t outputs(const double* v, double* out) {
  out[0] = v[L.y(0)];
  return 0;
}
inline CompiledModel make(double k = 2.0, double y0 = 1.0) {
  CompiledModel m = make_shell("decay", L);
  m.v0[L.y(0)] = y0;
  m.v0[K] = k;
  m.y = {Unknown{"y", src("decay.mbs", 2, "Real y")}};
  m.eq_source = {src("decay.mbs", 4, "der(y) = -k*y")};
  m.residual = Kernel{residual, 1};
  m.newton_matrix = SparseKernel{Kernel{newton, 1}, 1, 1, {0}, {0}};
  m.init_residual = Kernel{residual, 1};
  m.init_matrix = SparseKernel{Kernel{newton, 1}, 1, 1, {0}, {0}};  // c_y = 0 at init
  m.outputs = Kernel{outputs, 1};
  m.output_names = {"y"};
  return m;
}
}  // namespace decay

// ---- ODE1: van der Pol  y1' = y2,  y2' = mu (1 - y1^2) y2 - y1.
namespace vdp {
constexpr Layout L{0, 2, 0, 1};
constexpr int32_t MU = L.p(0);
inline int32_t residual(const double* v, double* out) {
  const double y1 = v[L.y(0)], y2 = v[L.y(1)], mu = v[MU];
  out[0] = v[L.yd(0)] - y2;
  out[1] = v[L.yd(1)] - mu * (1.0 - y1 * y1) * y2 + y1;
  return finite_status(out, 2);
}
inline int32_t newton(const double* v, double* out) {
  const double y1 = v[L.y(0)], y2 = v[L.y(1)], mu = v[MU], c = v[L.cy()];
  out[0] = 1.0;                             // (0, 0)
  out[1] = c * (2.0 * mu * y1 * y2 + 1.0);  // (1, 0)
  out[2] = -c;                              // (0, 1)
  out[3] = 1.0 - c * mu * (1.0 - y1 * y1);  // (1, 1)
  return finite_status(out, 4);
}
inline int32_t outputs(const double* v, double* out) {
  out[0] = v[L.y(0)];
  out[1] = v[L.y(1)];
  return 0;
}
inline CompiledModel make(double mu = 1.0, double y1 = 2.0, double y2 = 0.0) {
  CompiledModel m = make_shell("vdp", L);
  m.v0[L.y(0)] = y1, m.v0[L.y(1)] = y2, m.v0[MU] = mu;
  m.y = {Unknown{"y1", src("vdp.mbs", 2, "Real y1")}, Unknown{"y2", src("vdp.mbs", 3, "Real y2")}};
  m.eq_source = {src("vdp.mbs", 5, "der(y1) = y2"),
                 src("vdp.mbs", 6, "der(y2) = mu*(1 - y1^2)*y2 - y1")};
  m.residual = Kernel{residual, 2};
  m.newton_matrix = SparseKernel{Kernel{newton, 4}, 2, 2, {0, 1, 0, 1}, {0, 0, 1, 1}};
  m.outputs = Kernel{outputs, 2};
  m.output_names = {"y1", "y2"};
  return m;
}
}  // namespace vdp

// ---- a chain of N equal masses between two walls, joined by equal springs:
//   m q_i'' + k (2 q_i - q_{i-1} - q_{i+1}) = 0,  q_{-1} = q_N = 0.
// Started in its first normal mode q_i = sin(pi (i+1) / (N+1)) it stays in it:
//   q_i(t) = sin(pi (i+1) / (N+1)) cos(w1 t),  w1 = 2 sqrt(k/m) sin(pi / (2 (N+1))).
// N = 30 unknowns: above the dense threshold, so the Newton matrix goes through KLU.
namespace chain {
constexpr int32_t N = 30;
constexpr Layout L{N, 0, 0, 2};
constexpr int32_t M = L.p(0), K = L.p(1);
inline int32_t residual(const double* v, double* out) {
  for (int32_t i = 0; i < N; ++i) {
    const double left = i > 0 ? v[L.q(i - 1)] : 0.0, right = i + 1 < N ? v[L.q(i + 1)] : 0.0;
    out[i] = v[M] * v[L.qdd(i)] + v[K] * (2.0 * v[L.q(i)] - left - right);
  }
  return finite_status(out, N);
}
inline int32_t newton(const double* v, double* out) {
  const double c = v[L.cq()] * v[K];
  int32_t e = 0;
  for (int32_t j = 0; j < N; ++j) {  // column j: rows j-1, j, j+1
    if (j > 0) out[e++] = -c;
    out[e++] = v[M] + 2.0 * c;
    if (j + 1 < N) out[e++] = -c;
  }
  return finite_status(out, e);
}
inline int32_t outputs(const double* v, double* out) {
  for (int32_t i = 0; i < N; ++i) out[i] = v[L.q(i)];
  return 0;
}
inline double mode_shape(int32_t i) {
  return std::sin(M_PI * (i + 1) / (N + 1));
}
inline double omega1(double m, double k) {
  return 2.0 * std::sqrt(k / m) * std::sin(M_PI / (2.0 * (N + 1)));
}
inline CompiledModel make(double m_ = 1.0, double k = 100.0) {
  CompiledModel m = make_shell("chain", L);
  m.v0[M] = m_, m.v0[K] = k;
  std::vector<int32_t> row, col;
  for (int32_t j = 0; j < N; ++j) {
    for (int32_t i = std::max(0, j - 1); i <= std::min(N - 1, j + 1); ++i) {
      row.push_back(i);
      col.push_back(j);
    }
  }
  for (int32_t i = 0; i < N; ++i) {
    m.v0[L.q(i)] = mode_shape(i);
    m.q.push_back(Unknown{"m" + std::to_string(i) + ".x", src("chain.mbs", 2, "Real x")});
    m.eq_source.push_back(src("chain.mbs", 5, "m*der(der(x)) = f_left + f_right"));
    m.output_names.push_back("m" + std::to_string(i) + ".x");
  }
  m.residual = Kernel{residual, N};
  m.newton_matrix = SparseKernel{Kernel{newton, static_cast<int32_t>(row.size())}, N, N, row, col};
  m.outputs = Kernel{outputs, N};
  return m;
}
}  // namespace chain

// ---- the spring chain of `chain` with N = 10 masses and 11 springs between two walls (below the
// dense threshold: the matrix is factored by the dense LU). Same kernels, same exact solution
// in the first normal mode; used by the solver benchmarks (bench/bench_solvers.cpp).
namespace chain10 {
constexpr int32_t N = 10;
constexpr Layout L{N, 0, 0, 2};
constexpr int32_t M = L.p(0), K = L.p(1);
inline int32_t residual(const double* v, double* out) {
  for (int32_t i = 0; i < N; ++i) {
    const double left = i > 0 ? v[L.q(i - 1)] : 0.0, right = i + 1 < N ? v[L.q(i + 1)] : 0.0;
    out[i] = v[M] * v[L.qdd(i)] + v[K] * (2.0 * v[L.q(i)] - left - right);
  }
  return finite_status(out, N);
}
inline int32_t newton(const double* v, double* out) {
  const double c = v[L.cq()] * v[K];
  int32_t e = 0;
  for (int32_t j = 0; j < N; ++j) {  // column j: rows j-1, j, j+1
    if (j > 0) out[e++] = -c;
    out[e++] = v[M] + 2.0 * c;
    if (j + 1 < N) out[e++] = -c;
  }
  return finite_status(out, e);
}
inline int32_t outputs(const double* v, double* out) {
  for (int32_t i = 0; i < N; ++i) out[i] = v[L.q(i)];
  return 0;
}
inline double mode_shape(int32_t i) {
  return std::sin(M_PI * (i + 1) / (N + 1));
}
inline double omega1(double m, double k) {
  return 2.0 * std::sqrt(k / m) * std::sin(M_PI / (2.0 * (N + 1)));
}
inline CompiledModel make(double m_ = 1.0, double k = 100.0) {
  CompiledModel m = make_shell("chain10", L);
  m.v0[M] = m_, m.v0[K] = k;
  std::vector<int32_t> row, col;
  for (int32_t j = 0; j < N; ++j) {
    for (int32_t i = std::max(0, j - 1); i <= std::min(N - 1, j + 1); ++i) {
      row.push_back(i);
      col.push_back(j);
    }
  }
  for (int32_t i = 0; i < N; ++i) {
    m.v0[L.q(i)] = mode_shape(i);
    m.q.push_back(Unknown{"m" + std::to_string(i) + ".x", src("chain10.mbs", 2, "Real x")});
    m.eq_source.push_back(src("chain10.mbs", 5, "m*der(der(x)) = f_left + f_right"));
    m.output_names.push_back("m" + std::to_string(i) + ".x");
  }
  m.residual = Kernel{residual, N};
  m.newton_matrix = SparseKernel{Kernel{newton, static_cast<int32_t>(row.size())}, N, N, row, col};
  m.outputs = Kernel{outputs, N};
  return m;
}
}  // namespace chain10

// ---- a block on a table, driven by A sin(w t), with regularized Coulomb friction:
//   m x'' + F0 (2/pi) atan(x' / eps) = A sin(w t)
// Newton on atan is the classical divergent case: at the stick-slip transitions the predicted
// velocity is off by much more than eps, and only shorter steps converge.
namespace friction {
constexpr Layout L{1, 0, 0, 5};
constexpr int32_t M = L.p(0), F0 = L.p(1), EPS = L.p(2), A = L.p(3), W = L.p(4);
inline int32_t residual(const double* v, double* out) {
  out[0] = v[M] * v[L.qdd(0)] + v[F0] * M_2_PI * std::atan(v[L.qd(0)] / v[EPS]) -
           v[A] * std::sin(v[W] * v[L.t()]);
  return finite_status(out, 1);
}
inline int32_t newton(const double* v, double* out) {
  const double s = v[L.qd(0)] / v[EPS];
  out[0] = v[M] + v[L.cqd()] * v[F0] * M_2_PI / (v[EPS] * (1.0 + s * s));
  return finite_status(out, 1);
}
inline int32_t outputs(const double* v, double* out) {
  out[0] = v[L.q(0)];
  out[1] = v[L.qd(0)];
  return 0;
}
inline CompiledModel make(double eps = 1e-4) {
  CompiledModel m = make_shell("friction", L);
  m.v0[M] = 1.0, m.v0[F0] = 0.3 * 9.81, m.v0[EPS] = eps, m.v0[A] = 5.0, m.v0[W] = 2.0 * M_PI;
  m.q = {Unknown{"x", src("friction.mbs", 2, "Real x")}};
  m.eq_source = {src("friction.mbs", 4, "m*der(der(x)) + F0*2/pi*atan(der(x)/eps) = A*sin(w*t)")};
  m.residual = Kernel{residual, 1};
  m.newton_matrix = SparseKernel{Kernel{newton, 1}, 1, 1, {0}, {0}};
  m.outputs = Kernel{outputs, 2};
  m.output_names = {"x", "der(x)"};
  return m;
}
}  // namespace friction

// ---- w^2 + 1 = 0: an algebraic equation without a real solution; Newton never converges.
namespace no_solution {
constexpr Layout L{0, 0, 1, 0};
inline int32_t residual(const double* v, double* out) {
  out[0] = v[L.z(0)] * v[L.z(0)] + 1.0;
  return finite_status(out, 1);
}
inline int32_t newton(const double* v, double* out) {
  out[0] = 2.0 * v[L.z(0)];
  return finite_status(out, 1);
}
inline CompiledModel make() {
  CompiledModel m = make_shell("no_solution", L);
  m.v0[L.z(0)] = 0.5;
  m.z = {Unknown{"w", src("nosol.mbs", 2, "Real w")}};
  m.eq_level = {EquationLevel::Algebraic};
  m.eq_source = {src("nosol.mbs", 4, "w^2 + 1 = 0")};
  m.residual = Kernel{residual, 1};
  m.newton_matrix = SparseKernel{Kernel{newton, 1}, 1, 1, {0}, {0}};
  return m;
}
}  // namespace no_solution

}  // namespace mbs::rt::testmodels

// ---- models of the implicit-family tests (tests/unit/test_runtime_implicit.cpp)
namespace mbs::rt::testmodels::implicit_family {

// The index-3 pendulum (testmodels::pendulum) with its index-2 kernels: the constraint
// x^2 + y^2 - L^2 = 0 replaced by its time derivative 2 (x xd + y yd) = 0, as the compiler emits
// index2_residual / index2_matrix (same columns [xdd | ydd | lambda] and coefficients).
namespace pendulum2 {
namespace p = testmodels::pendulum;
inline int32_t index2_residual(const double* v, double* out) {
  out[0] = v[p::M] * v[p::XDD] + 2.0 * v[p::X] * v[p::LAM];
  out[1] = v[p::M] * v[p::YDD] + v[p::M] * v[p::G] + 2.0 * v[p::Y] * v[p::LAM];
  out[2] = 2.0 * (v[p::X] * v[p::XD] + v[p::Y] * v[p::YD]);
  return finite_status(out, 3);
}
// d/dxdd of 2 (x xd + y yd) with x = ... + c_q xdd, xd = ... + c_qd xdd: 2 (c_q xd + c_qd x).
inline int32_t index2_matrix(const double* v, double* out) {
  const double cq = v[p::CQ], cqd = v[p::L.cqd()];
  out[0] = v[p::M] + cq * 2.0 * v[p::LAM];         // (0, 0)
  out[1] = 2.0 * (cq * v[p::XD] + cqd * v[p::X]);  // (2, 0)
  out[2] = v[p::M] + cq * 2.0 * v[p::LAM];         // (1, 1)
  out[3] = 2.0 * (cq * v[p::YD] + cqd * v[p::Y]);  // (2, 1)
  out[4] = 2.0 * v[p::X];                          // (0, 2)
  out[5] = 2.0 * v[p::Y];                          // (1, 2)
  return finite_status(out, 6);
}
// Outputs of testmodels::pendulum plus the velocity constraint x xd + y yd.
inline int32_t outputs(const double* v, double* out) {
  p::outputs(v, out);
  out[5] = v[p::X] * v[p::XD] + v[p::Y] * v[p::YD];
  return 0;
}
inline CompiledModel make(double phi0 = 0.5) {
  CompiledModel m = p::make(phi0);
  m.name = "pendulum2";
  m.index2_residual = Kernel{index2_residual, 3};
  m.index2_matrix =
      SparseKernel{Kernel{index2_matrix, 6}, 3, 3, m.newton_matrix.row, m.newton_matrix.col};
  m.outputs = Kernel{outputs, 6};
  m.output_names.push_back("velocity_constraint");
  return m;
}
}  // namespace pendulum2

}  // namespace mbs::rt::testmodels::implicit_family
