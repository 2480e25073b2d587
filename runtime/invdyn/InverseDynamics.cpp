#include "runtime/invdyn/InverseDynamics.h"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <Eigen/SparseCore>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "runtime/invdyn/Modules.h"
#include "runtime/io/InputFile.h"
#include "runtime/io/Interrupt.h"
#include "runtime/io/ResultWriter.h"

namespace mbs::rt {

namespace {

using Eigen::Index;
using Eigen::MatrixXd;
using Eigen::VectorXd;
using SparseRows = Eigen::SparseMatrix<double, Eigen::RowMajor>;

double inf_norm(const std::vector<double>& x) {
  double m = 0;
  for (double v : x) m = std::max(m, std::isfinite(v) ? std::fabs(v) : INFINITY);
  return m;
}

}  // namespace

InverseDynamics::InverseDynamics(std::shared_ptr<const CompiledModel> model,
                                 const InverseDynamicsOptions& o)
    : keep_(std::move(model)), m_(*keep_), o_(o), ck_(m_) {
  v_ = o.start.empty() ? m_.v0 : o.start;
  if (v_.size() != m_.v0.size())
    throw std::invalid_argument("inverse dynamics: the start vector has the wrong size");
  auto eq_role = [&](int32_t i) {
    return m_.eq_role.empty() ? EquationRole::Model : m_.eq_role[static_cast<size_t>(i)];
  };
  auto output_role = [&](size_t c) {
    return m_.output_role.empty() ? OutputRole::Variable : m_.output_role[c];
  };
  // the balance: the equations of motion the multibody lowering wrote (one per tree
  // coordinate, with or without inertia)
  for (int32_t i = 0; i < m_.n_eq(); ++i)
    if (eq_role(i) == EquationRole::Motion) dyn_rows_.push_back(i);
  // requested outputs: every unknown of the balance (efforts of the active joints, multipliers),
  // then every joint-wrench component the model outputs
  for (int32_t j = 0; j < m_.n_z; ++j)
    outputs_.push_back({m_.z[static_cast<size_t>(j)].name, j, -1});
  for (size_t c = 0; c < m_.output_names.size(); ++c)
    if (output_role(c) == OutputRole::JointWrench)
      outputs_.push_back({m_.output_names[c], -1, static_cast<int32_t>(c)});
  // and the outputs the user chose in the model: CutForceTorque sensors (wrenches even where they
  // depend on the motion alone) and every other model variable that depends on those unknowns (a
  // power P = tau*w, ...)
  {
    std::vector<uint8_t> depends(m_.output_names.size(), 0);
    for (int32_t e = 0; e < m_.outputs_z.nnz(); ++e)
      depends[static_cast<size_t>(m_.outputs_z.row[static_cast<size_t>(e)])] = 1;
    for (size_t c = 0; c < m_.output_names.size(); ++c) {
      const OutputRole role = output_role(c);
      if (role != OutputRole::SensorWrench && !(depends[c] && role == OutputRole::Variable))
        continue;
      // an unknown of the balance is also a model variable (pivot.tau): listed once
      const std::string& name = m_.output_names[c];
      bool listed = std::any_of(outputs_.begin(), outputs_.end(),
                                [&](const InverseOutput& out) { return out.name == name; });
      if (!listed) outputs_.push_back({name, -1, static_cast<int32_t>(c)});
    }
  }
  row_of_.assign(static_cast<size_t>(m_.n_eq()), -1);
  for (size_t i = 0; i < dyn_rows_.size(); ++i)
    row_of_[static_cast<size_t>(dyn_rows_[i])] = static_cast<int32_t>(i);
  any_column_ = std::any_of(outputs_.begin(), outputs_.end(),
                            [](const InverseOutput& out) { return out.column >= 0; });
  // coordinates driven by a trajectory: rows q = <q>_trajectory of role Trajectory
  for (int32_t r = 0; r < ck_.n_rows(); ++r) {
    const int32_t eq = ck_.rows()[static_cast<size_t>(r)];
    if (eq_role(eq) != EquationRole::Trajectory) continue;
    const std::string& name = m_.eq_subject[static_cast<size_t>(eq)];  // the file's column
    const int32_t slot = m_.eq_param_slot[static_cast<size_t>(eq)];
    driven_.push_back({r, slot, -1});
    if (o_.trajectory.empty())
      throw std::runtime_error("the prescribed coordinate '" + name +
                               "' has no equation: give its motion by an equation of time in the "
                               "model or in a trajectory file (--trajectory)");
    if (!trajectory_) trajectory_ = std::make_unique<Trajectory>(o_.trajectory);
    driven_.back().column = trajectory_->index(name);
    if (driven_.back().column < 0)
      throw std::runtime_error("the trajectory file '" + o_.trajectory + "' has no column '" +
                               name + "' for the prescribed coordinate of that name");
  }
  if (!o_.trajectory.empty()) {
    if (!trajectory_)
      throw std::runtime_error(
          "--trajectory: the model has no prescribed coordinate without an equation (mark the "
          "active joints prescribed = true and leave their motion to the file)");
    for (const std::string& n : trajectory_->names()) {
      bool used = std::any_of(driven_.begin(), driven_.end(), [&](const Driven& d) {
        return trajectory_->names()[static_cast<size_t>(d.column)] == n;
      });
      if (!used)
        throw std::runtime_error(
            "the trajectory file's column '" + n +
            "' is not a prescribed coordinate without an equation of the model");
    }
  }
  // the residuals of the redundant closure rows (position, velocity, acceleration forms)
  for (size_t c = 0; c < m_.output_names.size(); ++c) {
    const OutputRole role = output_role(c);
    const int8_t level = role == OutputRole::ClosureCheck               ? 0
                         : role == OutputRole::ClosureCheckVelocity     ? 1
                         : role == OutputRole::ClosureCheckAcceleration ? 2
                                                                        : -1;
    if (level < 0) continue;
    check_columns_.push_back(static_cast<int32_t>(c));
    check_level_.push_back(level);
  }
  if (m_.outputs_z.values.fn == nullptr)
    throw std::runtime_error(
        "the model was not compiled for inverse dynamics "
        "(mbs::CompileOptions::inverse_dynamics)");
  if (!o_.logged.empty()) load_logged(o_.logged);
  crow_.assign(m_.output_names.size(), -1);
  for (const auto& out : outputs_)
    if (out.column >= 0 && crow_[static_cast<size_t>(out.column)] < 0)
      crow_[static_cast<size_t>(out.column)] = static_cast<int32_t>(n_crows_++);
  oz_.resize(static_cast<size_t>(m_.outputs_z.nnz()));
  // the body-wise balance: its unknowns are [z | reaction coordinates of the tree joints], and
  // the joint wrenches come from its own kernel (body_wrench) in those unknowns
  body_ = o_.balance == BalanceForm::Bodies;
  served_.assign(static_cast<size_t>(n_crows_), -1);
  if (body_) {
    if (m_.body_rows.fn == nullptr || m_.body_rows_u.values.fn == nullptr ||
        m_.body_wrench.fn == nullptr || m_.body_wrench_u.values.fn == nullptr)
      throw std::runtime_error(
          "the model has no body-wise balance (it has no mechanism, or it was not compiled for "
          "inverse dynamics)");
    for (size_t w = 0; w < m_.body_wrench_names.size(); ++w)
      for (size_t c = 0; c < m_.output_names.size(); ++c)
        if (crow_[c] >= 0 && m_.output_names[c] == m_.body_wrench_names[w])
          served_[static_cast<size_t>(crow_[c])] = static_cast<int32_t>(w);
    brow_.resize(static_cast<size_t>(m_.body_rows.n_out));
    bru_.resize(static_cast<size_t>(m_.body_rows_u.nnz()));
    bw_.resize(static_cast<size_t>(m_.body_wrench.n_out));
    bwu_.resize(static_cast<size_t>(m_.body_wrench_u.nnz()));
  }
  const int32_t n_unknowns =
      body_ ? m_.n_z + static_cast<int32_t>(m_.body_reaction_names.size()) : m_.n_z;
  auto is_served = [&](int32_t r) { return served_[static_cast<size_t>(r)] >= 0; };
  // the pattern of C_: the entries of outputs_z in the rows asked for (and, in the body-wise
  // form, the entries of body_wrench_u in the rows of the joint wrenches)
  std::vector<int32_t> wrench_crow(m_.body_wrench_names.size(), -1);
  for (int32_t r = 0; r < static_cast<int32_t>(served_.size()); ++r)
    if (served_[static_cast<size_t>(r)] >= 0) wrench_crow[static_cast<size_t>(served_[r])] = r;
  {
    std::vector<Eigen::Triplet<double>> pattern;
    for (int32_t e = 0; e < m_.outputs_z.nnz(); ++e) {
      int32_t r = crow_[static_cast<size_t>(m_.outputs_z.row[static_cast<size_t>(e)])];
      if (r >= 0 && !is_served(r))
        pattern.emplace_back(r, m_.outputs_z.col[static_cast<size_t>(e)], 1.0);
    }
    if (body_)
      for (int32_t e = 0; e < m_.body_wrench_u.nnz(); ++e) {
        int32_t r = wrench_crow[static_cast<size_t>(m_.body_wrench_u.row[static_cast<size_t>(e)])];
        if (r >= 0) pattern.emplace_back(r, m_.body_wrench_u.col[static_cast<size_t>(e)], 1.0);
      }
    C_.resize(n_crows_, n_unknowns);
    C_.setFromTriplets(pattern.begin(), pattern.end());
    C_.makeCompressed();
    auto position = [&](int32_t r, int32_t col) {
      for (auto k = C_.outerIndexPtr()[r]; k < C_.outerIndexPtr()[r + 1]; ++k)
        if (C_.innerIndexPtr()[k] == col) return static_cast<int32_t>(k);
      return -1;
    };
    bpos_.assign(body_ ? static_cast<size_t>(m_.body_wrench_u.nnz()) : 0, -1);
    for (size_t e = 0; e < bpos_.size(); ++e) {
      int32_t r = wrench_crow[static_cast<size_t>(m_.body_wrench_u.row[e])];
      if (r >= 0) bpos_[e] = position(r, m_.body_wrench_u.col[e]);
    }
    cpos_.assign(static_cast<size_t>(m_.outputs_z.nnz()), -1);
    for (int32_t e = 0; e < m_.outputs_z.nnz(); ++e) {
      int32_t r = crow_[static_cast<size_t>(m_.outputs_z.row[static_cast<size_t>(e)])];
      if (r < 0 || is_served(r)) continue;
      for (auto k = C_.outerIndexPtr()[r]; k < C_.outerIndexPtr()[r + 1]; ++k)
        if (C_.innerIndexPtr()[k] == m_.outputs_z.col[static_cast<size_t>(e)])
          cpos_[static_cast<size_t>(e)] = static_cast<int32_t>(k);
    }
  }
  // the model's inverse_balance kernel (F, jac_z and the outputs read here, in one evaluation)
  // when it has every output column needed; otherwise residual, jac_z, outputs and outputs_z
  if (m_.inverse_balance.fn != nullptr) {
    std::vector<int32_t> position(m_.output_names.size(), -1);
    for (size_t i = 0; i < m_.inverse_output_columns.size(); ++i)
      position[static_cast<size_t>(m_.inverse_output_columns[i])] = static_cast<int32_t>(i);
    bool covered = std::all_of(check_columns_.begin(), check_columns_.end(),
                               [&](int32_t c) { return position[static_cast<size_t>(c)] >= 0; });
    for (size_t c = 0; c < crow_.size(); ++c)
      covered = covered && (crow_[c] < 0 || position[c] >= 0);
    ibpos_.assign(m_.inverse_outputs_z_row.size(), -1);
    for (size_t e = 0; covered && e < ibpos_.size(); ++e) {
      const int32_t column =
          m_.inverse_output_columns[static_cast<size_t>(m_.inverse_outputs_z_row[e])];
      const int32_t r = crow_[static_cast<size_t>(column)];
      if (r < 0 || is_served(r)) continue;
      for (auto k = C_.outerIndexPtr()[r]; k < C_.outerIndexPtr()[r + 1]; ++k)
        if (C_.innerIndexPtr()[k] == m_.inverse_outputs_z_col[e])
          ibpos_[e] = static_cast<int32_t>(k);
      covered = ibpos_[e] >= 0;
    }
    if (covered) {
      ib_.resize(static_cast<size_t>(m_.inverse_balance.n_out));
      ib_outputs_ = static_cast<size_t>(m_.n_eq()) + static_cast<size_t>(m_.jac_z.nnz());
      ib_outputs_z_ = ib_outputs_ + m_.inverse_output_columns.size();
      combined_ = ib_.size() == ib_outputs_z_ + ibpos_.size();
    }
  }
  g_.resize(static_cast<size_t>(ck_.n_rows()));
  G_.resize(static_cast<size_t>(ck_.n_rows()) * static_cast<size_t>(m_.n_q));
  f_.resize(static_cast<size_t>(m_.n_eq()));
  jz_.resize(static_cast<size_t>(m_.jac_z.nnz()));
  outv_.resize(m_.output_names.size());
  gd_.resize(g_.size());
  gam_.resize(g_.size());
  rhs_.resize(m_.n_q);
  qd_.resize(m_.n_q);
  qdd_.resize(m_.n_q);
}

// n_q independent rows of G at the start, in row order (Gram-Schmidt with re-orthogonalisation).
bool InverseDynamics::select_rows() {
  const int32_t n = m_.n_q, r = ck_.n_rows();
  ck_.jacobian(v_.data(), G_);
  double scale = 0;
  for (double x : G_) scale = std::max(scale, std::fabs(x));
  std::vector<VectorXd> basis;
  for (int32_t i = 0; i < r && static_cast<int32_t>(basis.size()) < n; ++i) {
    VectorXd row(n);
    for (int32_t j = 0; j < n; ++j) row[j] = G_[static_cast<size_t>(i * n + j)];
    VectorXd w = row;
    for (int pass = 0; pass < 2; ++pass)
      for (const auto& b : basis) w -= b.dot(w) * b;
    if (w.norm() <= 1e-9 * std::max(1.0, scale)) continue;
    basis.push_back(w / w.norm());
    selected_.push_back(i);
  }
  if (static_cast<int32_t>(selected_.size()) < n) {
    message_ = fmt::format(
        "the prescribed motion and the closure constraints determine only {} of the {} joint "
        "coordinates at t = {}: give the motion of more joints (prescribed = true and an "
        "equation for the coordinate)",
        selected_.size(), n, v_[static_cast<size_t>(m_.slot_time)]);
    return false;
  }
  return true;
}

// The selected rows fall apart into closed-chain modules (Modules.h): their coordinates, rows
// and an LU each, solved independently.
void InverseDynamics::make_modules() {
  const auto all = ck_.row_columns();
  std::vector<std::vector<int32_t>> columns;
  std::vector<std::string> joint, text;
  for (int32_t r : selected_) {
    const auto eq = static_cast<size_t>(ck_.rows()[static_cast<size_t>(r)]);
    columns.push_back(all[static_cast<size_t>(r)]);
    const bool closure = !m_.eq_role.empty() && m_.eq_role[eq] == EquationRole::Closure;
    joint.push_back(closure ? m_.eq_subject[eq] : std::string());
    text.push_back(m_.eq_source[eq].text);
  }
  modules_.clear();
  for (auto& found : find_modules(columns, joint, text, m_.n_q)) {
    Module mod;
    mod.rows = std::move(found.rows);
    mod.coords = std::move(found.coords);
    mod.name = std::move(found.name);
    const auto n = static_cast<Index>(mod.rows.size());
    mod.G.resize(n, n);
    mod.g.resize(n);
    mod.x.resize(n);
    modules_.push_back(std::move(mod));
  }
}

// x = G_sel^-1 r (r over the selected rows, x over the coordinates) by forward substitution over
// the modules: each module's block solves for its coordinates, the earlier modules' coordinates
// entering through G's off-diagonal blocks (G_ and the modules' LUs at the same q).
void InverseDynamics::solve_modules(const VectorXd& r, VectorXd& x) {
  const auto n = static_cast<size_t>(m_.n_q);
  x.setZero(m_.n_q);
  for (Module& mod : modules_) {
    const auto nm = static_cast<Index>(mod.rows.size());
    for (Index k = 0; k < nm; ++k) {
      const auto sel = static_cast<size_t>(mod.rows[static_cast<size_t>(k)]);
      const double* Grow = &G_[static_cast<size_t>(selected_[sel]) * n];
      double coupling = 0;  // the module's own coordinates are still 0 in x
      for (size_t j = 0; j < n; ++j) coupling += Grow[j] * x[static_cast<Index>(j)];
      mod.g[k] = r[static_cast<Index>(sel)] - coupling;
    }
    mod.x.noalias() = mod.lu.solve(mod.g);
    for (Index k = 0; k < nm; ++k) x[mod.coords[static_cast<size_t>(k)]] = mod.x[k];
  }
}

bool InverseDynamics::solve_positions(double t) {
  const int32_t n = m_.n_q;
  VectorXd& gs = gs_;
  gs.resize(n);
  double worst = INFINITY;
  const Module* worst_module = modules_.empty() ? nullptr : &modules_.front();
  for (int it = 0; it <= o_.newton_max_iter; ++it) {
    ck_.position(v_.data(), g_);
    ck_.jacobian(v_.data(), G_);
    for (int32_t k = 0; k < n; ++k)
      gs[k] = g_[static_cast<size_t>(selected_[static_cast<size_t>(k)])];
    // per module: its residual, and its block of G factored (singular: a stop naming it)
    worst = 0;
    for (Module& mod : modules_) {
      const auto nm = static_cast<Index>(mod.rows.size());
      double res = 0;
      for (Index k = 0; k < nm; ++k) {
        const double gk = gs[mod.rows[static_cast<size_t>(k)]];
        res = std::isfinite(gk) ? std::max(res, std::fabs(gk)) : INFINITY;
        const auto row = static_cast<size_t>(selected_[static_cast<size_t>(mod.rows[k])]);
        for (Index j = 0; j < nm; ++j)
          mod.G(k, j) = G_[row * static_cast<size_t>(n) +
                           static_cast<size_t>(mod.coords[static_cast<size_t>(j)])];
      }
      if (!(res <= worst)) {
        worst = res;
        worst_module = &mod;
      }
      mod.lu.compute(mod.G);
      if (mod.lu.rcond() >= o_.rcond_min) continue;
      // name the rows that the near-null left singular vector involves
      Eigen::JacobiSVD<MatrixXd> sv(mod.G, Eigen::ComputeFullU);
      VectorXd u = sv.matrixU().col(nm - 1);
      std::string rows;
      for (Index k = 0; k < nm; ++k) {
        if (std::fabs(u[k]) < 0.1) continue;
        const auto& src = m_.eq_source[static_cast<size_t>(ck_.rows()[static_cast<size_t>(
            selected_[static_cast<size_t>(mod.rows[static_cast<size_t>(k)])])])];
        rows += fmt::format("\n  {} ({}:{})", src.text, src.file, src.line);
      }
      message_ = fmt::format(
          "singular configuration at t = {} in the module of {}: its constraint rows lose rank "
          "(reciprocal condition {:.3g}); the mechanism passes a singular position or the "
          "branch is lost. The rows that become dependent:{}",
          t, mod.name, mod.lu.rcond(), rows);
      return false;
    }
    if (!std::isfinite(worst)) break;
    if (worst <= o_.newton_tol) {  // G_, g_ and the modules' LUs are at q
      return true;
    }
    // the Newton step of all modules at once (their Jacobian is block triangular): -dq
    VectorXd& dq = dq_;
    solve_modules(gs, dq);
    for (int32_t j = 0; j < n; ++j)
      v_[static_cast<size_t>(m_.q_slot[static_cast<size_t>(j)])] -= dq[j];
  }
  message_ = fmt::format(
      "the motion cannot be reconstructed at t = {}: Newton on the closure equations of the "
      "module of {} did not converge (residual {:.3g}); the prescribed motion may leave the "
      "mechanism's workspace",
      t, worst_module ? worst_module->name : std::string("?"), worst);
  return false;
}

void InverseDynamics::load_logged(const std::string& path) {
  std::istringstream in(read_input_file_or_throw(path, kDataFileLimit, "file of logged loads"));
  std::string line;
  if (!std::getline(in, line)) throw std::runtime_error("the file '" + path + "' is empty");
  auto header = split_csv_line(line);
  if (header.empty() || header[0] != "time")
    throw std::runtime_error(path + ":1: the first column must be 'time'");
  for (size_t k = 1; k < header.size(); ++k) {
    int32_t found = -1;
    for (size_t i = 0; i < outputs_.size(); ++i)
      if (outputs_[i].name == header[k]) found = static_cast<int32_t>(i);
    if (found < 0)
      throw std::runtime_error(fmt::format(
          "{}:1: column '{}' is not an output of the inverse dynamics (an actuator effort, a "
          "multiplier or a <joint>.reaction_f[k] / reaction_t[k] component)",
          path, header[k]));
    log_output_.push_back(found);
  }
  log_values_.assign(log_output_.size(), {});
  size_t lineno = 1;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line == "\r") continue;
    auto f = split_csv_line(line);
    if (f.size() != header.size())
      throw std::runtime_error(fmt::format("{}:{}: {} fields, the header has {}", path, lineno,
                                           f.size(), header.size()));
    std::vector<double> x(f.size());
    for (size_t k = 0; k < f.size(); ++k) {
      char* end = nullptr;
      x[k] = std::strtod(f[k].c_str(), &end);
      if (f[k].empty() || *end != '\0' || !std::isfinite(x[k]))
        throw std::runtime_error(fmt::format("{}:{}: '{}' in column '{}' is not a finite number",
                                             path, lineno, f[k], header[k]));
    }
    if (!log_t_.empty() && !(x[0] > log_t_.back()))
      throw std::runtime_error(fmt::format("{}:{}: times must increase", path, lineno));
    log_t_.push_back(x[0]);
    for (size_t k = 1; k < x.size(); ++k) log_values_[k - 1].push_back(x[k]);
  }
  if (log_t_.empty()) throw std::runtime_error("the file '" + path + "' has no samples");
  // joints whose whole torque (revolute: tau) or force (prismatic: f) vector is logged, with their
  // axis n (the parameter <joint>.n, frame_a like the reaction outputs)
  auto logged_index = [&](const std::string& name) {
    for (size_t i = 0; i < log_output_.size(); ++i)
      if (outputs_[static_cast<size_t>(log_output_[i])].name == name) return static_cast<int>(i);
    return -1;
  };
  auto parameter = [&](const std::string& name, double& value) {
    for (size_t p = 0; p < m_.parameters.size(); ++p)
      if (m_.parameters[p].name == name) {
        value = m_.v0[static_cast<size_t>(m_.parameter_slot[p])];
        return true;
      }
    return false;
  };
  std::vector<std::string> joints;
  for (int32_t i : log_output_) {
    const std::string& n = outputs_[static_cast<size_t>(i)].name;
    auto p = n.find(".reaction_");
    if (p != std::string::npos) joints.push_back(n.substr(0, p));
  }
  std::sort(joints.begin(), joints.end());
  joints.erase(std::unique(joints.begin(), joints.end()), joints.end());
  for (const std::string& j : joints) {
    for (const char* kind : {"t", "f"}) {
      AxisCheck a;
      bool ok = true;
      double len = 0;
      for (int i = 0; i < 3; ++i) {
        a.log[i] = logged_index(fmt::format("{}.reaction_{}[{}]", j, kind, i + 1));
        ok &= a.log[i] >= 0 && parameter(fmt::format("{}.n[{}]", j, i + 1), a.n[i]);
        len += a.n[i] * a.n[i];
      }
      // the effort of a revolute is tau (a torque), of a prismatic f (a force)
      std::string effort = j + (kind[0] == 't' ? ".tau" : ".f");
      bool has_effort = std::any_of(m_.output_names.begin(), m_.output_names.end(),
                                    [&](const std::string& o) { return o == effort; });
      if (!ok || !has_effort || !(len > 0)) continue;
      for (double& x : a.n) x /= std::sqrt(len);
      a.active =
          std::any_of(m_.z.begin(), m_.z.end(), [&](const Unknown& u) { return u.name == effort; });
      a.effort_log = logged_index(effort);
      axis_checks_.push_back(a);
    }
  }
}

