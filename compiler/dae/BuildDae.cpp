// From FlatModel to SymbolicDAE.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "compiler/dae/Dae.h"

namespace mbs {

// Breadth-first layers from the free rows, then vertex-disjoint shortest augmenting paths by
// depth-first search along the layers (iterative: a chain of 10^5 equations gives paths that
// long).
std::vector<int> hopcroft_karp(const std::vector<std::vector<int>>& adj, int n_cols) {
  const int n_rows = static_cast<int>(adj.size());
  constexpr int kInf = std::numeric_limits<int>::max();
  std::vector<int> row_of_col(static_cast<size_t>(n_cols), -1);
  std::vector<int> col_of_row(static_cast<size_t>(n_rows), -1);
  std::vector<int> dist(static_cast<size_t>(n_rows));
  std::vector<size_t> next(static_cast<size_t>(n_rows));
  std::vector<int> queue, stack, cols;
  // a greedy start
  for (int r = 0; r < n_rows; ++r)
    for (int c : adj[static_cast<size_t>(r)])
      if (row_of_col[static_cast<size_t>(c)] < 0) {
        row_of_col[static_cast<size_t>(c)] = r;
        col_of_row[static_cast<size_t>(r)] = c;
        break;
      }
  for (;;) {
    queue.clear();
    for (int r = 0; r < n_rows; ++r) {
      const bool free_row = col_of_row[static_cast<size_t>(r)] < 0;
      dist[static_cast<size_t>(r)] = free_row ? 0 : kInf;
      if (free_row) queue.push_back(r);
    }
    int free_dist = kInf;  // the layer at which a free column is reached
    for (size_t h = 0; h < queue.size(); ++h) {
      const int u = queue[h];
      const int du = dist[static_cast<size_t>(u)];
      if (du >= free_dist) break;
      for (int c : adj[static_cast<size_t>(u)]) {
        const int w = row_of_col[static_cast<size_t>(c)];
        if (w < 0) {
          if (free_dist == kInf) free_dist = du + 1;
        } else if (dist[static_cast<size_t>(w)] == kInf) {
          dist[static_cast<size_t>(w)] = du + 1;
          queue.push_back(w);
        }
      }
    }
    if (free_dist == kInf) break;  // no augmenting path: maximum
    std::fill(next.begin(), next.end(), 0);
    for (int r0 = 0; r0 < n_rows; ++r0) {
      if (col_of_row[static_cast<size_t>(r0)] >= 0 || dist[static_cast<size_t>(r0)] != 0) continue;
      stack.assign(1, r0);
      cols.clear();
      while (!stack.empty()) {
        const int u = stack.back();
        const auto uz = static_cast<size_t>(u);
        if (next[uz] == adj[uz].size()) {  // no path on from u in this phase
          dist[uz] = kInf;
          stack.pop_back();
          if (!cols.empty()) cols.pop_back();
          continue;
        }
        const int c = adj[uz][next[uz]++];
        const int w = row_of_col[static_cast<size_t>(c)];
        if (w < 0) {
          if (dist[uz] + 1 != free_dist) continue;
          cols.push_back(c);
          for (size_t k = 0; k < stack.size(); ++k) {
            col_of_row[static_cast<size_t>(stack[k])] = cols[k];
            row_of_col[static_cast<size_t>(cols[k])] = stack[k];
          }
          break;
        }
        if (dist[static_cast<size_t>(w)] == dist[uz] + 1) {
          cols.push_back(c);
          stack.push_back(w);
        }
      }
    }
  }
  return col_of_row;
}

namespace {

// The first matching algorithm (greedy start, then an augmenting path by depth-first search for
// each free row): O(V E) on long chains, kept for the diagnostics of a matching that is not
// perfect, whose notes name the rows and columns it leaves free.
std::vector<int> augmenting_dfs(const std::vector<std::vector<int>>& adj, int n_cols) {
  int n_rows = static_cast<int>(adj.size());
  std::vector<int> row_of_col(n_cols, -1), col_of_row(n_rows, -1);
  std::vector<int> visited(n_cols, -1);
  // cheap greedy start, then augmenting paths (iterative DFS)
  for (int r = 0; r < n_rows; ++r)
    for (int c : adj[r])
      if (row_of_col[c] < 0) {
        row_of_col[c] = r;
        col_of_row[r] = c;
        break;
      }
  struct Frame {
    int row;
    size_t next;
  };
  std::vector<Frame> stack;
  std::vector<int> via;  // column chosen at each stack level
  for (int r0 = 0; r0 < n_rows; ++r0) {
    if (col_of_row[r0] >= 0) continue;
    stack.clear();
    via.clear();
    stack.push_back({r0, 0});
    bool found = false;
    while (!stack.empty() && !found) {
      Frame& f = stack.back();
      if (f.next >= adj[f.row].size()) {
        stack.pop_back();
        if (!via.empty()) via.pop_back();
        continue;
      }
      int c = adj[f.row][f.next++];
      if (visited[c] == r0) continue;
      visited[c] = r0;
      if (row_of_col[c] < 0) {
        // augment along the stack
        via.push_back(c);
        for (size_t k = 0; k < stack.size(); ++k) {
          int row = stack[k].row, col = via[k];
          row_of_col[col] = row;
          col_of_row[row] = col;
        }
        found = true;
      } else {
        via.push_back(c);
        stack.push_back({row_of_col[c], 0});
      }
    }
  }
  return col_of_row;
}

}  // namespace

std::vector<int> bipartite_matching(const std::vector<std::vector<int>>& adj, int n_cols) {
  std::vector<int> match = hopcroft_karp(adj, n_cols);
  if (static_cast<int>(adj.size()) == n_cols &&
      std::all_of(match.begin(), match.end(), [](int c) { return c >= 0; }))
    return match;                      // perfect
  return augmenting_dfs(adj, n_cols);  // the same size; the diagnostics name what it leaves free
}

namespace {

using sym::Expr;

struct Builder {
  const FlatModel& flat;
  std::vector<FlatEquation>& flat_equations;  // flat.equations, emptied once they are done with
  sym::Context& cx;
  DerivativeTable& ders;
  DiagnosticEngine& diags;

