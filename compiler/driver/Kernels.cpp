#include "compiler/driver/Kernels.h"

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace mbs {

namespace {

using sym::Expr;

// A column of a Jacobian: a weighted sum of up to three symbols' derivatives, (symbol,
// coefficient) with a null coefficient for the unused terms. Held inline: a matrix's columns are
// made one at a time by a function of the column's index (a vector of them, each with a vector of
// terms, held 29 MB for the kernels of 10^5 equations).
struct Column {
  std::pair<uint32_t, Expr> terms[3];
};

// The rows of a list of functions in which each symbol occurs (compressed by symbol). Built
// once per list: the Newton matrix, the mass matrix and the four Jacobian blocks of F share it.
class Incidence {
 public:
  Incidence(const sym::Context& cx, const std::vector<Expr>& f) : f_(f) {
    std::vector<std::pair<uint32_t, int32_t>> pairs;  // (symbol, row), rows ascending
    for (size_t i = 0; i < f.size(); ++i)
      for (uint32_t s : sym::free_symbols(f[i])) pairs.emplace_back(s, static_cast<int32_t>(i));
    start_.assign(cx.symbol_count() + 1, 0);
    for (const auto& p : pairs) ++start_[p.first + 1];
    for (size_t s = 1; s < start_.size(); ++s) start_[s] += start_[s - 1];
    rows_.resize(pairs.size());
    std::vector<size_t> next(start_.begin(), start_.end() - 1);
    for (const auto& p : pairs) rows_[next[p.first]++] = p.second;
  }
  const std::vector<Expr>& functions() const { return f_; }
  // the rows that contain symbol s, ascending
  std::span<const int32_t> rows(uint32_t s) const {
    if (s + 1 >= start_.size()) return {};
    return {rows_.data() + start_[s], start_[s + 1] - start_[s]};
  }

 private:
  const std::vector<Expr>& f_;
  std::vector<size_t> start_;  // symbol -> first entry in rows_ (symbol_count + 1 entries)
  std::vector<int32_t> rows_;
};

// The memoised derivatives shared by every Jacobian of one build_kernels: the kernels
// differentiate the same residuals by the same symbols several times (dF/dqdd for the Newton,
// mass, index-2 and initial matrices), and a dense M(q) makes each of those passes quadratic in
// the size of a mechanism. One table for all symbols (a Differentiator per symbol held 100 MB
// for a model of 10^5 equations).
using Derivatives = sym::MultiDifferentiator;

// Sparse Jacobian of the functions of `rows` with respect to columns that are weighted sums of
// symbol derivatives.
// `column(j)` is the j-th of n_cols columns.
template <class ColumnAt>
MatrixKernel jacobian(sym::Context& cx, Derivatives& derivative, const char* name,
                      const Incidence& rows, size_t n_cols, ColumnAt&& column) {
  const std::vector<Expr>& f = rows.functions();
  MatrixKernel m;
  m.spec.name = name;
  m.pattern.rows = static_cast<int32_t>(f.size());
  m.pattern.cols = static_cast<int32_t>(n_cols);
  std::vector<Expr> entry(f.size(), nullptr);  // the current column's entries by row
  std::vector<int32_t> nonzero;                // their rows
  for (size_t j = 0; j < n_cols; ++j) {
    nonzero.clear();
    const Column col = column(j);
    for (const auto& [s, coef] : col.terms) {
      if (coef == nullptr) continue;
      for (int32_t i : rows.rows(s)) {
        Expr d = derivative(f[static_cast<size_t>(i)], s);
        if (d->is_const(0.0)) continue;
        Expr term = cx.mul(coef, d);
        Expr& e = entry[static_cast<size_t>(i)];
        if (e == nullptr) {
          e = term;
          nonzero.push_back(i);
        } else {
          e = cx.add(e, term);
        }
      }
    }
    std::sort(nonzero.begin(), nonzero.end());
    for (int32_t i : nonzero) {
      m.pattern.col.push_back(static_cast<int32_t>(j));
      m.pattern.row.push_back(i);
      m.spec.outputs.push_back(entry[static_cast<size_t>(i)]);
      entry[static_cast<size_t>(i)] = nullptr;
    }
  }
  return m;
}

// The equation groups of a matrix's entries: those of their rows (KernelSpec::groups).
void tag_rows(MatrixKernel& m, const std::vector<uint32_t>& row_group) {
  m.spec.groups.resize(m.spec.outputs.size());
  for (size_t e = 0; e < m.pattern.row.size(); ++e)
    m.spec.groups[e] = row_group[static_cast<size_t>(m.pattern.row[e])];
}

}  // namespace

uint32_t VariableGroups::of(const Span& declared, const std::string& name) {
  if (!declared.valid()) return 0;
  key_ = std::to_string(declared.file) + ":" + std::to_string(declared.line) + ":" +
         std::to_string(declared.col) + ":";
  append_without_indices(name, key_);
  return ids_.try_emplace(key_, static_cast<uint32_t>(ids_.size() + 1)).first->second;
}

MatrixKernel symbol_jacobian(sym::Context& cx, const char* name, const std::vector<Expr>& f,
                             const std::vector<uint32_t>& symbols) {
  Derivatives derivative(cx);
  return jacobian(cx, derivative, name, Incidence(cx, f), symbols.size(), [&](size_t j) {
    return Column{{{symbols[j], cx.one()}}};
  });
}

namespace {

// Calls add(a - b) for each relation a < b, a <= b, a > b, a >= b in the condition c.
template <class F>
void relation_crossings(sym::Context& cx, Expr c, F&& add) {
  for (Expr n : sym::topological_order(std::span<const Expr>(&c, 1)))
    if (n->op == sym::Op::Lt || n->op == sym::Op::Le || n->op == sym::Op::Gt ||
        n->op == sym::Op::Ge)
      add(cx.sub(n->arg(0), n->arg(1)));
}

// The condition c with every relation a R b whose crossing function a - b has a side symbol s
// (`side_of`) rewritten to take, where a == b exactly, the value it has on the side s says:
// a < b -> a < b or (a == b and s < 0), a <= b -> a < b or (a == b and s <= 0), a > b ->
// a > b or (a == b and s > 0), a >= b -> a > b or (a == b and s >= 0). With s = 0 each is the
// relation as written; the model-exchange FMU sets s where an indicator reached 0 (docs/fmu.md,
// "Model exchange").
Expr with_zero_sides(sym::Context& cx, Expr c, const std::unordered_map<Expr, Expr>& side_of) {
  if (side_of.empty()) return c;
  std::unordered_map<Expr, Expr> done;
  for (Expr n : sym::topological_order(std::span<const Expr>(&c, 1))) {
    if (n->is_const() || n->is_symbol()) {
      done[n] = n;
      continue;
    }
    std::vector<Expr> args;
    bool changed = false;
    for (Expr a : n->children()) {
      args.push_back(done.at(a));
      changed |= args.back() != a;
    }
    Expr r = changed ? cx.make(n->op, args) : n;
    const bool relation = n->op == sym::Op::Lt || n->op == sym::Op::Le || n->op == sym::Op::Gt ||
                          n->op == sym::Op::Ge;
    if (relation) {
      if (auto it = side_of.find(cx.sub(n->arg(0), n->arg(1))); it != side_of.end()) {
        const bool below = n->op == sym::Op::Lt || n->op == sym::Op::Le;
        const bool strict = n->op == sym::Op::Lt || n->op == sym::Op::Gt;
        const sym::Op side_test =
            below ? (strict ? sym::Op::Lt : sym::Op::Le) : (strict ? sym::Op::Gt : sym::Op::Ge);
        Expr a = args[0], b = args[1];
        r = cx.binary(sym::Op::Or, cx.binary(below ? sym::Op::Lt : sym::Op::Gt, a, b),
                      cx.binary(sym::Op::And, cx.binary(sym::Op::Eq, a, b),
                                cx.binary(side_test, it->second, cx.zero())));
      }
    }
    done[n] = r;
  }
  return done.at(c);
}

// The symbols that do not change between events: parameters, discrete variables and their pre,
// initial() and terminal().
std::unordered_set<uint32_t> event_constants(const SymbolicDae& dae) {
  std::unordered_set<uint32_t> c(dae.parameters.begin(), dae.parameters.end());
  c.insert(dae.discretes.begin(), dae.discretes.end());
  for (const auto& [x, p] : dae.pre_symbols) c.insert(p);
  if (dae.initial_symbol >= 0) c.insert(static_cast<uint32_t>(dae.initial_symbol));
  if (dae.terminal_symbol >= 0) c.insert(static_cast<uint32_t>(dae.terminal_symbol));
  return c;
}

// The crossing functions of the switches in the residuals: the relations a < b (a - b) in the
// condition of an if-expression, the argument of abs and sign, a - b of min(a, b) and
// max(a, b); only those that change in time (depend on a symbol other than a parameter), and not
// below a noEvent (SymbolicDae::no_event). Each once, in the order of the DAG.
std::vector<Expr> switch_crossings(const SymbolicDae& dae, sym::Context& cx) {
  const std::unordered_set<uint32_t> parameters = event_constants(dae);
  std::unordered_set<Expr> quiet(dae.no_event.begin(), dae.no_event.end());
  std::vector<Expr> roots;
  for (const auto& e : dae.equations) roots.push_back(e.residual);
  // nodes reachable from the residuals without passing a noEvent root, by id (a hash set of the
  // million nodes of a model of 10^5 equations was 14 MB)
  std::vector<bool> visited(cx.node_count());
  std::vector<Expr> stack;
  for (Expr r : roots)
    if (!quiet.count(r)) stack.push_back(r);
  std::vector<Expr> found;
  std::unordered_set<Expr> seen;
  const auto changes = [&](Expr e) {
    for (uint32_t s : sym::free_symbols(e))
      if (!parameters.count(s)) return true;
    return false;
  };
  const auto add = [&](Expr crossing) {
    if (!crossing->is_const() && changes(crossing) && seen.insert(crossing).second)
      found.push_back(crossing);
  };
  while (!stack.empty()) {
    Expr n = stack.back();
    stack.pop_back();
    if (n->id >= visited.size()) visited.resize(n->id + 1);
    if (visited[n->id]) continue;
    visited[n->id] = true;
    switch (n->op) {
      case sym::Op::Select:
        relation_crossings(cx, n->arg(0), add);
        break;
      case sym::Op::Abs:
      case sym::Op::Sign:
        add(n->arg(0));
        break;
      case sym::Op::Min:
      case sym::Op::Max:
        add(cx.sub(n->arg(0), n->arg(1)));
        break;
      default:
        break;
    }
    for (Expr c : n->children())
      if (!quiet.count(c)) stack.push_back(c);
  }
  return found;
}

}  // namespace

std::vector<const codegen::KernelSpec*> ModelKernels::all() const {
  std::vector<const codegen::KernelSpec*> a;
  const auto add = [&a](std::initializer_list<const codegen::KernelSpec*> ks) {
    for (const codegen::KernelSpec* k : ks) a.push_back(k);
  };
  // first: the kernels rt::InverseDynamics calls at every sample (see per_sample_inverse)
  if (inverse_dynamics)
    add({&constraint_g, &constraint_G.spec, &constraint_gd, &constraint_gamma, &inverse_balance});
  add({&residual, &newton_matrix.spec, &mass_matrix.spec, &init_residual, &init_matrix.spec,
       &jac_q.spec, &jac_qd.spec, &jac_y.spec, &jac_z.spec, &index2_residual, &index2_matrix.spec,
       &outputs, &initial_values, &parameter_bindings});
  if (has_events) add({&events, &event_reinit});
  if (sensitivities)
    add({&sens_F_p.spec, &sens_init.spec, &sens_start.spec, &sens_bindings.spec,
         &sens_outputs.spec});
  // then those of BalanceForm::Bodies (not in the optimised budget: a cross-check)
  if (inverse_dynamics)
    add({&outputs_z.spec, &body_rows, &body_rows_u.spec, &body_wrench, &body_wrench_u.spec});
  return a;
}

ModelKernels build_kernels(const SymbolicDae& dae, sym::Context& cx, bool inverse_dynamics) {
  ModelKernels k;
  k.c_q = cx.new_symbol("solver.c_q");
  k.c_qd = cx.new_symbol("solver.c_qd");
  k.c_y = cx.new_symbol("solver.c_y");
  Expr one = cx.one();

  std::vector<Expr> f, g;
  for (const auto& e : dae.equations) {
    f.push_back(e.residual);
    g.push_back(e.init_residual);
  }
  k.residual.name = "residual";
  k.residual.outputs = f;
  k.init_residual.name = "init_residual";
  k.init_residual.outputs = g;
  // the structure of the model: which equations come from one for-equation or one array of
  // components (FlatEquation::group), for the loops of code generation
  std::vector<uint32_t> group;
  group.reserve(dae.equations.size());
  for (const auto& e : dae.equations) group.push_back(e.group);
  k.residual.groups = group;
  k.init_residual.groups = group;

  // the columns: [qdd | yd | z] for the Newton matrix (with c_q dF/dq + c_qd dF/dqd and c_y
  // dF/dy), the mass matrix ([qdd | yd]) and the initial one; q, qd, y, z for the four blocks
  const size_t nq = dae.q.size(), ny = dae.y.size(), nz = dae.z.size();
  const Expr c_q = cx.symbol(k.c_q), c_qd = cx.symbol(k.c_qd), c_y = cx.symbol(k.c_y);
  const auto newton = [&](size_t j) {
    if (j < nq) {
      const DaeUnknown& u = dae.q[j];
      return Column{{{u.d2, one}, {u.symbol, c_q}, {u.d1, c_qd}}};
    }
    if (j < nq + ny) {
      const DaeUnknown& u = dae.y[j - nq];
      return Column{{{u.d1, one}, {u.symbol, c_y}}};
    }
    return Column{{{dae.z[j - nq - ny].symbol, one}}};
  };
  const auto init = [&](size_t j) {  // the mass matrix's are its first nq + ny
    if (j < nq) return Column{{{dae.q[j].d2, one}}};
    if (j < nq + ny) return Column{{{dae.y[j - nq].d1, one}}};
    return Column{{{dae.z[j - nq - ny].symbol, one}}};
  };
  const auto cq = [&](size_t j) { return Column{{{dae.q[j].symbol, one}}}; };
  const auto cqd = [&](size_t j) { return Column{{{dae.q[j].d1, one}}}; };
  const auto cy = [&](size_t j) { return Column{{{dae.y[j].symbol, one}}}; };
  const auto cz = [&](size_t j) { return Column{{{dae.z[j].symbol, one}}}; };
  Derivatives derivative(cx);
  const Incidence rows_f(cx, f);
  k.newton_matrix = jacobian(cx, derivative, "newton_matrix", rows_f, nq + ny + nz, newton);
  k.jac_q = jacobian(cx, derivative, "jac_q", rows_f, nq, cq);
  k.jac_qd = jacobian(cx, derivative, "jac_qd", rows_f, nq, cqd);
  k.jac_y = jacobian(cx, derivative, "jac_y", rows_f, ny, cy);
  k.jac_z = jacobian(cx, derivative, "jac_z", rows_f, nz, cz);
  // index 2: a position-level constraint g(q) = 0 is replaced by dg/dt = G qd = 0
  std::vector<Expr> f2;
  for (const auto& e : dae.equations)
    f2.push_back(e.level == rt::EquationLevel::Position ? e.velocity_residual : e.residual);
  k.index2_residual.name = "index2_residual";
  k.index2_residual.outputs = f2;
  k.index2_residual.groups = group;
  // (without position-level constraints F2 is F, and without them and velocity-level ones the
  // initial residual is F too: their incidence is F's)
  std::optional<Incidence> rows_f2, rows_g;
  if (f2 != f) rows_f2.emplace(cx, f2);
  if (g != f) rows_g.emplace(cx, g);
  k.index2_matrix =
      jacobian(cx, derivative, "index2_matrix", rows_f2 ? *rows_f2 : rows_f, nq + ny + nz, newton);
  k.mass_matrix = jacobian(cx, derivative, "mass_matrix", rows_f, nq + ny, init);
  k.init_matrix =
      jacobian(cx, derivative, "init_matrix", rows_g ? *rows_g : rows_f, nq + ny + nz, init);
  for (MatrixKernel* m : {&k.newton_matrix, &k.jac_q, &k.jac_qd, &k.jac_y, &k.jac_z,
                          &k.index2_matrix, &k.mass_matrix, &k.init_matrix})
    tag_rows(*m, group);

  // the position-level constraints alone (closure rows, unit quaternions, prescribed motion):
  // g, G = dg/dq, dg/dt and the acceleration bias gamma = d2g/dt2 at qdd = 0
  k.inverse_dynamics = inverse_dynamics;
  if (inverse_dynamics) {
    std::vector<Expr> cg, gd, gam;
    std::unordered_map<uint32_t, Expr> no_qdd;
    for (const auto& u : dae.q) no_qdd[u.d2] = cx.zero();
    for (const auto& e : dae.equations) {
      if (e.level != rt::EquationLevel::Position) continue;
      cg.push_back(e.residual);
      gd.push_back(e.velocity_residual);
      gam.push_back(sym::substitute(cx, e.init_residual, no_qdd));
    }
    k.constraint_g.name = "constraint_g";
    k.constraint_g.outputs = cg;
    k.constraint_gd.name = "constraint_gd";
    k.constraint_gd.outputs = gd;
    k.constraint_gamma.name = "constraint_gamma";
    k.constraint_gamma.outputs = gam;
    k.constraint_G = jacobian(cx, derivative, "constraint_G", Incidence(cx, cg), nq, cq);
  }

  k.outputs.name = "outputs";
  VariableGroups variable_groups;
  for (const auto& o : dae.outputs) {
    k.outputs.outputs.push_back(o.value);
    k.outputs.groups.push_back(variable_groups.of(o.declared, o.name));
  }
  if (inverse_dynamics) {
    k.outputs_z = jacobian(cx, derivative, "outputs_z", Incidence(cx, k.outputs.outputs), nz, cz);
    // the outputs rt::InverseDynamics reads (it falls back to outputs and outputs_z for any
    // other): every output with a role (closure checks, joint and sensor wrenches) and every
    // output that depends on z
    const size_t n_out = dae.outputs.size();
    std::vector<uint8_t> read(n_out, 0);
    for (int32_t r : k.outputs_z.pattern.row) read[static_cast<size_t>(r)] = 1;
    for (size_t c = 0; c < n_out; ++c)
      if (dae.outputs[c].role != rt::OutputRole::Variable) read[c] = 1;
    std::vector<int32_t> position(n_out, -1);
    for (size_t c = 0; c < n_out; ++c) {
      if (!read[c]) continue;
      position[c] = static_cast<int32_t>(k.inverse_output_columns.size());
      k.inverse_output_columns.push_back(static_cast<int32_t>(c));
    }
    k.inverse_balance.name = "inverse_balance";
    auto& ib = k.inverse_balance.outputs;
    ib = f;
    ib.insert(ib.end(), k.jac_z.spec.outputs.begin(), k.jac_z.spec.outputs.end());
    for (int32_t c : k.inverse_output_columns)
      ib.push_back(k.outputs.outputs[static_cast<size_t>(c)]);
    k.inverse_outputs_z.rows = static_cast<int32_t>(k.inverse_output_columns.size());
    k.inverse_outputs_z.cols = k.outputs_z.pattern.cols;
    for (size_t e = 0; e < k.outputs_z.pattern.nnz(); ++e) {
      int32_t r = position[static_cast<size_t>(k.outputs_z.pattern.row[e])];
      if (r < 0) continue;
      k.inverse_outputs_z.row.push_back(r);
      k.inverse_outputs_z.col.push_back(k.outputs_z.pattern.col[e]);
      ib.push_back(k.outputs_z.spec.outputs[e]);
    }
  }
  if (inverse_dynamics) {
    const BodyBalance& bb = dae.body_balance;
    const auto cu = [&](size_t j) {  // z, then the reaction coordinates
      return j < nz ? cz(j) : Column{{{bb.reactions[j - nz], one}}};
    };
    std::unordered_map<uint32_t, Expr> no_reactions;
    for (uint32_t r : bb.reactions) no_reactions[r] = cx.zero();
    for (const auto& u : dae.z) k.body_columns.push_back(u.name);
    for (const auto& n : bb.reaction_names) k.body_columns.push_back(n);
    k.body_rows.name = "body_rows";
    for (const Expr& r : bb.rows)
      k.body_rows.outputs.push_back(sym::substitute(cx, r, no_reactions));
    k.body_wrench.name = "body_wrench";
    for (const Expr& w : bb.wrenches)
      k.body_wrench.outputs.push_back(sym::substitute(cx, w, no_reactions));
    const size_t nu = nz + bb.reactions.size();
    k.body_rows_u = jacobian(cx, derivative, "body_rows_u", Incidence(cx, bb.rows), nu, cu);
    k.body_wrench_u = jacobian(cx, derivative, "body_wrench_u", Incidence(cx, bb.wrenches), nu, cu);
  }

  k.parameter_bindings.name = "parameter_bindings";
  k.initial_values.name = "initial_values";
  auto start = [&](Expr e) { return e ? e : cx.zero(); };
  auto initial = [&](const DaeUnknown& u, Expr value) {
    k.initial_values.outputs.push_back(start(value));
    k.initial_values.groups.push_back(variable_groups.of(u.span, u.name));
  };
  for (const auto& u : dae.q) initial(u, u.start);
  for (const auto& u : dae.q) initial(u, u.start_der);
  for (const auto& u : dae.y) initial(u, u.start);
  for (const auto& u : dae.z) initial(u, u.start);

  std::vector<Expr> switches = switch_crossings(dae, cx);
  if (!dae.whens.empty() || !switches.empty()) {
    k.has_events = true;
    k.events.name = "events";
    k.event_reinit.name = "event_reinit";
    std::vector<Expr> conditions;
    std::unordered_set<Expr> seen;
    // a relation of values that change only at events (discrete variables, parameters) has no
    // crossing to locate: it changes at an event, where the conditions are evaluated again
    const std::unordered_set<uint32_t> constants = event_constants(dae);
    const auto continuous = [&](Expr e) {
      for (uint32_t sy : sym::free_symbols(e))
        if (!constants.count(sy)) return true;
      return false;
    };
    for (const auto& w : dae.whens) {
      for (const auto& b : w.branches) {
        relation_crossings(cx, b.condition, [&](Expr crossing) {
          if (!crossing->is_const() && continuous(crossing) && seen.insert(crossing).second) {
            k.events.outputs.push_back(crossing);
            k.crossing_sides.push_back(
                cx.new_symbol("$zero_side[" + std::to_string(k.events.outputs.size()) + "]"));
          }
        });
        for (const auto& r : b.reinits) k.event_reinit.outputs.push_back(r.value);
      }
    }
    // each relation of a crossing reads its side at zero (the value the relation has where its
    // crossing function is exactly 0: 0 literal, -1 as just below, +1 as just above)
    std::unordered_map<Expr, Expr> side_of;
    for (size_t c = 0; c < k.crossing_sides.size(); ++c)
      side_of.emplace(k.events.outputs[c], cx.symbol(k.crossing_sides[c]));
    for (const auto& w : dae.whens)
      for (const auto& b : w.branches)
        conditions.push_back(with_zero_sides(cx, b.condition, side_of));
    k.events.outputs.insert(k.events.outputs.end(), switches.begin(), switches.end());
    k.n_switches = static_cast<int32_t>(switches.size());
    k.n_crossings = static_cast<int32_t>(k.events.outputs.size());
    k.events.outputs.insert(k.events.outputs.end(), conditions.begin(), conditions.end());
  }
  return k;
}

void print_kernels(std::ostream& os, const sym::Context& cx, const ModelKernels& k) {
  auto list = [&](const codegen::KernelSpec& s) {
    os << "kernel " << s.name << " (" << s.outputs.size() << " outputs)\n";
    for (size_t i = 0; i < s.outputs.size(); ++i)
      os << "  [" << i << "] " << sym::to_string(cx, s.outputs[i]) << "\n";
  };
  auto matrix = [&](const MatrixKernel& m) {
    os << "kernel " << m.spec.name << " (" << m.pattern.rows << "x" << m.pattern.cols << ", "
       << m.pattern.nnz() << " non-zeros)\n";
    for (size_t i = 0; i < m.spec.outputs.size(); ++i)
      os << "  (" << m.pattern.row[i] << "," << m.pattern.col[i] << ") "
         << sym::to_string(cx, m.spec.outputs[i]) << "\n";
  };
  list(k.residual);
  matrix(k.newton_matrix);
  matrix(k.mass_matrix);
  list(k.init_residual);
  matrix(k.init_matrix);
  matrix(k.jac_q);
  matrix(k.jac_qd);
  matrix(k.jac_y);
  matrix(k.jac_z);
  list(k.index2_residual);
  matrix(k.index2_matrix);
  list(k.outputs);
  if (k.inverse_dynamics) {
    matrix(k.outputs_z);
    list(k.constraint_g);
    matrix(k.constraint_G);
    list(k.constraint_gd);
    list(k.constraint_gamma);
    list(k.inverse_balance);
    list(k.body_rows);
    os << "columns of body_rows_u and body_wrench_u:\n";
    for (size_t j = 0; j < k.body_columns.size(); ++j)
      os << "  [" << j << "] " << k.body_columns[j] << "\n";
    matrix(k.body_rows_u);
    list(k.body_wrench);
    matrix(k.body_wrench_u);
  }
  list(k.initial_values);
  if (k.has_events) {
    os << "zero-crossing functions: " << k.n_crossings << " (" << k.n_switches << " of switches)\n";
    list(k.events);
    list(k.event_reinit);
  }
  os << "nodes in the expression DAG: " << cx.node_count() << "\n";
}

}  // namespace mbs
