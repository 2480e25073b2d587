// The initialization problem at t0 (Initial.h). Runs once per compilation of a model that has
// initial equations or free starts, on the expression interpreter.
#include "compiler/dae/Initial.h"

#include <fmt/format.h>

#include <Eigen/Dense>
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

bool solve_initial_problem(const SymbolicDae& dae, sym::Context& cx, std::vector<double>& v,
                           DiagnosticEngine& diags) {
  const Problem p = build_problem(dae);
  const auto m = static_cast<Eigen::Index>(p.rows.size());
  const auto n = static_cast<Eigen::Index>(p.unknowns.size());
  v.resize(cx.symbol_count(), 0.0);

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
  Eigen::VectorXd r(m);
  Eigen::MatrixXd J(m, n);
  const auto eval_r = [&] {
    sym::evaluate(roots, v, rv);
    for (Eigen::Index i = 0; i < m; ++i) r[i] = rv[static_cast<size_t>(i)];
  };
  const auto eval_J = [&] {
    sym::evaluate(jroots, v, jv);
    J.setZero();
    for (size_t k = 0; k < entries.size(); ++k) J(entries[k].row, entries[k].col) += jv[k];
  };
  // a row is satisfied when its residual is small against its sensitivity to the unknowns
  double rel_tol = 1e-15;  // iterate to rounding level; accept at 1e-10 (below)
  const auto row_tol = [&](Eigen::Index i) {
    double s = 1.0;
    for (Eigen::Index j = 0; j < n; ++j)
      s = std::max(s, std::fabs(J(i, j)) * std::max(1.0, std::fabs(v[p.unknowns[j]])));
    return rel_tol * s;
  };
  // the row to blame: the worst violated initial equation, else constraint, else equation (a
  // least-squares compromise violates all rows of a contradiction; the initial equations are
  // what the user added)
  const auto worst_row = [&]() -> Eigen::Index {
    for (const int kind : {2, 1, 0}) {
      Eigen::Index worst = -1;
      double worst_ratio = 1.0;
      for (Eigen::Index i = 0; i < m; ++i) {
        if (p.rows[static_cast<size_t>(i)].kind != kind) continue;
        const double ratio = std::isfinite(r[i]) ? std::fabs(r[i]) / row_tol(i) : HUGE_VAL;
        if (ratio > worst_ratio) {
          worst_ratio = ratio;
          worst = i;
        }
      }
      if (worst >= 0) return worst;
    }
    return -1;
  };

  eval_r();
  eval_J();
  // free starts that nothing determines (a direction of the null space of J at the start moves
  // them) keep their start values: they leave the unknowns, with a warning
  std::vector<Eigen::Index> active;
  {
    std::vector<bool> undetermined(static_cast<size_t>(n), false);
    if (p.n_free > 0 && J.allFinite()) {
      Eigen::JacobiSVD<Eigen::MatrixXd> svd(J, Eigen::ComputeFullV);
      const Eigen::VectorXd& sv = svd.singularValues();
      const double cut = 1e-9 * std::max(1.0, sv.size() > 0 ? sv[0] : 0.0);
      Eigen::Index rank = 0;
      while (rank < sv.size() && sv[rank] > cut) ++rank;
      const Eigen::MatrixXd& V = svd.matrixV();
      for (size_t k = 0; k < p.n_free; ++k) {
        const auto j = static_cast<Eigen::Index>(k);
        if (V.row(j).tail(n - rank).norm() <= 1e-6) continue;
        undetermined[k] = true;
        diags.report(DiagKind::initial_not_determined, p.spans[k],
                     {p.names[k], fmt::format("{:.6g}", v[p.unknowns[k]])});
        diags.help("add an initial equation for it, or remove fixed = false");
      }
    }
    for (Eigen::Index j = 0; j < n; ++j)
      if (!undetermined[static_cast<size_t>(j)]) active.push_back(j);
  }
  const auto na = static_cast<Eigen::Index>(active.size());
  int slow = 0;  // iterations in a row that did not halve the residual (a least-squares point)
  for (int it = 0; it < 100 && slow < 5; ++it) {
    if (!r.allFinite() || !J.allFinite()) break;
    if (worst_row() < 0) break;
    Eigen::MatrixXd Ja(m, na);
    for (Eigen::Index k = 0; k < na; ++k) Ja.col(k) = J.col(active[static_cast<size_t>(k)]);
    Eigen::VectorXd dx = Ja.completeOrthogonalDecomposition().solve(-r);
    if (!dx.allFinite()) break;
    // damped: the first step length that reduces the residual
    std::vector<double> saved(static_cast<size_t>(n));
    for (Eigen::Index j = 0; j < n; ++j) saved[static_cast<size_t>(j)] = v[p.unknowns[j]];
    const double norm0 = r.norm();
    bool better = false;
    double step = 1.0;
    for (int ls = 0; ls < 30; ++ls, step *= 0.5) {
      for (Eigen::Index k = 0; k < na; ++k) {
        const size_t j = static_cast<size_t>(active[static_cast<size_t>(k)]);
        v[p.unknowns[j]] = saved[j] + step * dx[k];
      }
      eval_r();
      if (r.allFinite() && r.norm() < norm0) {
        better = true;
        break;
      }
    }
    if (!better) {
      for (Eigen::Index j = 0; j < n; ++j) v[p.unknowns[j]] = saved[static_cast<size_t>(j)];
      eval_r();
      break;
    }
    slow = r.norm() > 0.5 * norm0 ? slow + 1 : 0;
    eval_J();
  }

  rel_tol = 1e-10;
  if (const Eigen::Index worst = worst_row(); worst >= 0 || !r.allFinite() || !J.allFinite()) {
    const Eigen::Index i = worst >= 0 ? worst : 0;
    const Row& row = p.rows[static_cast<size_t>(i)];
    diags.report(DiagKind::initial_failed, row.span,
                 {fmt::format("{}", v[dae.time_symbol]), fmt::format("{:.6g}", r[i])});
    std::string involved;
    for (const Entry& e : entries)
      if (e.row == i)
        involved += fmt::format("{}{} = {:.6g}{}", involved.empty() ? "" : ", ",
                                p.names[static_cast<size_t>(e.col)], v[p.unknowns[e.col]],
                                static_cast<size_t>(e.col) < p.n_free ? " (free)" : "");
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