  // unknown 0-order symbols of the flat model
  std::unordered_map<uint32_t, size_t> unknown_var;  // symbol -> flat var index
  std::unordered_map<uint32_t, Expr> repl;           // eliminated symbol -> value
  std::unordered_map<uint32_t, Expr> der_start;      // derivative symbol -> start value
  std::unordered_map<uint32_t, Expr> start;          // variable symbol -> start value
  // start values declared `fixed = false` (of a variable; of a derivative, through its alias)
  std::unordered_set<uint32_t> free_start, free_der_start;
  std::unordered_set<uint32_t> fixed_der_start;  // derivatives whose start is fixed = true
  std::unordered_map<uint32_t, Span> free_span;  // symbol (or derivative) -> where declared free
  // the order reduction's replacements (der^j(x) -> der^(j-1)(w)), for the initial equations
  std::vector<std::unordered_map<uint32_t, Expr>> order_subs;
  std::unordered_map<uint32_t, size_t> input_var;  // top-level input symbol -> flat var index

  // the first input `e` depends on, or -1
  int64_t input_in(Expr e) const {
    for (uint32_t s : sym::free_symbols(e))
      if (input_var.count(s)) return s;
    return -1;
  }

  struct Eq {
    Expr r;
    Span span;
    std::string text;  // as written
    bool alive = true;
    // of the flat equation (moved from it: the flat equations go at the start of the pass, so
    // that a model of 10^5 equations does not hold both); defaults for equations the pass adds
    rt::EquationRole role = rt::EquationRole::Model;
    uint32_t group = 0;
    int64_t param = -1;
    std::string subject;
  };
  std::vector<Eq> eqs;
  SymbolicDae dae;

  // the base variable and derivative order of a symbol (x -> (x, 0), der(der(x)) -> (x, 2))
  std::pair<uint32_t, int> base_of(uint32_t s) const {
    int k = 0;
    for (int64_t i = ders.integral_of(s); i >= 0; i = ders.integral_of(static_cast<uint32_t>(i))) {
      s = static_cast<uint32_t>(i);
      ++k;
    }
    return {s, k};
  }
  bool is_unknown(uint32_t s) const { return unknown_var.count(s) && !repl.count(s); }

  // The substitution of the eliminations, memoised across the expressions it resolves until
  // the next elimination changes repl: the rows of a condensed mechanism share most of their
  // nodes, which one substitution per row would walk once per row.
  std::optional<sym::Substituter> resolver;
  Expr resolve(Expr e) {
    if (!resolver) resolver.emplace(cx, repl);
    for (int i = 0; i < 10000; ++i) {
      Expr n = (*resolver)(e);
      if (n == e) return e;
      e = n;
    }
    return e;
  }

  // The initial equations in the unknowns (eliminations and order reductions substituted); each
  // may read what the start determines: q, der(q), der(der(q)), y, der(y), z, parameters,
  // inputs and time; anything else is initial_unknown.
  bool resolve_initial_equations() {
    if (flat.initial_equations.empty()) return true;
    std::unordered_set<uint32_t> known;
    for (const auto& u : dae.q) known.insert({u.symbol, u.d1, u.d2});
    for (const auto& u : dae.y) known.insert({u.symbol, u.d1});
    for (const auto& u : dae.z) known.insert(u.symbol);
    bool ok = true;
    for (const FlatEquation& fe : flat.initial_equations) {
      Expr r = resolve(fe.residual);
      for (const auto& sub : order_subs) r = resolve(sym::substitute(cx, r, sub));
      for (uint32_t s : sym::free_symbols(r)) {
        if (known.count(s) || s == dae.time_symbol || input_var.count(s)) continue;
        if (auto it = flat.var_of_symbol.find(s);
            it != flat.var_of_symbol.end() && flat.vars[it->second].role != VarRole::Variable)
          continue;
        // no structured binding: clang 14 (the fuzz build) cannot capture one in a lambda
        const std::pair<uint32_t, int> of = base_of(s);
        const uint32_t base = of.first;
        const int k = of.second;
        std::string why =
            k == 0 ? "it is no unknown of the model"
            : std::find_if(dae.z.begin(), dae.z.end(),
                           [base](const DaeUnknown& u) { return u.symbol == base; }) != dae.z.end()
                ? fmt::format("'{}' is algebraic, its derivative is not computed",
                              cx.symbol_name(base))
                : fmt::format("the model integrates '{}' to a lower order", cx.symbol_name(base));
        diags.report(DiagKind::initial_unknown, fe.span, {cx.symbol_name(s), why});
        diags.help(
            "an initial equation may use the states (positions, velocities der(x), first-order "
            "states), the accelerations der(der(x)), derivatives der(y) of first-order states, "
            "the algebraic variables, parameters and time");
        ok = false;
        break;
      }
      dae.initial_equations.push_back({r, fe.span, fe.text});
    }
    return ok;
  }