// The logged loads y against the balance: with y = C z + d for the logged outputs,
//   z* = argmin |C z + d - y|            (the ideal-joint loads closest to the log)
//   admissibility = |C z* + d - y|       (what no ideal joint can transmit)
//   balance = |R (A z* - b)|             (scaled: how far those loads are from the balance)
//   distance = min |C z + d - y| over the solutions of A z = b (the admissible family)
void InverseDynamics::compare_logged(double t, InverseSample& s) {
  const Index L = static_cast<Index>(log_output_.size()), nz = A_.cols();
  VectorXd y(L), d(L);
  MatrixXd C = MatrixXd::Zero(L, nz);
  // linear interpolation of the log at t (exact at its own times)
  size_t k =
      static_cast<size_t>(std::upper_bound(log_t_.begin(), log_t_.end(), t) - log_t_.begin());
  size_t k0 = k == 0 ? 0 : k - 1, k1 = std::min(k, log_t_.size() - 1);
  double w1 = k1 == k0 ? 0.0 : (t - log_t_[k0]) / (log_t_[k1] - log_t_[k0]);
  for (Index i = 0; i < L; ++i) {
    const auto& col = log_values_[static_cast<size_t>(i)];
    y[i] = (1 - w1) * col[k0] + w1 * col[k1];
    const InverseOutput& o = outputs_[static_cast<size_t>(log_output_[static_cast<size_t>(i)])];
    if (o.z >= 0) {
      C(i, o.z) = 1.0;
      d[i] = 0.0;
    } else {
      for (SparseRows::InnerIterator it(C_, crow_[static_cast<size_t>(o.column)]); it; ++it)
        C(i, it.index()) = it.value();
      d[i] = out0_[crow_[static_cast<size_t>(o.column)]];
    }
  }
  VectorXd target = y - d;
  VectorXd zs = C.completeOrthogonalDecomposition().solve(target);
  s.logged_admissibility = (C * zs - target).lpNorm<Eigen::Infinity>();
  // an ideal revolute (prismatic) joint transmits no torque about (force along) its axis beyond
  // its effort: a passive joint none, an active one its effort (free unless it is logged)
  for (const AxisCheck& a : axis_checks_) {
    double along = 0;
    for (int i = 0; i < 3; ++i) along += a.n[i] * y[a.log[i]];
    double allowed = a.effort_log >= 0 ? y[a.effort_log] : 0.0;
    if (a.active && a.effort_log < 0) continue;
    s.logged_admissibility = std::max(s.logged_admissibility, std::fabs(along - allowed));
  }
  double bal = 0;
  for (Index i = 0; i < static_cast<Index>(rows_.size()); ++i) {
    double r = A_.row(rows_[i]).dot(zs) - b_[rows_[i]];
    bal = std::max(bal, std::fabs(rs_[i] * r));
  }
  s.logged_balance = bal;
  // the admissible family z = zp + N w: zp the minimum-norm solution, N the nullspace (scaled
  // back), including every unknown no equation sees
  VectorXd zp = VectorXd::Zero(nz);
  for (size_t j = 0; j < cols_.size(); ++j)
    zp[cols_[j]] = cs_[cols_[j]] * x_[static_cast<Index>(j)];
  const Index na = static_cast<Index>(cols_.size());
  const Index nn = (na - s.rank) + (nz - na);
  MatrixXd N = MatrixXd::Zero(nz, nn);
  Index c = 0;
  for (Index kk = s.rank; kk < na; ++kk, ++c)
    for (Index j = 0; j < na; ++j) N(cols_[j], c) = cs_[cols_[j]] * Vn_(j, kk - s.rank);
  for (int32_t z = 0; z < nz; ++z)
    if (col_of_z_[static_cast<size_t>(z)] < 0) N(z, c++) = 1.0;
  VectorXd rest = target - C * zp;
  if (nn > 0) {
    MatrixXd CN = C * N;
    VectorXd w = CN.completeOrthogonalDecomposition().solve(rest);
    rest -= CN * w;
  }
  s.logged_distance = rest.lpNorm<Eigen::Infinity>();
  (void)t;
}

