// The initialization problem at t0 (Initial.h). Runs once per compilation of a model that has
// initial equations or free starts, on the expression interpreter.
#include "compiler/dae/Initial.h"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <Eigen/Sparse>
#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace mbs {

namespace {

// One row of the initialization problem.
struct Row {
  sym::Expr residual;
  Span span;
  std::string what;  // "the initial equation", "the constraint", ...
  std::string text;
  int kind = 0;  // 0 an equation of the model, 1 a constraint, 2 an initial equation
};

struct Problem {
  std::vector<Row> rows;
  std::vector<uint32_t> unknowns;  // symbols: the free starts first, then [qdd | yd | z]
  std::vector<std::string> names;  // of the unknowns, for messages
  std::vector<Span> spans;         // of the free starts: where they are declared free
  size_t n_free = 0;
};

Problem build_problem(const SymbolicDae& dae) {
  Problem p;
  for (const auto& u : dae.q)
    if (u.free_start) {
      p.unknowns.push_back(u.symbol);
      p.names.push_back(u.name);
      p.spans.push_back(u.free_span);
    }
  for (const auto& u : dae.q)
    if (u.free_start_der) {
      p.unknowns.push_back(u.d1);
      p.names.push_back("der(" + u.name + ")");
      p.spans.push_back(u.free_der_span);
    }
  for (const auto& u : dae.y)
    if (u.free_start) {
      p.unknowns.push_back(u.symbol);
      p.names.push_back(u.name);
      p.spans.push_back(u.free_span);
    }
  p.n_free = p.unknowns.size();
  for (const auto& u : dae.q) {
    p.unknowns.push_back(u.d2);
    p.names.push_back("der(der(" + u.name + "))");
  }
  for (const auto& u : dae.y) {
    p.unknowns.push_back(u.d1);
    p.names.push_back("der(" + u.name + ")");
  }
  for (const auto& u : dae.z) {
    p.unknowns.push_back(u.symbol);
    p.names.push_back(u.name);
  }
  std::vector<uint32_t> free(p.unknowns.begin(),
                             p.unknowns.begin() + static_cast<std::ptrdiff_t>(p.n_free));
  std::sort(free.begin(), free.end());
  const auto has_free = [&](sym::Expr e) {
    for (uint32_t s : sym::free_symbols(e))
      if (std::binary_search(free.begin(), free.end(), s)) return true;
    return false;
  };
  for (const auto& e : dae.equations)
    p.rows.push_back({e.init_residual, e.span, "the equation", e.text, 0});
  for (const auto& e : dae.equations) {
    if (e.level == rt::EquationLevel::Position) {
      if (has_free(e.residual)) p.rows.push_back({e.residual, e.span, "the constraint", e.text, 1});
      if (e.velocity_residual && has_free(e.velocity_residual))
        p.rows.push_back(
            {e.velocity_residual, e.span, "the time derivative of the constraint", e.text, 1});
    } else if (e.level == rt::EquationLevel::Velocity && has_free(e.residual)) {
      p.rows.push_back({e.residual, e.span, "the constraint", e.text, 1});
    }
  }
  for (const auto& e : dae.initial_equations)
    p.rows.push_back({e.residual, e.span, "the initial equation", e.text, 2});
  return p;
}

}  // namespace

bool has_initial_problem(const SymbolicDae& dae) {
  if (!dae.initial_equations.empty()) return true;
  for (const auto& u : dae.q)
    if (u.free_start || u.free_start_der) return true;
  for (const auto& u : dae.y)
    if (u.free_start) return true;
  return false;
}

void mark_initial_parameters(const SymbolicDae& dae, FlatModel& flat) {
  const Problem p = build_problem(dae);
  for (const Row& r : p.rows)
    for (uint32_t s : sym::free_symbols(r.residual))
      if (auto it = flat.var_of_symbol.find(s);
          it != flat.var_of_symbol.end() && flat.vars[it->second].role == VarRole::Parameter)
        flat.mark_compile_time(s, "the initial equations, solved by the compiler");
}