  // The when-equations in the unknowns; each reinit target resolved to the state it sets (a q,
  // its der(q), or a y), else reinit_not_state.
  bool resolve_whens() {
    if (flat.whens.empty()) return true;
    std::unordered_map<uint32_t, const char*> state_kind;
    for (const auto& u : dae.q) {
      state_kind[u.symbol] = "q";
      state_kind[u.d1] = "qd";
      state_kind[u.d2] = "an acceleration";
    }
    for (const auto& u : dae.y) {
      state_kind[u.symbol] = "y";
      state_kind[u.d1] = "a derivative of a first-order state";
    }
    for (const auto& u : dae.z) state_kind[u.symbol] = "an algebraic variable";
    // the eliminated variables by symbol (a loop over every variable per elimination was
    // quadratic in the model's size)
    std::unordered_map<std::string_view, uint32_t> symbol_of_name;
    for (const auto& v : flat.vars) symbol_of_name.emplace(v.name, v.symbol);
    std::unordered_map<uint32_t, const Elimination*> eliminated_as;
    for (const auto& el : dae.eliminated)
      if (auto it = symbol_of_name.find(el.name); it != symbol_of_name.end())
        eliminated_as[it->second] = &el;
    for (const FlatWhen& fw : flat.whens) {
      DaeWhen w;
      w.span = fw.span;
      for (const FlatWhenBranch& fb : fw.branches) {
        DaeWhenBranch b;
        b.condition = resolve(fb.condition);
        b.condition_span = fb.condition_span;
        b.condition_text = fb.condition_text;
        for (const FlatReinit& fr : fb.reinits) {
          DaeReinit r;
          r.name = cx.symbol_name(fr.var);
          r.span = fr.span;
          r.text = fr.text;
          r.value = resolve(fr.value);
          Expr x = resolve(cx.symbol(fr.var));
          double scale = 1.0;
          if (x->op == sym::Op::Mul && x->nargs == 2 && x->arg(0)->is_const()) {
            scale = x->arg(0)->value;
            x = x->arg(1);
          }
          const auto kind = x->is_symbol() ? state_kind.find(x->symbol) : state_kind.end();
          const bool settable =
              kind != state_kind.end() &&
              (std::string_view(kind->second) == "q" || std::string_view(kind->second) == "qd" ||
               std::string_view(kind->second) == "y");
          if (!settable || scale == 0.0) {
            std::string why;
            if (auto el = eliminated_as.find(fr.var); el != eliminated_as.end())
              why = fmt::format("it was eliminated as {} = {} ({}), so it is not a state", r.name,
                                sym::to_string(cx, el->second->value), el->second->how);
            else if (kind != state_kind.end())
              why = fmt::format("it is {}, not a state", kind->second);
            else
              why = "it is not a state (no derivative of it is integrated)";
            diags.report(DiagKind::reinit_not_state, fr.span, {r.name, why});
            diags.help(
                "reinit sets a state: a variable whose derivative the model integrates (a "
                "position, a velocity der(x), or a first-order state)");
            return false;
          }
          r.state = x->symbol;
          r.scale = scale;
          b.reinits.push_back(std::move(r));
        }
        for (const FlatReinit& fa : fb.assigns) {  // the variable is its own slot
          DaeReinit a;
          a.name = cx.symbol_name(fa.var);
          a.span = fa.span;
          a.text = fa.text;
          a.value = resolve(fa.value);
          a.state = fa.var;
          a.discrete = true;
          b.reinits.push_back(std::move(a));
        }
        w.branches.push_back(std::move(b));
      }
      dae.whens.push_back(std::move(w));
    }
    return true;
  }

  // The derivative t of a not-linear equation need not be written in it: a variable of it may
  // have been replaced by a value with t (y := -der(x) from der(x) = -y). Notes at the equations
  // of those eliminations (the variables named in eq's text whose value holds t; at most 3).
  void note_eliminations_that_brought(const Eq& eq, uint32_t t) {
    const auto named = [&](const std::string& name) {
      const auto ident = [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
      };
      for (size_t at = eq.text.find(name); at != std::string::npos;
           at = eq.text.find(name, at + 1)) {
        const size_t end = at + name.size();
        if ((at == 0 || !ident(eq.text[at - 1])) &&
            (end == eq.text.size() || (!ident(eq.text[end]) && eq.text[end] != '.')))
          return true;
      }
      return false;
    };
    int shown = 0;
    for (const Elimination& el : dae.eliminated) {
      if (shown == 3) break;
      const auto fs = sym::free_symbols(el.value);
      // the text is as written in its class: a component's y is "y", not "c.y"
      const size_t dot = el.name.rfind('.');
      if (std::find(fs.begin(), fs.end(), t) == fs.end() ||
          !named(dot == std::string::npos ? el.name : el.name.substr(dot + 1)))
        continue;
      diags.note(el.span,
                 fmt::format("here '{0}' is eliminated as {0} = {1}, which puts '{2}' into the "
                             "equation of the error",
                             el.name, sym::to_string(cx, el.value), cx.symbol_name(t)));
      ++shown;
    }
  }

  // Records x := value and the same for its existing derivatives.
  void eliminate(uint32_t x, Expr value, const char* how, const Eq& eq) {
    const Span span = eq.span;
    resolver.reset();  // memoised under the old repl
    repl[x] = value;
    uint32_t s = x;
    Expr v = value;
    while (ders.has_der(s)) {
      uint32_t d = ders.der(s);
      v = ders.total_derivative(v);
      repl[d] = v;
      s = d;
    }
    const FlatVar& fv = flat.vars[unknown_var.at(x)];
    dae.eliminated.push_back({fv.name, value, how, span, eq.text});
  }

  // What the eliminations need to know of a residual r, from one walk of it: its symbols, and
  // those in which r is linear with a numeric coefficient. Only an unknown that is a term c*s of
  // r's top-level sum and occurs nowhere else in r can be eliminated: if it occurs elsewhere,
  // either its coefficient is not a number or the value s - r/c still contains s (and the
  // aliases' rest r - c_a a - c_b b is not 0), which every branch of try_eliminate refuses. So
  // the coefficient is read from that term instead of differentiating r once per candidate
  // unknown and per sweep (cubic in the size of a condensed multibody model, whose every
  // balance row contains every joint coordinate).
  struct Linearity {
    std::vector<uint32_t> symbols;                    // all symbols of r, ascending
    std::vector<std::pair<uint32_t, double>> linear;  // (symbol, numeric coefficient), ascending
  };
  Linearity linearity(Expr r) {
    Linearity l;
    std::vector<std::pair<uint32_t, double>> top;  // terms c*s of the top-level sum
    std::vector<Expr> others;                      // the other terms
    auto term = [&](Expr t) {
      if (t->is_symbol())
        top.emplace_back(t->symbol, 1.0);
      else if (t->op == sym::Op::Mul && t->nargs == 2 && t->arg(0)->is_const() &&
               t->arg(1)->is_symbol())
        top.emplace_back(t->arg(1)->symbol, t->arg(0)->value);
      else if (!t->is_const())
        others.push_back(t);
    };
    if (r->op == sym::Op::Add)
      for (Expr t : r->children()) term(t);
    else
      term(r);
    // the symbols of the other terms, in one walk shared by them (so each node once)
    std::vector<uint32_t> elsewhere;
    for (Expr n : sym::topological_order(others))
      if (n->is_symbol()) elsewhere.push_back(n->symbol);
    std::sort(elsewhere.begin(), elsewhere.end());  // each symbol node is unique: no duplicates
    l.symbols = elsewhere;
    for (const auto& [s, c] : top) {
      if (!std::binary_search(elsewhere.begin(), elsewhere.end(), s)) {
        l.linear.emplace_back(s, c);
        l.symbols.push_back(s);
      }
    }
    std::sort(l.symbols.begin(), l.symbols.end());
    std::sort(l.linear.begin(), l.linear.end());
    return l;
  }
  // coefficient of s in r when r is linear in s with a numeric coefficient (and s occurs in no
  // other term), else null
  Expr linear_coefficient(const Linearity& l, uint32_t s) {
    auto it = std::lower_bound(l.linear.begin(), l.linear.end(), s,
                               [](const auto& term, uint32_t x) { return term.first < x; });
    if (it == l.linear.end() || it->first != s) return nullptr;
    return cx.num(it->second);
  }