void InverseDynamics::patch_velocity(std::vector<double>& gd) const {
  for (const Driven& d : driven_) gd[static_cast<size_t>(d.row)] -= d.qd;  // q' - q_traj'
}

void InverseDynamics::patch_bias(std::vector<double>& gam) const {
  for (const Driven& d : driven_) gam[static_cast<size_t>(d.row)] -= d.qdd;  // 0 - q_traj''
}

bool InverseDynamics::sample(double t, InverseSample& s) {
  if (!reconstruct_motion(t, s)) return false;
  build_balance();
  analyse_balance(s);
  if (!log_t_.empty()) compare_logged(t, s);
  // accept the sample
  const int32_t n = m_.n_q;
  s.t = t;
  s.q.resize(static_cast<size_t>(n));
  s.qd.resize(static_cast<size_t>(n));
  s.qdd.resize(static_cast<size_t>(n));
  for (int32_t j = 0; j < n; ++j) {
    s.q[j] = v_[static_cast<size_t>(m_.q_slot[j])];
    s.qd[j] = qd_[j];
    s.qdd[j] = qdd_[j];
  }
  prev_q_ = s.q;
  prev_qd_ = s.qd;
  prev_qdd_ = s.qdd;
  prev_t_ = t;
  started_ = true;
  return true;
}