// Reduced Gauss-Newton. The rows are A = the n_eq index-reduced equations, regular in W =
// [qdd | yd | z] (the DAE pass checked), and B = the constraints and the initial equations; the
// unknowns F = the free starts and W. For given F, W follows from A by Newton with a sparse LU of
// dA/dW; F takes minimum-norm Gauss-Newton steps on B with the reduced Jacobian
//   S = dB/dF - dB/dW (dA/dW)^-1 dA/dF   (rows of B x free starts: small and dense),
// so the work per iteration is one sparse factorization, not a dense one of the whole system.
bool solve_initial_problem(const SymbolicDae& dae, sym::Context& cx, std::vector<double>& v,
                           DiagnosticEngine& diags) {
  const Problem p = build_problem(dae);
  const auto m = static_cast<Eigen::Index>(p.rows.size());
  const auto n = static_cast<Eigen::Index>(p.unknowns.size());
  const auto nf = static_cast<Eigen::Index>(p.n_free), nw = n - nf;
  const auto na = static_cast<Eigen::Index>(dae.equations.size()), nb = m - na;
  v.resize(cx.symbol_count(), 0.0);
  const auto x = [&](Eigen::Index j) -> double& { return v[p.unknowns[static_cast<size_t>(j)]]; };

  // the Jacobian's entries: (row, unknown, d row / d unknown)
  struct Entry {
    Eigen::Index row, col;
    sym::Expr d;
  };
  std::vector<Entry> entries;
  {
    std::unordered_map<uint32_t, Eigen::Index> col;
    for (Eigen::Index j = 0; j < n; ++j) col[p.unknowns[static_cast<size_t>(j)]] = j;
    for (Eigen::Index i = 0; i < m; ++i)
      for (uint32_t s : sym::free_symbols(p.rows[static_cast<size_t>(i)].residual))
        if (auto it = col.find(s); it != col.end())
          entries.push_back(
              {i, it->second, sym::diff(cx, p.rows[static_cast<size_t>(i)].residual, s)});
  }
  std::vector<sym::Expr> roots, jroots;
  for (const Row& r : p.rows) roots.push_back(r.residual);
  for (const Entry& e : entries) jroots.push_back(e.d);
  std::vector<double> rv(roots.size()), jv(jroots.size());
  Eigen::VectorXd r(m), row_scale(m);
  const auto eval_r = [&] {
    sym::evaluate(roots, v, rv);
    for (Eigen::Index i = 0; i < m; ++i) r[i] = rv[static_cast<size_t>(i)];
  };
  // the entries' values, and each row's scale: its largest |d row / d x_j| max(1, |x_j|)
  const auto eval_J = [&] {
    sym::evaluate(jroots, v, jv);
    row_scale.setOnes();
    for (size_t k = 0; k < entries.size(); ++k)
      row_scale[entries[k].row] =
          std::max(row_scale[entries[k].row],
                   std::fabs(jv[k]) * std::max(1.0, std::fabs(x(entries[k].col))));
  };
  // a row is satisfied when its residual is small against its sensitivity to the unknowns
  double rel_tol = 1e-15;  // iterate to rounding level; accept at 1e-10 (below)
  const auto violated = [&](Eigen::Index i) {
    return !std::isfinite(r[i]) || std::fabs(r[i]) > rel_tol * row_scale[i];
  };
  // the row to blame: the worst violated initial equation, else constraint, else equation (a
  // least-squares compromise violates all rows of a contradiction; the initial equations are
  // what the user added)
  const auto worst_row = [&]() -> Eigen::Index {
    for (const int kind : {2, 1, 0}) {
      Eigen::Index worst = -1;
      double worst_ratio = 0.0;
      for (Eigen::Index i = 0; i < m; ++i) {
        if (p.rows[static_cast<size_t>(i)].kind != kind || !violated(i)) continue;
        const double ratio =
            std::isfinite(r[i]) ? std::fabs(r[i]) / (rel_tol * row_scale[i]) : HUGE_VAL;
        if (ratio > worst_ratio) {
          worst_ratio = ratio;
          worst = i;
        }
      }
      if (worst >= 0) return worst;
    }
    return -1;
  };

  // W from A for the current F: Newton with a sparse LU of dA/dW (linear in qdd and yd)
  Eigen::SparseLU<Eigen::SparseMatrix<double>, Eigen::COLAMDOrdering<int>> lu;
  const auto factor_AW = [&] {
    std::vector<Eigen::Triplet<double>> t;
    for (size_t k = 0; k < entries.size(); ++k)
      if (entries[k].row < na && entries[k].col >= nf)
        t.emplace_back(static_cast<int>(entries[k].row), static_cast<int>(entries[k].col - nf),
                       jv[k]);
    Eigen::SparseMatrix<double> A(na, nw);
    A.setFromTriplets(t.begin(), t.end());
    lu.compute(A);
    return lu.info() == Eigen::Success;
  };
  const auto solve_W = [&] {
    for (int it = 0; it < 50; ++it) {
      eval_r();
      eval_J();
      bool done = true;
      for (Eigen::Index i = 0; i < na && done; ++i) done = !violated(i);
      if (done) return true;
      if (!r.head(na).allFinite() || !factor_AW()) return false;
      const Eigen::VectorXd dw = lu.solve(-r.head(na));
      if (!dw.allFinite()) return false;
      for (Eigen::Index j = 0; j < nw; ++j) x(nf + j) += dw[j];
    }
    eval_r();
    eval_J();
    return false;
  };
  // S = dB/dF - dB/dW (dA/dW)^-1 dA/dF, after solve_W (the entries and lu are current)
  const auto reduced = [&] {
    Eigen::MatrixXd AF = Eigen::MatrixXd::Zero(na, nf), BF = Eigen::MatrixXd::Zero(nb, nf);
    Eigen::SparseMatrix<double> BW(nb, nw);
    std::vector<Eigen::Triplet<double>> t;
    for (size_t k = 0; k < entries.size(); ++k) {
      const Entry& e = entries[k];
      if (e.col < nf)
        (e.row < na ? AF(e.row, e.col) : BF(e.row - na, e.col)) += jv[k];
      else if (e.row >= na)
        t.emplace_back(static_cast<int>(e.row - na), static_cast<int>(e.col - nf), jv[k]);
    }
    BW.setFromTriplets(t.begin(), t.end());
    Eigen::MatrixXd S = BF;
    if (nf > 0 && factor_AW()) S -= BW * Eigen::MatrixXd(lu.solve(AF));
    return S;
  };

  bool inner_ok = solve_W();
  // free starts that nothing determines (a direction of the null space of S moves them) keep
  // their start values: they leave the unknowns, with a warning
  std::vector<Eigen::Index> active;
  if (inner_ok && nf > 0) {
    // S has a row per initial equation or constraint on the free starts; with none (nb = 0)
    // nothing determines them: rank 0, every direction free (Eigen's SVD of an empty matrix is
    // not defined; it crashed here)
    Eigen::Index rank = 0;
    Eigen::MatrixXd V = Eigen::MatrixXd::Identity(nf, nf);
    if (nb > 0) {
      const Eigen::MatrixXd S = reduced();
      Eigen::JacobiSVD<Eigen::MatrixXd> svd(S, Eigen::ComputeFullV);
      const Eigen::VectorXd& sv = svd.singularValues();
      const double cut = 1e-9 * std::max(1.0, sv.size() > 0 ? sv[0] : 0.0);
      while (rank < sv.size() && sv[rank] > cut) ++rank;
      V = svd.matrixV();
    }
    for (Eigen::Index j = 0; j < nf; ++j) {
      if (V.row(j).tail(nf - rank).norm() <= 1e-6) {
        active.push_back(j);
        continue;
      }
      const auto k = static_cast<size_t>(j);
      diags.report(DiagKind::initial_not_determined, p.spans[k],
                   {p.names[k], fmt::format("{:.6g}", x(j))});
      diags.help("add an initial equation for it, or remove fixed = false");
    }
  }
  const auto na_active = static_cast<Eigen::Index>(active.size());
  const auto b_violated = [&] {
    for (Eigen::Index i = na; i < m; ++i)
      if (violated(i)) return true;
    return false;
  };
  // Gauss-Newton on r_B(F) = offset (W solved from A at every point); true when converged
  const auto gauss_newton = [&](const Eigen::VectorXd& offset, int max_iter) {
    const auto rb = [&] { return Eigen::VectorXd(r.tail(nb) - offset); };
    const auto converged = [&](double tol) {
      for (Eigen::Index i = 0; i < nb; ++i)
        if (!std::isfinite(r[na + i]) || std::fabs(r[na + i] - offset[i]) > tol * row_scale[na + i])
          return false;
      return true;
    };
    // iterate to rounding level, accept at 1e-10 (as the final check)
    int slow = 0;  // iterations in a row that did not halve |r_B| (a least-squares point)
    for (int it = 0; it < max_iter && slow < 8; ++it) {
      if (converged(1e-15)) return true;
      const Eigen::MatrixXd S = reduced();
      Eigen::MatrixXd Sa(nb, na_active);
      for (Eigen::Index k = 0; k < na_active; ++k)
        Sa.col(k) = S.col(active[static_cast<size_t>(k)]);
      const Eigen::VectorXd dF = Sa.completeOrthogonalDecomposition().solve(-rb());
      if (!dF.allFinite()) return false;
      // damped: the first step length that reduces |r_B| (W solved again at each trial point)
      std::vector<double> saved(static_cast<size_t>(n));
      for (Eigen::Index j = 0; j < n; ++j) saved[static_cast<size_t>(j)] = x(j);
      const double norm0 = rb().norm();
      bool better = false;
      double step = 1.0;
      for (int ls = 0; ls < 30 && !better; ++ls, step *= 0.5) {
        for (Eigen::Index j = 0; j < n; ++j) x(j) = saved[static_cast<size_t>(j)];
        for (Eigen::Index k = 0; k < na_active; ++k)
          x(active[static_cast<size_t>(k)]) += step * dF[k];
        better = solve_W() && rb().allFinite() && rb().norm() < norm0;
      }
      if (!better) {
        for (Eigen::Index j = 0; j < n; ++j) x(j) = saved[static_cast<size_t>(j)];
        solve_W();
        return converged(1e-10);
      }
      slow = rb().norm() > 0.5 * norm0 ? slow + 1 : 0;
    }
    return converged(1e-10);
  };
  if (inner_ok && na_active > 0 && b_violated()) {
    // directly; if that fails, by homotopy as the static solver does (rt::solve_static):
    // r_B(F) = (1 - s) r_B(F0) for s from 0 to 1 in steps of 1/20, each from the solution of the
    // step before; a failed step is retried with half the increment (down to 1/20 / 2^10), and
    // after two successes the increment doubles again
    const std::vector<double> start(v);
    const Eigen::VectorXd r0 = r.tail(nb);
    if (!gauss_newton(Eigen::VectorXd::Zero(nb), 50)) {
      v = start;
      inner_ok = solve_W();
      constexpr double kStep = 1.0 / 20;
      double s = 0.0, ds = kStep;
      int successes = 0;
      while (inner_ok && s < 1.0) {
        const double next = std::min(1.0, s + ds);
        const std::vector<double> before(v);
        if (gauss_newton((1.0 - next) * r0, next == 1.0 ? 200 : 50)) {
          s = next;
          if (++successes >= 2 && ds < kStep) {
            ds = std::min(kStep, 2 * ds);
            successes = 0;
          }
          continue;
        }
        v = before;
        inner_ok = solve_W();
        successes = 0;
        ds *= 0.5;
        if (ds < kStep / 1024) break;
      }
    }
  }

  rel_tol = 1e-10;
  eval_r();
  eval_J();
  if (const Eigen::Index worst = worst_row(); worst >= 0 || !inner_ok) {
    const Eigen::Index i = worst >= 0 ? worst : 0;
    const Row& row = p.rows[static_cast<size_t>(i)];
    diags.report(DiagKind::initial_failed, row.span,
                 {fmt::format("{}", v[dae.time_symbol]), fmt::format("{:.6g}", r[i])});
    std::string involved;
    for (const Entry& e : entries)
      if (e.row == i)
        involved +=
            fmt::format("{}{} = {:.6g}{}", involved.empty() ? "" : ", ",
                        p.names[static_cast<size_t>(e.col)], x(e.col), e.col < nf ? " (free)" : "");
    diags.note(row.span, row.what + (involved.empty() ? " contains no unknown of the start"
                                                      : " involves " + involved));
    diags.help(
        p.n_free == 0
            ? "no start value is free: declare fixed = false on the start values that the initial "
              "equations should determine"
            : "the initial equations may contradict each other or the fixed start values; free "
              "other start values (fixed = false), or give start values closer to a solution");
    return false;
  }
  return true;
}

}  // namespace mbs