  bool kept(uint32_t s) const { return flat.vars[unknown_var.at(s)].keep; }

  bool try_eliminate(Eq& eq) {
    const Linearity lin = linearity(eq.r);
    const std::vector<uint32_t>& syms = lin.symbols;
    std::vector<uint32_t> unknown0, derivs;
    for (uint32_t s : syms) {
      auto [b, k] = base_of(s);
      if (!is_unknown(b)) continue;
      (k == 0 ? unknown0 : derivs).push_back(s);
    }
    // variables marked `keep` (recursive multibody quantities, multipliers) are never
    // substituted away; other variables of the same equation may be
    const bool any_kept =
        std::any_of(unknown0.begin(), unknown0.end(), [&](uint32_t s) { return kept(s); });
    // a = c*b  (two unknowns, linear, numeric coefficients, nothing else)
    if (unknown0.size() == 2 && derivs.empty() && !any_kept) {
      uint32_t a = unknown0[0], b = unknown0[1];
      Expr ca = linear_coefficient(lin, a), cb = linear_coefficient(lin, b);
      if (ca && cb) {
        Expr rest = cx.sub(eq.r, cx.add(cx.mul(ca, cx.symbol(a)), cx.mul(cb, cx.symbol(b))));
        if (rest->is_const(0.0)) {
          // keep the variable with a start value, otherwise the one with the shorter name
          const FlatVar& va = flat.vars[unknown_var.at(a)];
          const FlatVar& vb = flat.vars[unknown_var.at(b)];
          bool keep_a = (start.count(a) && !start.count(b)) ||
                        (start.count(a) == start.count(b) &&
                         (ders.has_der(a) > ders.has_der(b) ||
                          (ders.has_der(a) == ders.has_der(b) &&
                           std::count(va.name.begin(), va.name.end(), '.') <=
                               std::count(vb.name.begin(), vb.name.end(), '.'))));
          uint32_t gone = keep_a ? b : a, kept = keep_a ? a : b;
          Expr cg = keep_a ? cb : ca, ck = keep_a ? ca : cb;
          Expr ratio = cx.neg(cx.div(ck, cg));  // gone = ratio * kept
          const FlatVar& vg = flat.vars[unknown_var.at(gone)];
          if (start.count(gone) && !start.count(kept)) start[kept] = cx.div(start[gone], ratio);
          if (free_start.count(gone) && !flat.vars[unknown_var.at(kept)].fixed) {
            free_start.insert(kept);
            free_span.emplace(kept, free_span[gone]);
          } else if (vg.fixed && vg.start)
            diags.report(DiagKind::eliminated_start, vg.span,
                         {vg.name, "an alias of '" + flat.vars[unknown_var.at(kept)].name + "'"});
          eliminate(gone, cx.mul(ratio, cx.symbol(kept)), "alias", eq);
          return true;
        }
      }
    }
    // v = c*der(x)
    if (unknown0.size() == 1 && derivs.size() == 1) {
      uint32_t v = unknown0[0], d = derivs[0];
      Expr cv = linear_coefficient(lin, v), cd = linear_coefficient(lin, d);
      if (cv && cd && base_of(d).first != v && !kept(v)) {
        Expr rest = cx.sub(eq.r, cx.add(cx.mul(cv, cx.symbol(v)), cx.mul(cd, cx.symbol(d))));
        if (rest->is_const(0.0)) {
          Expr ratio = cx.neg(cx.div(cd, cv));  // v = ratio * d
          if (start.count(v) && !der_start.count(d)) der_start[d] = cx.div(start[v], ratio);
          if (const FlatVar& fv = flat.vars[unknown_var.at(v)]; fv.fixed_given && fv.fixed)
            fixed_der_start.insert(d);
          if (free_start.count(v)) {
            free_der_start.insert(d);
            free_span.emplace(d, free_span[v]);
          }
          eliminate(v, cx.mul(ratio, cx.symbol(d)), "derivative alias", eq);
          return true;
        }
      }
    }
    // v = expression free of v and its derivatives; prefer discrete variables, then variables
    // that are not differentiated anywhere, then unit coefficients
    // (candidates by falling score, the first in declaration order among equals: only the
    // best one's value is built unless it is refused)
    std::vector<std::pair<int, uint32_t>> candidates;  // (-score, v)
    for (uint32_t v : unknown0) {
      if (kept(v)) continue;
      Expr c = linear_coefficient(lin, v);
      if (!c) continue;
      const FlatVar& fv = flat.vars[unknown_var.at(v)];
      int score = (fv.type != ScalarType::Real ? 16 : 0) + (ders.has_der(v) ? 0 : 8) +
                  (std::fabs(c->value) == 1.0 ? 2 : 0) + (start.count(v) ? 0 : 1);
      candidates.emplace_back(-score, v);
    }
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    uint32_t best = 0;
    int best_score = -1;
    for (const auto& [minus_score, v] : candidates) {
      Expr value = cx.sub(cx.symbol(v), cx.div(eq.r, linear_coefficient(lin, v)));
      // A differentiated variable is replaced only by an expression whose time derivative the
      // symbolic engine takes without raising the order and without losing anything: no
      // derivative of an unknown (v = der(w) + w would make der(v) = der(der(w)) + der(w), and a
      // chain der(x[i]) = x[i-1] - x[i] one equation of order n with expressions that grow
      // combinatorially; v = c der(x), the derivative alias above, is the one such replacement
      // that is wanted) and no input (held over a step, its derivative is 0 to the engine: the
      // equation stays, and is refused as a constraint below).
      bool self = false, not_differentiable = false;
      for (uint32_t s : sym::free_symbols(value)) {
        const auto [base, k] = base_of(s);
        self |= base == v;
        not_differentiable |= (k > 0 && is_unknown(base)) || input_var.count(s) != 0;
      }
      if (self || (not_differentiable && ders.has_der(v))) continue;
      best_score = -minus_score;
      best = v;
      break;
    }
    if (best_score >= 0) {
      Expr c = linear_coefficient(lin, best);
      Expr value = cx.sub(cx.symbol(best), cx.div(eq.r, c));
      const FlatVar& fv = flat.vars[unknown_var.at(best)];
      if (fv.fixed && fv.start)
        diags.report(DiagKind::eliminated_start, fv.span,
                     {fv.name, "an explicit function of other variables"});
      // a free start moves to the one unknown the variable is a function of (x = p^3 + p with
      // x free: p is the state that carries x, and its start is free)
      if (free_start.count(best)) {
        std::vector<uint32_t> carriers;
        for (uint32_t s : sym::free_symbols(value))
          if (is_unknown(s) && s != best) carriers.push_back(s);
        if (carriers.size() == 1 && !flat.vars[unknown_var.at(carriers[0])].fixed) {
          free_start.insert(carriers[0]);
          free_span.emplace(carriers[0], free_span[best]);
        }
      }
      eliminate(best, value, "explicit", eq);
      return true;
    }
    return false;
  }