bool InverseDynamics::reconstruct_motion(double t, InverseSample& s) {
  const int32_t n = m_.n_q;
  const auto at = [&](int32_t slot) -> double& { return v_[static_cast<size_t>(slot)]; };
  at(m_.slot_time) = t;
  if (trajectory_) {
    if (t < trajectory_->t_first() - 1e-12 || t > trajectory_->t_last() + 1e-12) {
      message_ = fmt::format("t = {} is outside the trajectory file's times [{}, {}]", t,
                             trajectory_->t_first(), trajectory_->t_last());
      return false;
    }
    double tc = std::clamp(t, trajectory_->t_first(), trajectory_->t_last());
    for (Driven& d : driven_) {
      double q = 0;
      trajectory_->eval(d.column, tc, q, d.qd, d.qdd);
      at(d.slot) = q;
    }
  }
  if (!started_) {
    if (!select_rows()) return false;
    make_modules();
  } else {
    // prediction from the previous accepted sample (second-order Taylor)
    double h = t - prev_t_;
    for (int32_t j = 0; j < n; ++j)
      at(m_.q_slot[j]) = prev_q_[j] + h * prev_qd_[j] + 0.5 * h * h * prev_qdd_[j];
  }
  if (!solve_positions(t)) return false;
  // velocities: G qd = -g_t (the velocity form at qd = 0 is g_t)
  for (int32_t j = 0; j < n; ++j) at(m_.qd_slot[j]) = 0.0;
  std::vector<double>& gd = gd_;
  std::vector<double>& gam = gam_;
  ck_.velocity(v_.data(), gd);
  patch_velocity(gd);
  VectorXd& rhs = rhs_;
  for (int32_t k = 0; k < n; ++k) rhs[k] = -gd[static_cast<size_t>(selected_[k])];
  solve_modules(rhs, qd_);
  for (int32_t j = 0; j < n; ++j) at(m_.qd_slot[j]) = qd_[j];
  // accelerations: G qdd = -gamma
  ck_.bias(v_.data(), gam);
  patch_bias(gam);
  for (int32_t k = 0; k < n; ++k) rhs[k] = -gam[static_cast<size_t>(selected_[k])];
  solve_modules(rhs, qdd_);
  for (int32_t j = 0; j < n; ++j) at(m_.qdd_slot[j]) = qdd_[j];
  // checks on every row: g, dg/dt, d2g/dt2 = G qdd + gamma
  // g_ is g at the solution (solve_positions returns only after evaluating it there, and
  // g(q, t) does not depend on q' or q'')
  ck_.velocity(v_.data(), gd);
  patch_velocity(gd);
  s.closure = inf_norm(g_);
  // the redundant rows, which the compiled model does not solve; the z slots of v_ are 0 here
  // (and in build_balance), so the output values are kept for the offsets out0_
  const int32_t nz = m_.n_z;
  for (int32_t j = 0; j < nz; ++j) at(m_.z_slot[j]) = 0.0;
  eval_at_motion();
  s.velocity = inf_norm(gd);
  s.acceleration = 0;
  for (size_t k = 0; k < check_columns_.size(); ++k) {
    double& worst = check_level_[k] == 0   ? s.closure
                    : check_level_[k] == 1 ? s.velocity
                                           : s.acceleration;
    worst = std::max(worst, std::fabs(outv_[static_cast<size_t>(check_columns_[k])]));
  }
  for (size_t i = 0; i < g_.size(); ++i) {
    double a = gam[i];
    for (int32_t j = 0; j < n; ++j)
      a += G_[i * static_cast<size_t>(n) + static_cast<size_t>(j)] * qdd_[j];
    s.acceleration = std::max(s.acceleration, std::fabs(a));
  }
  const double scale_q = 1.0 + qd_.lpNorm<Eigen::Infinity>() + qdd_.lpNorm<Eigen::Infinity>();
  if (!(s.closure <= o_.check_tol) || !(s.velocity <= o_.check_tol * scale_q) ||
      !(s.acceleration <= o_.check_tol * scale_q * scale_q)) {
    message_ = fmt::format(
        "the reconstructed motion violates the constraints at t = {} (closure {:.3g}, velocity "
        "{:.3g}, acceleration {:.3g}): a constraint row that was dependent at the start is not "
        "any more (the rank of the closure Jacobian changed)",
        t, s.closure, s.velocity, s.acceleration);
    return false;
  }
  return true;
}

