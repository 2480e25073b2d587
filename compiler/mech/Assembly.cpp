// Initial assembly (Mechanics.h, step 7). Runs once per compilation on the expression
// interpreter; the loops of a mechanism are small, so this costs microseconds to milliseconds.
#include "compiler/mech/Assembly.h"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <map>

namespace mbs::mech {

namespace {

double eval_start(const FlatVar& v, const std::vector<double>& vals) {
  return v.start ? sym::evaluate(v.start, vals) : 0.0;
}

}  // namespace

bool assemble_mechanism(FlatModel& flat, sym::Context& cx, DerivativeTable& ders,
                        const std::vector<AssemblyCoord>& coords,
                        const std::vector<ClosureRow>& rows, const std::vector<ClosureRow>& extra,
                        DiagnosticEngine& diags, std::vector<bool>& keep, bool remove_redundant,
                        bool assemble_velocities) {
  // all rows: the mandatory ones (model equations, unit quaternions) first, then loop rows
  std::vector<const ClosureRow*> all;
  for (const auto& r : extra) all.push_back(&r);
  for (const auto& r : rows)
    if (r.quaternion_of >= 0) all.push_back(&r);
  for (const auto& r : rows)
    if (r.quaternion_of < 0) all.push_back(&r);
  const size_t m = all.size(), n = coords.size();
  keep.assign(rows.size(), true);

  // symbol values: parameters, then start values
  std::vector<double> vals(cx.symbol_count(), 0.0);
  for (const auto& v : flat.vars)
    if (v.role != VarRole::Variable) vals[v.symbol] = v.value;
  // the assembled start values are numbers: the parameters they come from are compile-time
  const auto mark = [&](sym::Expr e) {
    if (!e) return;
    for (uint32_t s : sym::free_symbols(e))
      if (auto it = flat.var_of_symbol.find(s);
          it != flat.var_of_symbol.end() && flat.vars[it->second].role != VarRole::Variable)
        flat.mark_compile_time(s, "the start assembly of the mechanism");
  };
  for (const auto* r : all) mark(r->residual);
  for (const auto& c : coords) {
    mark(flat.vars[c.var].start);
    mark(flat.vars[c.vel_var].start);
  }
  for (const auto& c : coords) {
    vals[c.q] = eval_start(flat.vars[c.var], vals);
    vals[c.dq] = eval_start(flat.vars[c.vel_var], vals);
  }
  // sparse Jacobian structure: entries (row, coord, expression)
  struct Entry {
    size_t row, col;
    sym::Expr d;
  };
  std::vector<Entry> jac;
  std::vector<sym::Expr> rate(m);
  for (size_t i = 0; i < m; ++i) {
    auto fs = sym::free_symbols(all[i]->residual);
    for (size_t j = 0; j < n; ++j)
      if (std::binary_search(fs.begin(), fs.end(), coords[j].q))
        jac.push_back({i, j, sym::diff(cx, all[i]->residual, coords[j].q)});
    rate[i] = ders.total_derivative(all[i]->residual);
  }
  vals.resize(cx.symbol_count(), 0.0);  // total_derivative may have created der() symbols
  auto residual = [&](Eigen::VectorXd& r) {
    r.resize(static_cast<Eigen::Index>(m));
    for (size_t i = 0; i < m; ++i) r[i] = sym::evaluate(all[i]->residual, vals);
  };
  auto jacobian = [&](Eigen::MatrixXd& J) {
    J.setZero(static_cast<Eigen::Index>(m), static_cast<Eigen::Index>(n));
    for (const auto& e : jac) J(e.row, e.col) = sym::evaluate(e.d, vals);
  };
  std::vector<size_t> free_q, free_v;
  for (size_t j = 0; j < n; ++j) {
    if (!flat.vars[coords[j].var].fixed) free_q.push_back(j);
    if (!flat.vars[coords[j].vel_var].fixed) free_v.push_back(j);
  }
  auto report_failure = [&](const Eigen::VectorXd& r, const char* level) {
    Eigen::Index worst = 0;
    r.cwiseAbs().maxCoeff(&worst);
    const ClosureRow& row = *all[worst];
    std::string where = row.user ? "the equation '" + row.what + "'"
                        : row.quaternion_of >= 0
                            ? "the " + row.what + " of '" + row.joint + "'"
                            : "the loop closed by '" + row.joint + "' (" + row.what + ")";
    diags.report(DiagKind::mech_assembly_failed, row.span,
                 {level, where, fmt::format("{:.6g}", r[worst])});
    std::string involved;
    for (const auto& e : jac) {
      if (e.row != static_cast<size_t>(worst)) continue;
      const auto& c = coords[e.col];
      const FlatVar& v = flat.vars[level[0] == 'p' ? c.var : c.vel_var];
      involved += fmt::format("{}{} = {:.6g}{}", involved.empty() ? "" : ", ", v.name,
                              vals[level[0] == 'p' ? c.q : c.dq], v.fixed ? " (fixed)" : "");
    }
    if (!involved.empty()) diags.note(row.span, "start values involved: " + involved);
    diags.help(
        "give start values closer to a closed configuration (or change which of them are fixed "
        "= true); Newton may also stop at the nearest configuration when the loop cannot close");
  };

  // ---- positions: Gauss-Newton with minimum-norm steps over the coordinates that are not fixed
  Eigen::VectorXd r;
  Eigen::MatrixXd J;
  residual(r);
  const double tol = 1e-12;
  for (int it = 0; it < 100 && m > 0; ++it) {
    if (!r.allFinite()) break;
    if (r.lpNorm<Eigen::Infinity>() <= tol) break;
    jacobian(J);
    Eigen::MatrixXd Jf(static_cast<Eigen::Index>(m), static_cast<Eigen::Index>(free_q.size()));
    for (size_t k = 0; k < free_q.size(); ++k) Jf.col(k) = J.col(free_q[k]);
    if (free_q.empty()) break;
    Eigen::VectorXd dx = Jf.completeOrthogonalDecomposition().solve(-r);
    // a trust region of 0.5 (rad or m) per iteration: far from a solution the linearisation says
    // little, and an unreachable loop must not send the coordinates to thousands of radians
    if (double big = dx.lpNorm<Eigen::Infinity>(); big > 0.5) dx *= 0.5 / big;
    // damped: accept the first step length that reduces the residual
    std::vector<double> saved(free_q.size());
    for (size_t k = 0; k < free_q.size(); ++k) saved[k] = vals[coords[free_q[k]].q];
    double norm0 = r.norm(), step = 1.0;
    Eigen::VectorXd rn;
    bool better = false;
    for (int ls = 0; ls < 30; ++ls, step *= 0.5) {
      for (size_t k = 0; k < free_q.size(); ++k)
        vals[coords[free_q[k]].q] = saved[k] + step * dx[k];
      residual(rn);
      if (rn.allFinite() && rn.norm() < norm0) {
        better = true;
        break;
      }
    }
    if (!better) {
      for (size_t k = 0; k < free_q.size(); ++k) vals[coords[free_q[k]].q] = saved[k];
      break;
    }
    r = rn;
  }
  if (m > 0 && !(r.allFinite() && r.lpNorm<Eigen::Infinity>() <= 1e-10)) {
    report_failure(r, "positions");
    return false;
  }

  // ---- velocities: the differentiated constraints, minimum-norm change (unless the compiler's
  // mass-weighted projection does it: CompileOptions::project_start_velocities)
  if (m > 0) jacobian(J);
  if (m > 0 && assemble_velocities) {
    Eigen::VectorXd rd(static_cast<Eigen::Index>(m));
    for (size_t i = 0; i < m; ++i) rd[i] = sym::evaluate(rate[i], vals);
    if (rd.lpNorm<Eigen::Infinity>() > tol && !free_v.empty()) {
      Eigen::MatrixXd Jf(static_cast<Eigen::Index>(m), static_cast<Eigen::Index>(free_v.size()));
      for (size_t k = 0; k < free_v.size(); ++k) Jf.col(k) = J.col(free_v[k]);
      Eigen::VectorXd dv = Jf.completeOrthogonalDecomposition().solve(-rd);
      for (size_t k = 0; k < free_v.size(); ++k) vals[coords[free_v[k]].dq] += dv[k];
      for (size_t i = 0; i < m; ++i) rd[i] = sym::evaluate(rate[i], vals);
    }
    if (!(rd.allFinite() && rd.lpNorm<Eigen::Infinity>() <= 1e-9)) {
      report_failure(rd, "velocities");
      return false;
    }
  }

  // ---- rank test: keep a row when it is independent of the rows kept before it
  if (m > 0) {
    double scale = 0;
    for (Eigen::Index i = 0; i < J.rows(); ++i) scale = std::max(scale, J.row(i).norm());
    const double rank_tol = 1e-9 * std::max(1.0, scale);
    std::vector<Eigen::VectorXd> basis;
    std::map<std::string, std::vector<const ClosureRow*>> removed;
    std::map<std::string, int> total;
    std::map<std::string, Span> span_of;
    for (size_t i = 0; i < m; ++i) {
      Eigen::VectorXd v = J.row(static_cast<Eigen::Index>(i)).transpose();
      for (int pass = 0; pass < 2; ++pass)
        for (const auto& b : basis) v -= b.dot(v) * b;
      const ClosureRow* row = all[i];
      bool loop_row = !row->user && row->quaternion_of < 0;
      if (loop_row) ++total[row->joint];
      if (v.norm() > rank_tol) {
        basis.push_back(v / v.norm());
        continue;
      }
      if (!loop_row) continue;  // mandatory rows stay; the DAE pass reports a singular system
      keep[static_cast<size_t>(row - rows.data())] = false;
      removed[row->joint].push_back(row);
      span_of[row->joint] = row->span;
    }
    if (!remove_redundant) {  // inverse dynamics: all rows stay, the analysis finds the nullspace
      keep.assign(rows.size(), true);
      removed.clear();
    }
    // A loop that moves in a plane always has the same three redundant rows: the force normal
    // to the plane and the torques about two axes in it. Removing them is what a planar loop
    // needs, not a sign of a mistake: a note (shown with -v), where other redundancy warns.
    const auto direction = [&](const V3& d) {
      Eigen::Vector3d x;
      for (int k = 0; k < 3; ++k)
        x[k] = d[static_cast<size_t>(k)] ? sym::evaluate(d[static_cast<size_t>(k)], vals) : 0.0;
      return x;
    };
    const auto planar = [&](const std::vector<const ClosureRow*>& removed_rows) {
      if (removed_rows.size() != 3) return false;
      std::vector<Eigen::Vector3d> forces, torques;
      for (const ClosureRow* row : removed_rows) {
        const Eigen::Vector3d f = direction(row->force), t = direction(row->torque);
        if (f.norm() > 1e-12)
          forces.push_back(f.normalized());
        else if (t.norm() > 1e-12)
          torques.push_back(t.normalized());
      }
      return forces.size() == 1 && torques.size() == 2 &&
             std::fabs(forces[0].dot(torques[0])) < 1e-9 &&
             std::fabs(forces[0].dot(torques[1])) < 1e-9;
    };
    for (const auto& [joint, rows_removed] : removed) {
      std::string list;
      for (const ClosureRow* row : rows_removed) list += (list.empty() ? "" : ", ") + row->what;
      if (planar(rows_removed))
        diags.report(DiagKind::mech_planar_loop, span_of[joint],
                     {joint, std::to_string(total[joint]), list});
      else
        diags.report(
            DiagKind::mech_redundant, span_of[joint],
            {std::to_string(rows_removed.size()), std::to_string(total[joint]), joint, list});
    }
  }

  // ---- write the assembled start values back
  for (const auto& c : coords) {
    flat.vars[c.var].start = cx.num(vals[c.q]);
    flat.vars[c.vel_var].start = cx.num(vals[c.dq]);
  }
  return true;
}

}  // namespace mbs::mech