  // Proves the system square and structurally regular by a matching on the Newton-matrix
  // incidence (equation i contains some derivative of unknown j), or reports the equations that
  // have no unknown of their own and the unknowns no equation is left for.
  bool check_matching(const std::vector<size_t>& live, const std::vector<uint32_t>& unknowns) {
    auto var_span = [&](uint32_t s) { return flat.vars[unknown_var.at(s)].span; };
    std::unordered_map<uint32_t, int> col_of;  // base symbol -> column
    for (size_t j = 0; j < unknowns.size(); ++j) col_of[unknowns[j]] = static_cast<int>(j);
    std::vector<std::vector<int>> adj(live.size());
    for (size_t i = 0; i < live.size(); ++i) {
      std::set<int> cols;
      for (uint32_t s : sym::free_symbols(eqs[live[i]].r)) {
        auto it = col_of.find(base_of(s).first);
        if (it != col_of.end()) cols.insert(it->second);
      }
      adj[i].assign(cols.begin(), cols.end());
    }
    std::vector<int> match = bipartite_matching(adj, static_cast<int>(unknowns.size()));
    std::vector<bool> col_matched(unknowns.size(), false);
    for (int c : match)
      if (c >= 0) col_matched[c] = true;
    bool square = live.size() == unknowns.size();
    bool perfect = square && std::all_of(match.begin(), match.end(), [](int c) { return c >= 0; });
    if (perfect) return true;
    auto count = [](size_t n, const char* what) {
      return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s");
    };
    Span where = flat.span;
    if (live.size() > unknowns.size())
      diags.report(DiagKind::too_many_equations, where,
                   {count(live.size(), "equation"), count(unknowns.size(), "unknown")});
    else if (live.size() < unknowns.size())
      diags.report(DiagKind::too_few_equations, where,
                   {count(live.size(), "equation"), count(unknowns.size(), "unknown")});
    else
      diags.report(DiagKind::structurally_singular, where,
                   {"no assignment of one unknown to each equation exists"});
    int shown = 0;
    for (size_t i = 0; i < live.size() && shown < 8; ++i)
      if (match[i] < 0) {
        diags.note(eqs[live[i]].span,
                   "this equation has no unknown of its own: '" + eqs[live[i]].text + "'");
        ++shown;
      }
    for (size_t j = 0; j < unknowns.size() && shown < 16; ++j)
      if (!col_matched[j]) {
        diags.note(var_span(unknowns[j]), "no equation is left to determine '" +
                                              flat.vars[unknown_var.at(unknowns[j])].name + "'");
        ++shown;
      }
    if (live.size() < unknowns.size())
      diags.help("add an equation for each unknown listed above, or declare it a parameter");
    else if (live.size() > unknowns.size())
      diags.help("remove the redundant equations listed above, or check for a missing unknown");
    else
      diags.help(
          "the equations listed above determine the same unknowns twice while others have none");
    return false;
  }