void InverseDynamics::eval_at_motion() {
  if (!combined_) {
    if (any_column_ || !check_columns_.empty()) m_.outputs(v_.data(), outv_.data());
    return;
  }
  m_.inverse_balance(v_.data(), ib_.data());
  std::copy(ib_.begin(), ib_.begin() + static_cast<std::ptrdiff_t>(f_.size()), f_.begin());
  std::copy(ib_.begin() + static_cast<std::ptrdiff_t>(f_.size()),
            ib_.begin() + static_cast<std::ptrdiff_t>(ib_outputs_), jz_.begin());
  for (size_t i = 0; i < m_.inverse_output_columns.size(); ++i)
    outv_[static_cast<size_t>(m_.inverse_output_columns[i])] = ib_[ib_outputs_ + i];
}

// The balance A z = b over the equations of motion, and the outputs as out = out0 + C z.
void InverseDynamics::build_balance() {
  const int32_t nz = m_.n_z, nd = static_cast<int32_t>(dyn_rows_.size());
  if (body_) {
    // six rows per body, unknowns [z | reaction coordinates]; the z slots of v_ are 0
    m_.body_rows(v_.data(), brow_.data());
    m_.body_rows_u.values(v_.data(), bru_.data());
    A_.setZero(m_.body_rows_u.rows, m_.body_rows_u.cols);
    b_.resize(m_.body_rows_u.rows);
    for (Index i = 0; i < b_.size(); ++i) b_[i] = -brow_[static_cast<size_t>(i)];
    for (int32_t e = 0; e < m_.body_rows_u.nnz(); ++e)
      A_(m_.body_rows_u.row[static_cast<size_t>(e)], m_.body_rows_u.col[static_cast<size_t>(e)]) =
          bru_[static_cast<size_t>(e)];
  } else {
    if (!combined_) {  // otherwise evaluated with the motion's checks (eval_at_motion)
      m_.residual(v_.data(), f_.data());
      m_.jac_z.values(v_.data(), jz_.data());
    }
    A_.setZero(nd, nz);
    b_.resize(nd);
    for (int32_t i = 0; i < nd; ++i) b_[i] = -f_[static_cast<size_t>(dyn_rows_[i])];
    for (int32_t e = 0; e < m_.jac_z.nnz(); ++e) {
      int32_t r = row_of_[static_cast<size_t>(m_.jac_z.row[static_cast<size_t>(e)])];
      if (r >= 0) A_(r, m_.jac_z.col[static_cast<size_t>(e)]) = jz_[static_cast<size_t>(e)];
    }
  }
  // wrench outputs are linear in the unknowns: out = out(0) + C u, C from the symbolic kernels
  // (the output values at z = 0 were evaluated with the closure checks); rows of C_: crow_
  out0_.resize(n_crows_);
  if (!any_column_) return;
  for (size_t c = 0; c < crow_.size(); ++c)
    if (crow_[c] >= 0) out0_[crow_[c]] = outv_[c];
  double* cv = C_.valuePtr();
  std::fill(cv, cv + C_.nonZeros(), 0.0);
  if (body_) {  // the joint wrenches of the body-wise form
    m_.body_wrench(v_.data(), bw_.data());
    m_.body_wrench_u.values(v_.data(), bwu_.data());
    for (size_t r = 0; r < served_.size(); ++r)
      if (served_[r] >= 0) out0_[static_cast<Index>(r)] = bw_[static_cast<size_t>(served_[r])];
    for (size_t e = 0; e < bpos_.size(); ++e)
      if (bpos_[e] >= 0) cv[bpos_[e]] = bwu_[e];
  }
  if (combined_) {
    for (size_t e = 0; e < ibpos_.size(); ++e)
      if (ibpos_[e] >= 0) cv[ibpos_[e]] = ib_[ib_outputs_z_ + e];
    return;
  }
  m_.outputs_z.values(v_.data(), oz_.data());
  for (size_t e = 0; e < cpos_.size(); ++e)
    if (cpos_[e] >= 0) cv[cpos_[e]] = oz_[e];
}

