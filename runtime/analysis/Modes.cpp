#include "runtime/analysis/Modes.h"

#include <fmt/format.h>

#include <Eigen/Eigenvalues>
#include <Eigen/LU>
#include <Eigen/SVD>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

namespace mbs::rt {

namespace {

using Eigen::Index;
using Eigen::MatrixXd;

// Numerical rank: singular values above max(rows, cols) * eps * sigma_max.
Index rank_of(const Eigen::JacobiSVD<MatrixXd>& svd, Index rows, Index cols) {
  const auto& sv = svd.singularValues();
  if (sv.size() == 0 || sv(0) == 0.0) return 0;
  const double tol =
      static_cast<double>(std::max(rows, cols)) * std::numeric_limits<double>::epsilon() * sv(0);
  Index r = 0;
  while (r < sv.size() && sv(r) > tol) ++r;
  return r;
}

// Orthonormal basis of null(a) (columns), a is rows x cols.
MatrixXd null_space(const MatrixXd& a) {
  if (a.rows() == 0) return MatrixXd::Identity(a.cols(), a.cols());
  Eigen::JacobiSVD<MatrixXd> svd(a, Eigen::ComputeFullV);
  const Index r = rank_of(svd, a.rows(), a.cols());
  return svd.matrixV().rightCols(a.cols() - r);
}

bool row_is_zero(const MatrixXd& a, Index i) {
  return a.cols() == 0 || (a.row(i).array() == 0.0).all();
}

std::vector<std::complex<double>> quadratic_eigenvalues(const MatrixXd& mr, const MatrixXd& dr,
                                                        const MatrixXd& kr) {
  const Index n = mr.rows();
  std::vector<std::complex<double>> out;
  Eigen::JacobiSVD<MatrixXd> svd_m(mr);
  if (rank_of(svd_m, n, n) == n) {
    // Mr invertible: standard eigenproblem of the companion matrix.
    Eigen::PartialPivLU<MatrixXd> lu(mr);
    MatrixXd a = MatrixXd::Zero(2 * n, 2 * n);
    a.topRightCorner(n, n).setIdentity();
    a.bottomLeftCorner(n, n) = -lu.solve(kr);
    a.bottomRightCorner(n, n) = -lu.solve(dr);
    Eigen::EigenSolver<MatrixXd> es(a, /*computeEigenvectors=*/false);
    if (es.info() != Eigen::Success) return out;
    for (Index i = 0; i < 2 * n; ++i) out.push_back(es.eigenvalues()(i));
    return out;
  }
  // Singular Mr: generalized eigenproblem, infinite eigenvalues (beta = 0) dropped.
  MatrixXd a = MatrixXd::Zero(2 * n, 2 * n), b = MatrixXd::Zero(2 * n, 2 * n);
  a.topRightCorner(n, n).setIdentity();
  a.bottomLeftCorner(n, n) = -kr;
  a.bottomRightCorner(n, n) = -dr;
  b.topLeftCorner(n, n).setIdentity();
  b.bottomRightCorner(n, n) = mr;
  Eigen::GeneralizedEigenSolver<MatrixXd> ges(a, b, /*computeEigenvectors=*/false);
  if (ges.info() != Eigen::Success) return out;
  const double scale = std::max(1.0, b.cwiseAbs().maxCoeff());
  for (Index i = 0; i < 2 * n; ++i) {
    const std::complex<double> alpha = ges.alphas()(i);
    const double beta = ges.betas()(i);
    if (std::abs(beta) <= 64.0 * std::numeric_limits<double>::epsilon() * scale) continue;
    out.push_back(alpha / beta);
  }
  return out;
}

}  // namespace

std::vector<Mode> eigenmodes(const LinearSystem& s, std::string* error) {
  auto fail = [&](std::string message) {
    if (error) *error = std::move(message);
    return std::vector<Mode>{};
  };
  if (error) error->clear();
  if (s.n_y > 0) {
    return fail(fmt::format(
        "eigenvalues: the model has {} first-order (ODE1) coordinate(s), e.g. '{}'; only "
        "second-order systems are supported",
        s.n_y, s.y_names.empty() ? std::string("y") : s.y_names[0]));
  }
  std::vector<Index> dyn, pos;
  for (size_t i = 0; i < s.eq_level.size(); ++i) {
    const auto r = static_cast<Index>(i);
    switch (s.eq_level[i]) {
      case EquationLevel::Dynamic:
        dyn.push_back(r);
        break;
      case EquationLevel::Position:
        if (!row_is_zero(s.B, r) || !row_is_zero(s.M, r) || !row_is_zero(s.D, r)) {
          return fail(fmt::format(
              "eigenvalues: the constraint {} depends on velocities, accelerations or algebraic "
              "variables",
              s.row_names[i]));
        }
        pos.push_back(r);
        break;
      case EquationLevel::Velocity:
        return fail(fmt::format("eigenvalues: velocity-level constraints are not supported: {}",
                                s.row_names[i]));
      case EquationLevel::Algebraic:
        return fail(fmt::format(
            "eigenvalues: the model has algebraic equations that are not constraints (their "
            "variables are not Lagrange multipliers), e.g. {}",
            s.row_names[i]));
    }
  }
  const Index nq = s.n_q, nd = static_cast<Index>(dyn.size());
  MatrixXd md(nd, nq), dd(nd, nq), kd(nd, nq), bd(nd, s.n_z);
  for (Index r = 0; r < nd; ++r) {
    md.row(r) = s.M.row(dyn[r]);
    dd.row(r) = s.D.row(dyn[r]);
    kd.row(r) = s.K.row(dyn[r]);
    bd.row(r) = s.B.row(dyn[r]);
  }
  MatrixXd g(static_cast<Index>(pos.size()), nq);
  for (Index r = 0; r < g.rows(); ++r) g.row(r) = s.K.row(pos[r]);
  const MatrixXd n = null_space(g);               // nq x (nq - rank G)
  const MatrixXd l = null_space(bd.transpose());  // nd x (nd - rank B)
  if (l.cols() != n.cols()) {
    return fail(fmt::format(
        "eigenvalues: the projected system is not square: {} independent motions (null space of "
        "the {} constraint rows) but {} dynamic equations free of multipliers ({} dynamic rows, "
        "{} multipliers of rank {})",
        n.cols(), g.rows(), l.cols(), nd, s.n_z, nd - l.cols()));
  }
  if (n.cols() == 0) return {};
  const MatrixXd mr = l.transpose() * md * n, dr = l.transpose() * dd * n,
                 kr = l.transpose() * kd * n;
  const auto lambdas = quadratic_eigenvalues(mr, dr, kr);
  if (lambdas.empty()) return fail("eigenvalues: the eigensolver did not converge");
  std::vector<Mode> modes;
  for (const auto& lam : lambdas) {
    if (lam.imag() < 0.0) continue;
    Mode mo;
    mo.lambda = lam;
    mo.frequency_hz = std::abs(lam.imag()) / (2.0 * std::numbers::pi);
    const double mag = std::abs(lam);
    mo.damping_ratio = mag > 0.0 ? -lam.real() / mag : std::numeric_limits<double>::quiet_NaN();
    modes.push_back(mo);
  }
  std::stable_sort(modes.begin(), modes.end(), [](const Mode& a, const Mode& b) {
    if (a.frequency_hz != b.frequency_hz) return a.frequency_hz < b.frequency_hz;
    return std::abs(a.lambda) < std::abs(b.lambda);
  });
  return modes;
}

std::string format_modes(const std::vector<Mode>& modes) {
  if (modes.empty()) return "no modes\n";
  std::string out =
      fmt::format("{:>4}  {:>16}  {:>16}  {:>13}  {:>15}  {:>13}\n", "mode", "Re(lambda) [1/s]",
                  "Im(lambda) [1/s]", "f_damped [Hz]", "f_undamped [Hz]", "damping ratio");
  for (size_t i = 0; i < modes.size(); ++i) {
    const Mode& m = modes[i];
    out += fmt::format("{:>4}  {:>16.9g}  {:>16.9g}  {:>13.9g}  {:>15.9g}  {:>13.6g}\n", i + 1,
                       m.lambda.real(), m.lambda.imag(), m.frequency_hz,
                       std::abs(m.lambda) / (2.0 * std::numbers::pi), m.damping_ratio);
  }
  return out;
}

}  // namespace mbs::rt