  std::optional<SymbolicDae> run();
};

std::optional<SymbolicDae> Builder::run() {
  dae.name = flat.name;
  dae.time_symbol = flat.time_symbol;
  for (size_t i = 0; i < flat.vars.size(); ++i) {
    const FlatVar& v = flat.vars[i];
    if (v.role == VarRole::Variable)
      unknown_var[v.symbol] = i;
    else if (v.role == VarRole::Input)
      input_var[v.symbol] = i;
    else if (v.role == VarRole::Discrete)
      dae.discretes.push_back(v.symbol);
    else
      dae.parameters.push_back(v.symbol);
    if (v.start) start[v.symbol] = v.start;
    if (v.role == VarRole::Variable && v.fixed_given && !v.fixed) {
      free_start.insert(v.symbol);
      free_span[v.symbol] = v.start_span.valid() ? v.start_span : v.span;
    }
  }
  eqs.reserve(flat.equations.size());
  for (FlatEquation& e : flat_equations)
    eqs.push_back({e.residual, e.span, std::move(e.text), true, e.role, e.group, e.param,
                   std::move(e.subject)});
  std::vector<FlatEquation>().swap(flat_equations);
  if (unknown_var.empty() && eqs.empty()) {
    diags.report(DiagKind::no_unknowns, flat.span, {});
    return std::nullopt;
  }
  {
    // the count and the structure are checked on the system as written, before elimination
    std::vector<size_t> all(eqs.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    std::vector<uint32_t> unknowns;
    for (const auto& v : flat.vars)
      if (v.role == VarRole::Variable) unknowns.push_back(v.symbol);
    if (!check_matching(all, unknowns)) return std::nullopt;
  }

  // ---- alias and explicit-auxiliary elimination, to a fixpoint
  for (bool changed = true; changed;) {
    changed = false;
    for (auto& eq : eqs) {
      if (!eq.alive) continue;
      eq.r = resolve(eq.r);
      if (eq.r->is_const()) continue;  // reported below
      if (try_eliminate(eq)) {
        eq.alive = false;
        changed = true;
      }
    }
  }
  for (auto& eq : eqs)
    if (eq.alive) eq.r = resolve(eq.r);
  for (auto& el : dae.eliminated) el.value = resolve(el.value);

  // equations that became 0 = c
  bool bad = false;
  for (auto& eq : eqs) {
    if (!eq.alive || !eq.r->is_const()) continue;
    if (eq.r->value == 0.0) {
      diags.report(DiagKind::structurally_singular, eq.span,
                   {"this equation is redundant (it reduces to 0 = 0 after eliminating aliases)"});
    } else {
      diags.report(
          DiagKind::structurally_singular, eq.span,
          {fmt::format("this equation is contradictory (it reduces to 0 = {})", eq.r->value)});
    }
    bad = true;
  }
  if (bad) return std::nullopt;

  // remaining unknowns in declaration order, with their highest derivative order
  std::vector<uint32_t> remaining;
  for (size_t i = 0; i < flat.vars.size(); ++i) {
    const FlatVar& v = flat.vars[i];
    if (v.role == VarRole::Variable && !repl.count(v.symbol)) remaining.push_back(v.symbol);
  }
  std::unordered_map<uint32_t, int> order;
  for (uint32_t s : remaining) order[s] = -1;
  auto scan_orders = [&] {
    for (auto& [s, o] : order) o = -1;
    for (const auto& eq : eqs) {
      if (!eq.alive) continue;
      for (uint32_t s : sym::free_symbols(eq.r)) {
        auto [b, k] = base_of(s);
        if (auto it = order.find(b); it != order.end()) it->second = std::max(it->second, k);
      }
    }
    // joint coordinates are second order even when no inertia depends on their acceleration
    // (a massless link in a loop): the index-reduced closure then determines it
    for (auto& [s, o] : order)
      if (auto it = unknown_var.find(s);
          it != unknown_var.end() && flat.vars[it->second].second_order)
        o = std::max(o, 2);
  };
  scan_orders();

  // order reduction: der^k(x) with k > 2 gets auxiliary unknowns
  for (size_t i = 0; i < remaining.size(); ++i) {
    uint32_t x = remaining[i];
    if (order[x] <= 2) continue;
    // w := der(x) as a new unknown: replace der^j(x) by der^(j-1)(w) for j >= 1
    uint32_t w = cx.new_symbol(cx.symbol_name(ders.der(x)));
    std::unordered_map<uint32_t, Expr> sub;
    uint32_t dx = ders.der(x), dw = w;
    while (true) {
      sub[dx] = cx.symbol(dw);
      // start values of derivatives move with them: der^j(x) is der^(j-1)(w)
      if (dw != w && der_start.count(dx)) der_start[dw] = der_start[dx];
      if (dw != w && free_der_start.count(dx)) {
        free_der_start.insert(dw);
        free_span.emplace(dw, free_span[dx]);
      }
      if (!ders.has_der(dx)) break;
      dx = ders.der(dx);
      dw = ders.der(dw);
    }
    for (auto& eq : eqs)
      if (eq.alive) eq.r = sym::substitute(cx, eq.r, sub);
    for (auto& el : dae.eliminated) el.value = sym::substitute(cx, el.value, sub);
    Eq& added = eqs.emplace_back();
    added.r = cx.sub(cx.symbol(w), cx.symbol(ders.der(x)));
    added.span = flat.vars[unknown_var.at(x)].span;
    added.text = "der(" + flat.vars[unknown_var.at(x)].name + ") (order reduction)";
    if (der_start.count(ders.der(x))) start[w] = der_start[ders.der(x)];
    if (free_der_start.count(ders.der(x))) {
      free_start.insert(w);
      free_span.emplace(w, free_span[ders.der(x)]);
    }
    order_subs.push_back(std::move(sub));
    unknown_var[w] = unknown_var.at(x);
    remaining.push_back(w);
    order[w] = -1;
    scan_orders();
  }

  // discrete unknowns must have been eliminated
  for (uint32_t s : remaining) {
    const FlatVar& v = flat.vars[unknown_var.at(s)];
    if (v.type != ScalarType::Real && order[s] >= 0) {
      diags.report(DiagKind::discrete_unknown, v.span,
                   {v.type == ScalarType::Integer ? "Integer" : "Boolean", v.name});
      bad = true;
    }
  }
  if (bad) return std::nullopt;

  std::vector<size_t> live;
  for (size_t i = 0; i < eqs.size(); ++i)
    if (eqs[i].alive) live.push_back(i);

  // unknowns that appear in no equation
  std::vector<uint32_t> unknowns;
  for (uint32_t s : remaining) unknowns.push_back(s);
  auto var_name = [&](uint32_t s) {
    return s < cx.symbol_count() ? cx.symbol_name(s) : std::string("?");
  };
  auto var_span = [&](uint32_t s) { return flat.vars[unknown_var.at(s)].span; };

  if (!check_matching(live, unknowns)) return std::nullopt;

  // ---- classification (order 2: ODE2, 1: ODE1, 0: algebraic; -1 cannot happen after matching)
  {  // the vectors of 10^5 elements are not grown by doubling (up to twice their size held)
    size_t n[3] = {0, 0, 0};
    for (uint32_t s : unknowns) ++n[order[s] == 2 ? 0 : order[s] == 1 ? 1 : 2];
    dae.q.reserve(n[0]);
    dae.y.reserve(n[1]);
    dae.z.reserve(n[2]);
  }
  for (uint32_t s : unknowns) {
    DaeUnknown u;
    u.name = var_name(s);
    if (unknown_var.count(s))
      u.name = s == flat.vars[unknown_var.at(s)].symbol ? flat.vars[unknown_var.at(s)].name
                                                        : cx.symbol_name(s);
    u.symbol = s;
    u.span = var_span(s);
    int o = order[s];
    if (start.count(s)) u.start = start[s];
    u.free_start = free_start.count(s) != 0;
    if (u.free_start) u.free_span = free_span[s];
    if (o >= 1) u.d1 = ders.der(s);
    if (o == 2) {
      u.kind = UnknownKind::ODE2;
      u.d2 = ders.der(u.d1);
      if (der_start.count(u.d1)) u.start_der = der_start[u.d1];
      u.free_start_der = free_der_start.count(u.d1) != 0;
      u.fixed_start_der = fixed_der_start.count(u.d1) != 0;
      if (u.free_start_der) u.free_der_span = free_span[u.d1];
      dae.q.push_back(u);
    } else if (o == 1) {
      u.kind = UnknownKind::ODE1;
      dae.y.push_back(u);
    } else {
      u.kind = UnknownKind::Algebraic;
      dae.z.push_back(u);
    }
  }
  // the unknowns have their spans and starts: the tables of the elimination go before the
  // equations are made (only eliminate() and this classification read them; 10^5 entries each
  // in a model of 10^5 equations)
  std::unordered_map<uint32_t, size_t>().swap(unknown_var);
  std::unordered_map<uint32_t, Expr>().swap(start);
  std::unordered_map<uint32_t, Expr>().swap(der_start);
  for (auto* set : {&free_start, &free_der_start, &fixed_der_start})
    std::unordered_set<uint32_t>().swap(*set);
  std::unordered_map<uint32_t, Span>().swap(free_span);

  // ---- linearity in the highest derivatives
  std::vector<uint32_t> highest;
  for (const auto& u : dae.q) highest.push_back(u.d2);
  for (const auto& u : dae.y) highest.push_back(u.d1);
  std::unordered_set<uint32_t> highest_set(highest.begin(), highest.end());
  // Structural degree in the highest derivatives, one pass over the DAG shared by all
  // equations: 0 free of them, 1 affine in them, 2 possibly not. An equation of degree <= 1 is
  // linear in them for certain; only the others are differentiated (once per derivative in
  // them), which is what made this check cubic in the size of a condensed multibody model.
  std::vector<int8_t> degree_memo(cx.node_count(), -1);
  std::function<int(Expr)> degree = [&](Expr e) -> int {
    if (e->id < degree_memo.size() && degree_memo[e->id] >= 0) return degree_memo[e->id];
    int d = 0;
    switch (e->op) {
      case sym::Op::Const:
        break;
      case sym::Op::Symbol:
        d = highest_set.count(e->symbol) ? 1 : 0;
        break;
      case sym::Op::Add:
        for (Expr c : e->children()) d = std::max(d, degree(c));
        break;
      case sym::Op::Mul:
        for (Expr c : e->children()) d = std::min(2, d + degree(c));
        break;
      case sym::Op::Select:
        d = degree(e->arg(0)) == 0 ? std::max(degree(e->arg(1)), degree(e->arg(2))) : 2;
        break;
      default:  // any other function of something that depends on them
        for (Expr c : e->children())
          if (degree(c) > 0) d = 2;
        break;
    }
    if (e->id < degree_memo.size()) degree_memo[e->id] = static_cast<int8_t>(d);
    return d;
  };
  for (size_t i : live) {
    const Eq& eq = eqs[i];
    if (degree(eq.r) <= 1) continue;
    for (uint32_t s : sym::free_symbols(eq.r)) {
      if (!highest_set.count(s)) continue;
      Expr d = sym::diff(cx, eq.r, s);
      for (uint32_t t : sym::free_symbols(d)) {
        if (highest_set.count(t)) {
          diags.report(DiagKind::not_linear_in_derivative, eq.span, {cx.symbol_name(t)});
          note_eliminations_that_brought(eq, t);
          bad = true;
          break;
        }
      }
    }
  }
  if (bad) return std::nullopt;

  // ---- equation levels and the index-reduced initial system
  std::unordered_set<uint32_t> zs, qs, qds, ys;
  for (const auto& u : dae.z) zs.insert(u.symbol);
  for (const auto& u : dae.q) {
    qs.insert(u.symbol);
    qds.insert(u.d1);
  }
  for (const auto& u : dae.y) ys.insert(u.symbol);
  dae.equations.reserve(live.size());  // not grown by doubling: 10^5 of them are 13 MB
  for (size_t i : live) {
    Eq& eq = eqs[i];
    DaeEquation de;
    de.residual = eq.r;
    de.span = eq.span;
    de.text = std::move(eq.text);  // eqs go right after this loop
    de.role = eq.role;
    de.param = eq.param;
    de.group = eq.group;
    de.subject = std::move(eq.subject);
    bool has_high = false, has_z = false, has_qd = false, has_q = false, has_y = false;
    for (uint32_t s : sym::free_symbols(eq.r)) {
      has_high |= highest_set.count(s) != 0;
      has_z |= zs.count(s) != 0;
      has_qd |= qds.count(s) != 0;
      has_q |= qs.count(s) != 0;
      has_y |= ys.count(s) != 0;
    }
    const bool constraint = !(has_high || has_z || (!has_qd && !has_q && !has_y));
    // an equation with an input is differentiated when it is a constraint, or when it determines
    // an algebraic unknown whose derivative is used (a prescribed motion `x = u`, der(x) = v)
    const int64_t u = input_in(eq.r);
    bool differentiated = u >= 0 && constraint;
    if (u >= 0 && !has_high)
      for (uint32_t s : sym::free_symbols(eq.r)) differentiated |= zs.count(s) && ders.has_der(s);
    if (!differentiated && !constraint) {
      de.level = has_high ? rt::EquationLevel::Dynamic : rt::EquationLevel::Algebraic;
      de.init_residual = eq.r;
    } else if (differentiated) {
      // index reduction differentiates this constraint (or the variable's definition), and
      // with it the input
      const FlatVar& in = flat.vars[input_var.at(static_cast<uint32_t>(u))];
      diags.report(DiagKind::input_differentiated, eq.span, {in.name});
      diags.note(in.span, "declared as an input of the model here");
      diags.help(
          "a constraint on an input is differentiated for index reduction, but an input is held "
          "constant over a step, so its time derivative is unknown; let the input drive the "
          "motion through a force or torque, make '" +
          in.name + "' a parameter, or write the motion as a function of time in the model");
      bad = true;
      continue;
    } else if (has_qd || has_y) {
      de.level = rt::EquationLevel::Velocity;
      de.init_residual = ders.total_derivative(eq.r);
    } else {
      de.level = rt::EquationLevel::Position;
      de.velocity_residual = ders.total_derivative(eq.r);
      de.init_residual = ders.total_derivative(de.velocity_residual);
    }
    dae.equations.push_back(std::move(de));
  }
  if (bad) return std::nullopt;
  // what the classification and the levels needed goes before the outputs are made (a model of
  // 10^5 equations holds 10^5 entries in each), and so do the pass's equations (their texts,
  // roles and subjects are in the DAE's equations now)
  std::vector<Eq>().swap(eqs);
  std::vector<size_t>().swap(live);
  std::vector<uint32_t>().swap(remaining);
  std::vector<uint32_t>().swap(unknowns);
  std::vector<uint32_t>().swap(highest);
  std::vector<int8_t>().swap(degree_memo);
  std::unordered_map<uint32_t, int>().swap(order);
  for (auto* set : {&highest_set, &zs, &qs, &qds, &ys}) std::unordered_set<uint32_t>().swap(*set);

  // the initial system must be regular in [qdd | yd | z]
  {
    std::unordered_map<uint32_t, int> col;
    int j = 0;
    for (const auto& u : dae.q) col[u.d2] = j++;
    for (const auto& u : dae.y) col[u.d1] = j++;
    for (const auto& u : dae.z) col[u.symbol] = j++;
    std::vector<std::vector<int>> a(dae.equations.size());
    for (size_t i = 0; i < dae.equations.size(); ++i) {
      std::set<int> cs;
      for (uint32_t s : sym::free_symbols(dae.equations[i].init_residual))
        if (auto it = col.find(s); it != col.end()) cs.insert(it->second);
      a[i].assign(cs.begin(), cs.end());
    }
    auto m = bipartite_matching(a, j);
    for (size_t i = 0; i < m.size(); ++i) {
      if (m[i] >= 0) continue;
      diags.report(DiagKind::initial_singular, dae.equations[i].span,
                   {"this equation does not determine any highest derivative or algebraic "
                    "variable, even after differentiation (the DAE has an index above 3, or a "
                    "constraint acts on first-order variables)"});
      return std::nullopt;
    }
  }

  // ---- outputs: every model variable, declaration order
  std::unordered_map<std::string_view, int32_t> eliminated_by_name;
  for (size_t i = 0; i < dae.eliminated.size(); ++i)
    eliminated_by_name.emplace(dae.eliminated[i].name, static_cast<int32_t>(i));
  dae.outputs.reserve(flat.vars.size());
  for (const auto& v : flat.vars) {
    if (v.hidden) continue;  // the compiler's own (the counters of sample())
    if (v.role == VarRole::Input || v.role == VarRole::Discrete) {  // a column reading its slot
      dae.outputs.push_back(
          {v.name, cx.symbol(v.symbol), v.output_role, v.span, -1, v.unit, v.description, false});
      continue;
    }
    if (v.role != VarRole::Variable) continue;
    const auto el = eliminated_by_name.find(v.name);
    dae.outputs.push_back({v.name, resolve(cx.symbol(v.symbol)), v.output_role, v.span,
                           el == eliminated_by_name.end() ? -1 : el->second, v.unit, v.description,
                           v.output});
  }
  dae.pre_symbols = flat.pre_symbols;
  dae.initial_symbol = flat.initial_symbol;
  dae.terminal_symbol = flat.terminal_symbol;
  if (!resolve_whens()) return std::nullopt;
  if (!resolve_initial_equations()) return std::nullopt;
  for (Expr e : flat.no_event) dae.no_event.push_back(resolve(e));
  dae.body_balance = flat.body_balance;
  for (auto& r : dae.body_balance.rows) r = resolve(r);
  for (auto& w : dae.body_balance.wrenches) w = resolve(w);
  return std::move(dae);
}

}  // namespace

std::optional<SymbolicDae> build_dae(FlatModel& flat, sym::Context& cx, DerivativeTable& ders,
                                     DiagnosticEngine& diags) {
  Builder b{flat, flat.equations, cx, ders, diags, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {},
            {}};
  return b.run();
}

void print_dae(std::ostream& os, const sym::Context& cx, const SymbolicDae& dae) {
  os << "dae " << dae.name << ": " << dae.q.size() << " ODE2, " << dae.y.size() << " ODE1, "
     << dae.z.size() << " algebraic; " << dae.equations.size() << " equations, "
     << dae.eliminated.size() << " eliminated\n";
  auto loc = [](Span s) {
    return s.valid() ? fmt::format("  @{}:{}", s.line, s.col) : std::string();
  };
  for (const auto& u : dae.q) os << "  ODE2       " << u.name << loc(u.span) << "\n";
  for (const auto& u : dae.y) os << "  ODE1       " << u.name << loc(u.span) << "\n";
  for (const auto& u : dae.z) os << "  algebraic  " << u.name << loc(u.span) << "\n";
  for (uint32_t d : dae.discretes) os << "  discrete   " << cx.symbol_name(d) << "\n";
  for (const auto& e : dae.eliminated)
    os << "  eliminated " << e.name << " = " << sym::to_string(cx, e.value) << "  (" << e.how << ")"
       << loc(e.span) << "\n";
  static const char* levels[] = {"dynamic", "velocity", "position", "algebraic"};
  os << "equations\n";
  for (const auto& e : dae.equations) {
    os << "  [" << levels[static_cast<int>(e.level)] << "] 0 = " << sym::to_string(cx, e.residual)
       << loc(e.span) << "\n";
    if (e.init_residual != e.residual)
      os << "      initial: 0 = " << sym::to_string(cx, e.init_residual) << "\n";
  }
  if (!dae.initial_equations.empty()) os << "initial equations\n";
  for (const auto& e : dae.initial_equations)
    os << "  0 = " << sym::to_string(cx, e.residual) << loc(e.span) << "\n";
  for (const auto* list : {&dae.q, &dae.y})
    for (const auto& u : *list) {
      if (u.free_start) os << "  free start  " << u.name << "\n";
      if (u.free_start_der) os << "  free start  der(" << u.name << ")\n";
    }
  for (const auto& w : dae.whens)
    for (size_t b = 0; b < w.branches.size(); ++b) {
      os << (b == 0 ? "when " : "elsewhen ") << sym::to_string(cx, w.branches[b].condition)
         << (b == 0 ? loc(w.span) : std::string()) << "\n";
      for (const auto& r : w.branches[b].reinits)
        os << (r.discrete ? "  " + r.name + " := " : "  reinit(" + r.name + ", ")
           << sym::to_string(cx, r.value) << (r.discrete ? "" : ")") << "\n";
    }
}

}  // namespace mbs