void InverseDynamics::analyse_balance(InverseSample& s) {
  const Index nz = A_.cols();
  // Entries at rounding level are zeros: a reaction that does no work along any coordinate (an
  // internal wrench pair under a rigid motion) has coefficients of 1e-16 from the symbolic
  // expressions, which scaling must not blow up to O(1). Zero columns (unknowns no equation
  // sees) are in the nullspace by themselves and zero rows constrain nothing; both are left out
  // of the SVD.
  const double amax = A_.lpNorm<Eigen::Infinity>();
  const double zero_tol = 64 * std::numeric_limits<double>::epsilon() * std::max(amax, 1e-300);
  cols_.clear();
  rows_.clear();
  A_ = (A_.array().abs() <= zero_tol).select(0.0, A_);
  for (Index j = 0; j < A_.cols(); ++j)
    if ((A_.col(j).array() != 0.0).any()) cols_.push_back(static_cast<int32_t>(j));
  double free_rows = 0;  // the largest right-hand side of an equation without unknowns
  for (Index i = 0; i < A_.rows(); ++i) {
    if (A_.row(i).lpNorm<Eigen::Infinity>() > 0)
      rows_.push_back(static_cast<int32_t>(i));
    else
      free_rows = std::max(free_rows, std::fabs(b_[i]));
  }
  const Index ma = static_cast<Index>(rows_.size()), na = static_cast<Index>(cols_.size());
  // positive diagonal scaling of equations (rows) and unknowns (columns)
  As_.resize(ma, na);
  for (Index j = 0; j < na; ++j)
    for (Index i = 0; i < ma; ++i) As_(i, j) = A_(rows_[i], cols_[j]);
  rs_.resize(ma);
  cs_.setOnes(nz);
  for (Index i = 0; i < ma; ++i) {
    double mx = As_.row(i).lpNorm<Eigen::Infinity>();
    rs_[i] = 1.0 / mx;
    As_.row(i) *= rs_[i];
  }
  for (Index j = 0; j < na; ++j) {
    double mx = As_.col(j).lpNorm<Eigen::Infinity>();
    cs_[cols_[j]] = 1.0 / mx;
    As_.col(j) *= cs_[cols_[j]];
  }
  bs_.resize(ma);
  for (Index i = 0; i < ma; ++i) bs_[i] = rs_[i] * b_[rows_[i]];
  // The SVD of As block by block: rows and columns that share no nonzero fall into independent
  // blocks (the connected components of the pattern; a mechanism's balance splits into small
  // groups of coupled equations and unknowns). Up to a permutation of rows and columns, which is
  // exact, As is block diagonal, and its full SVD is the union of the blocks' full SVDs: the
  // singular values of all blocks, singular vectors zero outside their block.
  const Index nb_all = ma + na;
  parent_.resize(static_cast<size_t>(nb_all));
  for (Index k = 0; k < nb_all; ++k) parent_[static_cast<size_t>(k)] = static_cast<int32_t>(k);
  auto find = [&](int32_t k) {
    while (parent_[static_cast<size_t>(k)] != k) {
      parent_[static_cast<size_t>(k)] =
          parent_[static_cast<size_t>(parent_[static_cast<size_t>(k)])];
      k = parent_[static_cast<size_t>(k)];
    }
    return k;
  };
  for (Index j = 0; j < na; ++j)
    for (Index i = 0; i < ma; ++i)
      if (As_(i, j) != 0.0) {
        int32_t a = find(static_cast<int32_t>(i)), b = find(static_cast<int32_t>(ma + j));
        if (a != b) parent_[static_cast<size_t>(std::max(a, b))] = std::min(a, b);
      }
  block_of_.assign(static_cast<size_t>(nb_all), -1);
  size_t n_blocks = 0;
  for (auto& r : block_rows_) r.clear();
  for (auto& c : block_cols_) c.clear();
  for (Index k = 0; k < nb_all; ++k) {
    int32_t root = find(static_cast<int32_t>(k));
    int32_t& b = block_of_[static_cast<size_t>(root)];
    if (b < 0) {
      b = static_cast<int32_t>(n_blocks++);
      if (block_rows_.size() < n_blocks) {
        block_rows_.emplace_back();
        block_cols_.emplace_back();
        block_.emplace_back();
      }
    }
    if (k < ma)
      block_rows_[static_cast<size_t>(b)].push_back(static_cast<int32_t>(k));
    else
      block_cols_[static_cast<size_t>(b)].push_back(static_cast<int32_t>(k - ma));
  }
  double smax = 0;
  for (size_t b = 0; b < n_blocks; ++b) {
    const auto& br = block_rows_[b];
    const auto& bc = block_cols_[b];
    Block& blk = block_[b];
    if (br.size() == 1 && bc.size() == 1) {  // [a] = sign(a) |a| 1: what JacobiSVD gives
      const double a = As_(br[0], bc[0]);
      blk.sig1.setConstant(1, std::fabs(a));
      blk.U1.setConstant(1, 1, a < 0 ? -1.0 : 1.0);
      blk.V1.setConstant(1, 1, 1.0);
      blk.sig = &blk.sig1;
      blk.U = &blk.U1;
      blk.V = &blk.V1;
    } else {
      blk.A.resize(static_cast<Index>(br.size()), static_cast<Index>(bc.size()));
      for (Index j = 0; j < blk.A.cols(); ++j)
        for (Index i = 0; i < blk.A.rows(); ++i) blk.A(i, j) = As_(br[i], bc[j]);
      if (blk.A.cols() <= kJacobiMaxCols) {
        blk.svd.compute(blk.A, Eigen::ComputeThinU | Eigen::ComputeFullV);
        blk.sig = &blk.svd.singularValues();
        blk.U = &blk.svd.matrixU();
        blk.V = &blk.svd.matrixV();
      } else {  // a large block (the body-wise balance): divide and conquer
        blk.bdc.compute(blk.A, Eigen::ComputeThinU | Eigen::ComputeFullV);
        blk.sig = &blk.bdc.singularValues();
        blk.U = &blk.bdc.matrixU();
        blk.V = &blk.bdc.matrixV();
      }
    }
    if (blk.sig->size() > 0) smax = std::max(smax, (*blk.sig)[0]);
  }
  auto rank_at = [&](double factor) {
    double tol = factor * (o_.rank_atol + o_.rank_rtol * smax);
    int r = 0;
    for (size_t b = 0; b < n_blocks; ++b) {
      const VectorXd& sig = *block_[b].sig;
      for (Index k = 0; k < sig.size(); ++k) r += sig[k] > tol ? 1 : 0;
    }
    return r;
  };
  s.rank = rank_at(1.0);
  s.nullity = static_cast<int>(nz) - s.rank;
  s.rank_stable = rank_at(10.0) == s.rank && rank_at(0.1) == s.rank;
  const Index rank = s.rank, null_active = na - rank;
  // minimum-norm solution in the scaled active unknowns (rank-r pseudo-inverse), and the
  // nullspace of As (the right singular vectors beyond the rank), one row per active unknown
  const double tol = o_.rank_atol + o_.rank_rtol * smax;
  x_.setZero(na);
  Vn_.setZero(na, null_active);
  Index next_null = 0;
  for (size_t b = 0; b < n_blocks; ++b) {
    const auto& br = block_rows_[b];
    const auto& bc = block_cols_[b];
    const VectorXd& sig = *block_[b].sig;
    const MatrixXd& U = *block_[b].U;
    const MatrixXd& V = *block_[b].V;
    Index rb = 0;
    for (Index k = 0; k < sig.size() && sig[k] > tol; ++k, ++rb) {
      double ub = 0;
      for (Index i = 0; i < U.rows(); ++i) ub += U(i, k) * bs_[br[static_cast<size_t>(i)]];
      ub /= sig[k];
      for (Index j = 0; j < V.rows(); ++j) x_[bc[static_cast<size_t>(j)]] += V(j, k) * ub;
    }
    for (Index k = rb; k < V.cols(); ++k, ++next_null)
      for (Index j = 0; j < V.rows(); ++j) Vn_(bc[static_cast<size_t>(j)], next_null) = V(j, k);
  }
  s.balance = std::max(ma > 0 ? (As_ * x_ - bs_).lpNorm<Eigen::Infinity>() : 0.0,
                       amax > 0 ? free_rows / amax : free_rows);
  // Coefficients at rounding level are zeros, as in A: an internal wrench pair that cancels in
  // a joint's wrench (the out-of-plane reactions of a loop in the ground joint's wrench) leaves
  // 1e-13 behind, which must not make that wrench depend on a free multiplier.
  {
    C_.makeCompressed();  // (no-op when it is)
    Eigen::Map<VectorXd> values(C_.valuePtr(), C_.nonZeros());
    const double ctol = 1e-11 * (values.size() > 0 ? values.lpNorm<Eigen::Infinity>() : 0.0);
    values = (values.array().abs() <= ctol).select(0.0, values);
  }
  const size_t n_out = outputs_.size();
  s.value.assign(n_out, std::numeric_limits<double>::quiet_NaN());
  s.unique.assign(n_out, 0);
  s.dual = 0;
  col_of_z_.assign(static_cast<size_t>(nz), -1);
  for (Index j = 0; j < na; ++j) col_of_z_[static_cast<size_t>(cols_[j])] = static_cast<int32_t>(j);
  // an output is reported only when the rank is stable under a tenfold change of the threshold:
  // a rank that depends on the threshold means a nearly singular balance
  if (!s.rank_stable) return;
  pv_.resize(null_active);
  cj_.resize(static_cast<size_t>(nz));  // at most one entry per unknown (a row of C_)
  cv_.resize(static_cast<size_t>(nz));
  for (size_t k = 0; k < n_out; ++k) {
    const InverseOutput& o = outputs_[k];
    // c over the active unknowns (scaled), as (active column, coefficient) pairs
    size_t nc = 0;
    double offset = 0;
    if (o.z >= 0) {
      if (col_of_z_[static_cast<size_t>(o.z)] < 0) continue;  // seen by no equation: free
      cj_[nc] = col_of_z_[static_cast<size_t>(o.z)];
      cv_[nc++] = cs_[o.z];  // z_j = cs_j x_j
    } else {
      // a dependence on an unknown that no equation sees makes the output free
      double free_dep = 0, all = 0;
      const int32_t cr = crow_[static_cast<size_t>(o.column)];
      for (SparseRows::InnerIterator it(C_, cr); it; ++it) {
        const Index z = it.index();
        const double cz = it.value();
        if (cz == 0.0) continue;
        all = std::max(all, std::fabs(cz));
        if (col_of_z_[static_cast<size_t>(z)] < 0) {
          free_dep = std::max(free_dep, std::fabs(cz));
        } else {
          cj_[nc] = col_of_z_[static_cast<size_t>(z)];
          cv_[nc++] = cz * cs_[z];
        }
      }
      offset = out0_[cr];
      if (free_dep > o_.unique_tol * all) continue;
    }
    double cn2 = 0, value = 0;
    for (size_t e = 0; e < nc; ++e) {
      cn2 += cv_[e] * cv_[e];
      value += cv_[e] * x_[cj_[e]];
    }
    const double cn = std::sqrt(cn2);
    if (cn > 0 && null_active > 0) {
      // |V_null^T c| / |c|
      pv_.setZero();
      for (size_t e = 0; e < nc; ++e) pv_ += cv_[e] * Vn_.row(cj_[e]).transpose();
      double proj = pv_.norm() / cn;
      if (!(proj <= o_.unique_tol)) continue;
      // the dual vector w = pinv(As)^T c solves As^T w = c up to exactly this projection
      s.dual = std::max(s.dual, proj);
    }
    // the value w.b of the dual vector equals c.x for the minimum-norm solution x
    s.value[k] = value + offset;
    s.unique[k] = 1;
  }
}

InverseDynamicsRun inverse_dynamics_to_csv(std::shared_ptr<const CompiledModel> model,
                                           const InverseDynamicsOptions& options,
                                           const std::string& csv_path, ProgressSink* progress) {
  InverseDynamics id(model, options);
  const CompiledModel& m = *model;
  InverseDynamicsRun run;
  std::vector<std::string> names;
  for (const auto& q : m.q) names.push_back(q.name);
  for (const auto& o : id.outputs()) names.push_back(o.name);
  const bool logged = !options.logged.empty();
  if (logged)
    for (const char* n : {"logged.balance", "logged.admissibility", "logged.distance"})
      names.push_back(n);
  run.logged = logged;
  run.names = names;
  run.unique_samples.assign(id.outputs().size(), 0);
  // CSV, or .mat by the extension (the names alone: the columns are the analysis's own)
  ResultColumns columns;
  columns.names = names;
  const auto writer = open_result_writer(csv_path, columns);
  ResultWriter& csv = *writer;
  csv.set_nan_as_empty(true);
  const double t0 = m.v0[static_cast<size_t>(m.slot_time)];
  const int64_t steps = options.times.empty()
                            ? std::max<int64_t>(0, std::llround((options.t_end - t0) / options.h))
                            : static_cast<int64_t>(options.times.size()) - 1;
  std::vector<double> row(names.size());
  InverseSample s;
  auto time_of = [&](int64_t k) {
    return options.times.empty() ? t0 + static_cast<double>(k) * options.h
                                 : options.times[static_cast<size_t>(k)];
  };
  ProgressMeter meter;
  meter.start(progress, "inverse dynamics", "t", time_of(0), time_of(steps));
  meter.set_unit("samples");
  for (int64_t k = 0; k <= steps; ++k) {
    if (interrupt_requested()) {  // Ctrl-C: stop after the last whole sample
      run.interrupted = true;
      break;
    }
    const double t = time_of(k);
    meter.tick(t, k > 0 ? t - time_of(k - 1) : 0.0);
    if (!id.sample(t, s)) {
      run.message = id.message();
      meter.finish();
      csv.close();
      return run;
    }
    size_t c = 0;
    for (double x : s.q) row[c++] = x;
    for (size_t i = 0; i < s.value.size(); ++i) {
      row[c++] = s.value[i];
      run.unique_samples[i] += s.unique[i];
    }
    if (logged) {
      row[c++] = s.logged_balance;
      row[c++] = s.logged_admissibility;
      row[c++] = s.logged_distance;
      run.max_logged_balance = std::max(run.max_logged_balance, s.logged_balance);
      run.max_logged_admissibility = std::max(run.max_logged_admissibility, s.logged_admissibility);
      run.max_logged_distance = std::max(run.max_logged_distance, s.logged_distance);
    }
    csv.write_row(t, row);
    ++run.samples;
    run.max_closure = std::max(run.max_closure, s.closure);
    run.max_velocity = std::max(run.max_velocity, s.velocity);
    run.max_acceleration = std::max(run.max_acceleration, s.acceleration);
    run.max_balance = std::max(run.max_balance, s.balance);
    run.max_dual = std::max(run.max_dual, s.dual);
    run.min_rank = std::min(run.min_rank, s.rank);
    run.max_rank = std::max(run.max_rank, s.rank);
    run.rank_stable = run.rank_stable && s.rank_stable;
  }
  meter.finish();
  csv.close();
  run.ok = !run.interrupted;
  return run;
}

std::string format_inverse_summary(const InverseDynamicsRun& run) {
  std::string out = fmt::format("inverse dynamics: {} samples\n", run.samples);
  if (run.samples == 0) return out;
  std::string always, never, some;
  const size_t first = run.names.size() - run.unique_samples.size() - (run.logged ? 3 : 0);
  for (size_t i = 0; i < run.unique_samples.size(); ++i) {
    const std::string& n = run.names[first + i];
    if (run.unique_samples[i] == run.samples)
      always += "  " + n + "\n";
    else if (run.unique_samples[i] == 0)
      never += "  " + n + "\n";
    else
      some += fmt::format("  {} ({} of {} samples)\n", n, run.unique_samples[i], run.samples);
  }
  if (!always.empty()) out += "determined uniquely in every sample:\n" + always;
  if (!some.empty()) out += "determined in some samples only:\n" + some;
  if (!never.empty()) out += "not determined by the motion (left empty):\n" + never;
  out += fmt::format(
      "largest residuals: closure {:.3g}, velocity {:.3g}, acceleration {:.3g}, scaled balance "
      "{:.3g}, dual {:.3g}\n",
      run.max_closure, run.max_velocity, run.max_acceleration, run.max_balance, run.max_dual);
  if (run.logged)
    out += fmt::format(
        "logged loads: largest scaled balance residual {:.3g}, ideal-joint admissibility "
        "residual {:.3g}, distance to the admissible solutions {:.3g}\n",
        run.max_logged_balance, run.max_logged_admissibility, run.max_logged_distance);
  out += fmt::format("rank of the scaled balance matrix: {}{}{}\n", run.min_rank,
                     run.max_rank != run.min_rank ? fmt::format(" to {}", run.max_rank) : "",
                     run.rank_stable ? " (stable under a tenfold change of the threshold)"
                                     : " (NOT stable under a tenfold change of the threshold)");
  return out;
}

}  // namespace mbs::rt
