// Events: when-equations with their reinit and assignments, if-equations whose conditions
// change, pre/edge/change, sample and the event-generating floor, and the checks of discrete
// variables at the end.
#include "compiler/flatten/Flattener.h"

namespace mbs::flattening {

// ---- when-equations (docs/language.md, "Events")

// True when e depends on time, a variable, a derivative or an input (not only on parameters).
bool Flattener::varies_in_time(Expr e) const {
  for (uint32_t sy : sym::free_symbols(e)) {
    auto it = flat_.var_of_symbol.find(sy);
    if (sy == flat_.time_symbol || static_cast<int64_t>(sy) == flat_.initial_symbol ||
        static_cast<int64_t>(sy) == flat_.terminal_symbol || ders_.integral_of(sy) >= 0 ||
        (it != flat_.var_of_symbol.end() && flat_.vars[it->second].role != VarRole::Parameter &&
         flat_.vars[it->second].role != VarRole::Constant))
      return true;
  }
  return false;
}

namespace {

// A connect or when anywhere in the equations (not allowed under a condition that changes).
const ast::Equation* connect_or_when(const ast::EquationList& eqs) {
  for (const auto& e : eqs) {
    if (e.kind == ast::EquationKind::Connect || e.kind == ast::EquationKind::When) return &e;
    if (const ast::Equation* in = connect_or_when(e.body)) return in;
    for (const auto& b : e.branches)
      if (const ast::Equation* in = connect_or_when(b)) return in;
  }
  return nullptr;
}

}  // namespace

// An if-equation whose conditions change during the simulation (they depend on time or on
// variables): every branch must give as many equations, and there must be an else branch; the
// k-th equation is select(c1, r1_k, select(c2, r2_k, ... r_else_k)). The solvers stop at each
// change of a condition (docs/solvers.md, "Events"). Returns false for an if-equation whose
// conditions are all parameter expressions (chosen at compile time).
bool Flattener::add_switched_if(const ast::Equation& eq, Scope s, const std::string& origin) {
  std::vector<Expr> conditions;
  bool switched = false;
  for (const auto& c : eq.conditions) {
    Value cv = eval(*c, s);
    check_condition(cv, c->span, "an if-equation");
    conditions.push_back(scalar_of(cv, c->span, "an if-equation condition"));
    switched |= varies_in_time(conditions.back());
  }
  if (!switched) return false;
  if (when_body_) return add_when_if(eq, s, conditions, origin);
  if (eq.branches.size() != eq.conditions.size() + 1) {
    diags_.report(DiagKind::if_equation_unbalanced, eq.span, {"it needs an else branch"});
    diags_.help("add 'else' with as many equations as the other branches");
    throw BuildError{};
  }
  for (const auto& b : eq.branches)
    if (const ast::Equation* bad = connect_or_when(b))
      fail(DiagKind::if_equation_unbalanced, bad->span,
           {"it cannot contain a connect or a when-equation"});
  std::vector<std::vector<FlatEquation>> branch_equations;
  for (const auto& b : eq.branches) {
    std::vector<FlatEquation> saved;
    saved.swap(flat_.equations);
    try {
      add_equations(b, s, origin);
    } catch (...) {
      saved.swap(flat_.equations);
      throw;
    }
    saved.swap(flat_.equations);
    branch_equations.push_back(std::move(saved));
    if (branch_equations.back().size() != branch_equations.front().size()) {
      diags_.report(DiagKind::if_equation_unbalanced, eq.span,
                    {fmt::format("each branch needs as many equations as the others; they have "
                                 "{} and {}",
                                 branch_equations.front().size(), branch_equations.back().size())});
      throw BuildError{};
    }
  }
  const std::string text = source_text(eq.span);
  const size_t n = branch_equations.front().size();
  for (size_t k = 0; k < n; ++k) {
    Expr r = branch_equations.back()[k].residual;
    for (size_t i = conditions.size(); i-- > 0;)
      r = cx_.select(conditions[i], branch_equations[i][k].residual, r);
    FlatEquation fe;
    fe.residual = r;
    fe.span = eq.span;
    fe.text = n > 1 ? fmt::format("{}  (equation {} of each branch)", text, k + 1) : text;
    fe.origin = origin;
    flat_.equations.push_back(std::move(fe));
  }
  return true;
}

void Flattener::add_when(const ast::Equation& eq, Scope s, const std::string& origin) {
  FlatWhen w;
  w.span = eq.span;
  w.origin = origin;
  for (size_t i = 0; i < eq.branches.size() && i < eq.conditions.size(); ++i) {
    const ast::Expr& ce = *eq.conditions[i];
    FlatWhenBranch b;
    when_condition_ = true;
    try {
      Value cv = eval(ce, s);
      check_condition(cv, ce.span, "a when-equation");
      b.condition = scalar_of(cv, ce.span, "a when-condition");
    } catch (...) {
      when_condition_ = false;
      throw;
    }
    when_condition_ = false;
    b.condition_span = ce.span;
    b.condition_text = source_text(ce.span);
    if (!varies_in_time(b.condition)) {
      diags_.report(DiagKind::when_condition_constant, ce.span);
      diags_.help("a when-condition is a relation of time or of variables, e.g. 'x < 0'");
      throw BuildError{};
    }
    when_body_ = &b;
    try {
      add_equations(eq.branches[i], s, origin);
    } catch (...) {
      when_body_ = nullptr;
      throw;
    }
    when_body_ = nullptr;
    w.branches.push_back(std::move(b));
  }
  flat_.whens.push_back(std::move(w));
}

void Flattener::add_reinit(const ast::Equation& eq, Scope s) {
  const ast::Expr& call = *eq.rhs;
  std::string name;
  for (const auto& part : call.ref) name += (name.empty() ? "" : ".") + part.name;
  if (name == "assert" || name == "terminate") {
    add_assert(call, s, nullptr, nullptr, false);
    return;
  }
  if (name != "reinit") {
    diags_.report(DiagKind::call_equation, eq.span, {name});
    diags_.help("an equation has the form 'expression = expression;'");
    throw BuildError{};
  }
  if (!when_body_) {
    diags_.report(DiagKind::reinit_outside_when, eq.span);
    diags_.help(
        "reinit(x, e) sets the state x to e at an event: write it inside 'when c then ... "
        "end when;'");
    throw BuildError{};
  }
  const bool named = std::any_of(call.arg_names.begin(), call.arg_names.end(),
                                 [](const std::string& n) { return !n.empty(); });
  if (call.args.size() != 2 || named)
    fail(DiagKind::bad_call, call.span, {"reinit takes two arguments: reinit(x, e)"});
  const ast::Expr& target = *call.args[0];
  if (target.kind != ast::ExprKind::Ref)
    fail(DiagKind::reinit_target, target.span,
         {"'" + expr_to_string(target) + "' is an expression"});
  Value x = eval(target, s);
  Value value = eval(*call.args[1], s);
  if (x.is_string || value.is_string || x.shape != value.shape)
    fail(DiagKind::shape_mismatch, eq.span,
         {fmt::format("reinit of a value of shape {} by one of shape {}", shape_str(x.shape),
                      shape_str(value.shape))});
  const std::string text = source_text(eq.span);
  for (size_t i = 0; i < x.size(); ++i) {
    Expr e = x.elems[i];
    auto it = e->is_symbol() ? flat_.var_of_symbol.find(e->symbol) : flat_.var_of_symbol.end();
    if (it != flat_.var_of_symbol.end() && flat_.vars[it->second].role == VarRole::Discrete)
      fail(DiagKind::reinit_target, target.span,
           {"'" + flat_.vars[it->second].name +
            "' is a discrete variable: a when-equation assigns it with '" +
            flat_.vars[it->second].name + " = e'"});
    if (it == flat_.var_of_symbol.end() || flat_.vars[it->second].role != VarRole::Variable ||
        flat_.vars[it->second].type != ScalarType::Real)
      fail(DiagKind::reinit_target, target.span,
           {it == flat_.var_of_symbol.end()
                ? "'" + expr_to_string(target) + "' is not a variable"
                : "'" + flat_.vars[it->second].name + "' is a parameter, constant or input"});
    for (const FlatReinit& r : when_body_->reinits)
      if (r.var == e->symbol) fail(DiagKind::reinit_twice, eq.span, {flat_.vars[it->second].name});
    FlatReinit r;
    r.var = e->symbol;
    r.value = value.elems[i];
    r.span = eq.span;
    r.text = x.size() > 1 ? fmt::format("{}  (element {})", text, i + 1) : text;
    when_body_->reinits.push_back(std::move(r));
  }
}

// `x = e` inside a when-equation: x becomes a discrete variable that takes e at the event
// (finish_discrete checks the rest).
void Flattener::add_assignment(const ast::Equation& eq, Scope s) {
  const ast::Expr& target = *eq.lhs;
  if (target.kind != ast::ExprKind::Ref)
    fail(DiagKind::when_assign_target, target.span,
         {"'" + expr_to_string(target) + "' is an expression"});
  Value x = eval(target, s);
  Value value = eval(*eq.rhs, s);
  if (x.is_string || value.is_string || x.shape != value.shape)
    fail(DiagKind::shape_mismatch, eq.span,
         {fmt::format("the two sides of the equation have shapes {} and {}", shape_str(x.shape),
                      shape_str(value.shape))});
  const std::string text = source_text(eq.span);
  const size_t when_index = flat_.whens.size();  // the when being filled is pushed at its end
  for (size_t i = 0; i < x.size(); ++i) {
    const Expr e = x.elems[i];
    const auto it =
        e->is_symbol() ? flat_.var_of_symbol.find(e->symbol) : flat_.var_of_symbol.end();
    if (it == flat_.var_of_symbol.end() || (flat_.vars[it->second].role != VarRole::Variable &&
                                            flat_.vars[it->second].role != VarRole::Discrete))
      fail(DiagKind::when_assign_target, target.span,
           {it == flat_.var_of_symbol.end()
                ? "'" + expr_to_string(target) + "' is not a variable"
                : "'" + flat_.vars[it->second].name + "' is a parameter, constant or input"});
    const std::string& name = flat_.vars[it->second].name;
    check_value_type(it->second, value, eq.rhs->span, "the value");
    for (const FlatReinit& a : when_body_->assigns)
      if (a.var == e->symbol)
        fail(DiagKind::when_assign_twice, eq.span, {name, "twice by the same branch"});
    if (auto [at, fresh] = assigned_in_when_.try_emplace(e->symbol, when_index, eq.span);
        !fresh && at->second.first != when_index) {
      diags_.report(DiagKind::when_assign_twice, eq.span, {name, "by two when-equations"});
      diags_.note(at->second.second, "first assigned here");
      diags_.help(
          "a discrete variable is assigned by one when-equation only; give it one when with "
          "'elsewhen' branches for the other conditions");
      throw BuildError{};
    }
    FlatReinit a;
    a.var = e->symbol;
    a.value = value.elems[i];
    a.span = eq.span;
    a.text = x.size() > 1 ? fmt::format("{}  (element {})", text, i + 1) : text;
    when_body_->assigns.push_back(std::move(a));
  }
}

// An if-equation inside a when-equation whose conditions are evaluated at the event: every
// variable that a branch assigns (reinitialises) takes select(c1, e1, select(c2, ...)), where a
// branch that does not assign it keeps its value (pre(x) of a discrete x, x of a state).
bool Flattener::add_when_if(const ast::Equation& eq, Scope s, const std::vector<Expr>& conditions,
                            const std::string& origin) {
  FlatWhenBranch* outer = when_body_;
  std::vector<FlatWhenBranch> parts(eq.branches.size());
  for (size_t i = 0; i < eq.branches.size(); ++i) {
    when_body_ = &parts[i];
    try {
      add_equations(eq.branches[i], s, origin);
    } catch (...) {
      when_body_ = outer;
      throw;
    }
  }
  when_body_ = outer;
  // the targets in order of first appearance, the assignments (reinits) of each branch by target
  const auto merge = [&](bool assigns) {
    std::vector<uint32_t> targets;
    std::vector<const FlatReinit*> first;
    for (const FlatWhenBranch& p : parts)
      for (const FlatReinit& r : assigns ? p.assigns : p.reinits)
        if (std::find(targets.begin(), targets.end(), r.var) == targets.end()) {
          targets.push_back(r.var);
          first.push_back(&r);
        }
    for (size_t t = 0; t < targets.size(); ++t) {
      const uint32_t x = targets[t];
      const auto value_in = [&](size_t b) -> Expr {
        if (b < parts.size())
          for (const FlatReinit& r : assigns ? parts[b].assigns : parts[b].reinits)
            if (r.var == x) return r.value;
        return assigns ? cx_.symbol(pre_symbol_of(x)) : cx_.symbol(x);
      };
      if (assigns) pre_uses_.push_back({x, "pre", first[t]->span, true});
      // no else branch: the value is kept when no condition holds
      Expr v = value_in(conditions.size());
      for (size_t i = conditions.size(); i-- > 0;) v = cx_.select(conditions[i], value_in(i), v);
      std::vector<FlatReinit>& into = assigns ? outer->assigns : outer->reinits;
      for (const FlatReinit& r : into)
        if (r.var == x)
          fail(assigns ? DiagKind::when_assign_twice : DiagKind::reinit_twice, first[t]->span,
               assigns ? std::vector<std::string>{cx_.symbol_name(x), "twice by the same branch"}
                       : std::vector<std::string>{cx_.symbol_name(x)});
      FlatReinit r = *first[t];
      r.value = v;
      r.span = eq.span;
      r.text = source_text(eq.span);
      into.push_back(std::move(r));
    }
  };
  merge(true);
  merge(false);
  return true;
}

uint32_t Flattener::pre_symbol_of(uint32_t var) {
  auto it = pre_symbol_.find(var);
  if (it != pre_symbol_.end()) return it->second;
  const uint32_t p = cx_.new_symbol("pre(" + cx_.symbol_name(var) + ")");
  ders_.set_constant(p);
  pre_symbol_.emplace(var, p);
  return p;
}

// A discrete Real that the compiler introduces (no result column, no name a model can write).
uint32_t Flattener::hidden_discrete(const std::string& name, Span span) {
  FlatVar fv;
  fv.name = name;
  fv.symbol = cx_.new_symbol(name);
  fv.role = VarRole::Discrete;
  fv.hidden = true;
  fv.span = span;
  ders_.set_constant(fv.symbol);
  flat_.var_of_symbol[fv.symbol] = flat_.vars.size();
  flat_.vars.push_back(std::move(fv));
  scalars_.push_back(nullptr);
  binding_state_.push_back(0);
  resolved_state_.push_back(0);
  resolved_.push_back(nullptr);
  return flat_.vars.back().symbol;
}

// sample(t0, T) is `change(n)` of a hidden counter n of the instants t0 + i T passed, kept by a
// hidden when-equation with k, the index of the next instant (docs/language.md, "Discrete
// variables"):
//   when initial() then      // the instants before the start are skipped; one at it fires
//     k = i0 + at;  n = pre(n) + at;      i0 = max(0, ceil((time - t0)/T - d)),
//   elsewhen time >= t0 + k T then        at = (t0 + i0 T <= time + d T), d = 1e-9
//     k = pre(k) + 1;  n = pre(n) + 1;
//   end when;
// Each instant is computed from t0 and T, so the instants do not drift over a long run.
Expr Flattener::sample_trigger(Expr start, Expr interval, Span span) {
  const auto key = std::make_pair(start->id, interval->id);
  if (auto it = sample_trigger_.find(key); it != sample_trigger_.end()) return it->second;
  const std::string base = fmt::format("$sample{}", sample_trigger_.size() + 1);
  const uint32_t k = hidden_discrete(base + ".next", span);
  const uint32_t n = hidden_discrete(base + ".count", span);
  const uint32_t pk = pre_symbol_of(k), pn = pre_symbol_of(n);
  pre_uses_.push_back({k, "pre", span, true});
  pre_uses_.push_back({n, "pre", span, true});
  if (flat_.initial_symbol < 0) {
    flat_.initial_symbol = cx_.new_symbol("initial()");
    ders_.set_constant(static_cast<uint32_t>(flat_.initial_symbol));
  }
  const Expr time = cx_.symbol(flat_.time_symbol);
  const Expr d = cx_.num(1e-9);
  const Expr x = cx_.sub(cx_.div(cx_.sub(time, start), interval), d);
  const Expr i0 =
      cx_.binary(sym::Op::Max, cx_.zero(), cx_.neg(cx_.unary(sym::Op::Floor, cx_.neg(x))));
  const Expr at = cx_.select(cx_.binary(sym::Op::Le, cx_.add(start, cx_.mul(i0, interval)),
                                        cx_.add(time, cx_.mul(d, interval))),
                             cx_.one(), cx_.zero());
  const std::string text = source_text(span);
  const auto assign = [&](uint32_t var, Expr value) {
    FlatReinit a;
    a.var = var;
    a.value = value;
    a.span = span;
    a.text = fmt::format("{} = ...  (counting the instants of {})", cx_.symbol_name(var), text);
    return a;
  };
  FlatWhen w;
  w.span = span;
  FlatWhenBranch b0;
  b0.condition = cx_.symbol(static_cast<uint32_t>(flat_.initial_symbol));
  b0.condition_span = span;
  b0.condition_text = "initial()  (the start of " + text + ")";
  b0.assigns = {assign(k, cx_.add(i0, at)), assign(n, cx_.add(cx_.symbol(pn), at))};
  FlatWhenBranch b1;
  b1.condition = cx_.binary(sym::Op::Ge, time, cx_.add(start, cx_.mul(cx_.symbol(k), interval)));
  b1.condition_span = span;
  b1.condition_text = text;
  b1.assigns = {assign(k, cx_.add(cx_.symbol(pk), cx_.one())),
                assign(n, cx_.add(cx_.symbol(pn), cx_.one()))};
  w.branches.push_back(std::move(b0));
  w.branches.push_back(std::move(b1));
  hidden_whens_.push_back(std::move(w));
  const Expr trigger = cx_.binary(sym::Op::Ne, cx_.symbol(n), cx_.symbol(pn));
  sample_trigger_.emplace(key, trigger);
  return trigger;
}

// floor(u). Where u is a parameter expression, inside a when-equation (evaluated at its event),
// an initial equation, a function, or noEvent(...), it is the plain function. Otherwise it is
// piecewise constant and changes at events, as in Modelica: a hidden discrete k holds it,
//   when initial() then k = floor(u);
//   elsewhen u >= k + 1 or u < k then k = floor(u);
//   end when;
// so every solver locates the instant u reaches the next integer (or falls below k) like any
// crossing, and no step integrates across the jump.
//
// With `truncate`, u truncated toward zero (div): the value select(u >= 0, floor(u), -floor(-u)),
// which stays k while u is in [k, k + 1) for k > 0, in (k - 1, k] for k < 0, in (-1, 1) for k = 0.
Expr Flattener::event_floor(Expr u, Scope s, Span span, bool truncate) {
  const auto plain = [&] {
    const Expr f = cx_.unary(sym::Op::Floor, u);
    if (!truncate) return f;
    return cx_.select(cx_.binary(sym::Op::Ge, u, cx_.zero()), f,
                      cx_.neg(cx_.unary(sym::Op::Floor, cx_.neg(u))));
  };
  if (u->is_const() || !varies_in_time(u) || no_event_depth_ > 0 || s.frame ||
      when_body_ != nullptr || when_condition_ || initial_section_)
    return plain();
  const auto key = std::make_pair(u->id, truncate);
  if (auto it = event_floor_.find(key); it != event_floor_.end()) return it->second;
  const uint32_t k = hidden_discrete(
      fmt::format("${}{}", truncate ? "div" : "floor", event_floor_.size() + 1), span);
  if (flat_.initial_symbol < 0) {
    flat_.initial_symbol = cx_.new_symbol("initial()");
    ders_.set_constant(static_cast<uint32_t>(flat_.initial_symbol));
  }
  const std::string text = source_text(span);
  const auto assign = [&] {
    FlatReinit a;
    a.var = k;
    a.value = plain();
    a.span = span;
    a.text = fmt::format("the value of {} at the event", text);
    return a;
  };
  const Expr kx = cx_.symbol(k);
  FlatWhen w;
  w.span = span;
  FlatWhenBranch b0;
  b0.condition = cx_.symbol(static_cast<uint32_t>(flat_.initial_symbol));
  b0.condition_span = span;
  b0.condition_text = "initial()  (the start of " + text + ")";
  b0.assigns = {assign()};
  FlatWhenBranch b1;
  const Expr up = cx_.binary(sym::Op::Ge, u, cx_.add(kx, cx_.one()));
  if (!truncate) {
    b1.condition = cx_.binary(sym::Op::Or, up, cx_.binary(sym::Op::Lt, u, kx));
  } else {
    const auto both = [&](sym::Op k_op, Expr u_rel) {
      return cx_.binary(sym::Op::And, cx_.binary(k_op, kx, cx_.zero()), u_rel);
    };
    const Expr down = cx_.binary(sym::Op::Le, u, cx_.sub(kx, cx_.one()));
    b1.condition = cx_.binary(
        sym::Op::Or, cx_.binary(sym::Op::Or, both(sym::Op::Ge, up), both(sym::Op::Le, down)),
        cx_.binary(sym::Op::Or, both(sym::Op::Gt, cx_.binary(sym::Op::Lt, u, kx)),
                   both(sym::Op::Lt, cx_.binary(sym::Op::Gt, u, kx))));
  }
  b1.condition_span = span;
  b1.condition_text = text + " reaching the next integer";
  b1.assigns = {assign()};
  w.branches.push_back(std::move(b0));
  w.branches.push_back(std::move(b1));
  hidden_whens_.push_back(std::move(w));
  event_floor_.emplace(key, kx);
  return kx;
}

// At the end of flattening: the variables assigned in when-equations become discrete; pre, edge
// and change are checked (of a continuous x, pre(x) inside a when is x); conditions that compare
// continuous values for equality are refused; each branch's assignments are ordered so that one
// that reads another's new value comes after it (a cycle is an algebraic loop), and the new values
// are substituted into the later assignments and the reinits of the branch.
void Flattener::finish_discrete() {
  for (FlatWhen& w : hidden_whens_) flat_.whens.push_back(std::move(w));
  hidden_whens_.clear();
  std::unordered_set<uint32_t> discrete;
  for (const FlatVar& v : flat_.vars)
    if (v.role == VarRole::Discrete) discrete.insert(v.symbol);
  std::vector<uint32_t> assigned;
  for (const auto& [sym, at] : assigned_in_when_) assigned.push_back(sym);
  std::sort(assigned.begin(), assigned.end());
  for (uint32_t sym : assigned) {
    FlatVar& v = flat_.vars[flat_.var_of_symbol.at(sym)];
    const Span at = assigned_in_when_.at(sym).second;
    if (ders_.has_der(sym)) {
      diags_.report(DiagKind::discrete_defined, at,
                    {v.name, " assigned in this when-equation",
                     "its derivative der(" + v.name + ") is zero, not an unknown"});
      diags_.help("integrate a continuous variable and change it at events with reinit(x, e)");
      throw BuildError{};
    }
    if (v.role == VarRole::Variable) {
      v.role = VarRole::Discrete;
      ders_.set_constant(sym);
    }
    discrete.insert(sym);
  }
  std::vector<std::pair<uint32_t, Span>> defined(continuous_lhs_.begin(), continuous_lhs_.end());
  std::sort(defined.begin(), defined.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [sym, span] : defined) {
    if (!discrete.count(sym)) continue;
    const FlatVar& v = flat_.vars[flat_.var_of_symbol.at(sym)];
    const auto at = assigned_in_when_.find(sym);
    diags_.report(
        DiagKind::discrete_defined, span,
        {v.name,
         at == assigned_in_when_.end() ? " declared discrete" : " assigned in a when-equation",
         "no continuous equation may define it"});
    diags_.note(at == assigned_in_when_.end() ? v.span : at->second.second,
                at == assigned_in_when_.end() ? "declared here" : "assigned here");
    diags_.help(
        "a discrete variable keeps its value between events; to compute a continuous value, use "
        "another variable");
    throw BuildError{};
  }
  // pre, edge and change
  std::unordered_map<uint32_t, Expr> pre_of_continuous;
  std::unordered_set<uint32_t> pre_listed;
  for (const PreUse& u : pre_uses_) {
    const uint32_t p = pre_symbol_.at(u.var);
    if (discrete.count(u.var)) {
      if (pre_listed.insert(u.var).second) flat_.pre_symbols.emplace_back(u.var, p);
      continue;
    }
    const std::string& name = flat_.vars[flat_.var_of_symbol.at(u.var)].name;
    if (u.op != "pre")
      fail(DiagKind::event_operator_argument, u.span,
           {u.op, "'" + name +
                      "' is continuous; edge and change take a discrete variable (assigned in a "
                      "when-equation, or declared discrete)"});
    if (!u.in_when) {
      diags_.report(DiagKind::pre_outside_when, u.span);
      diags_.help(
          "pre(x) of a continuous x is its value just before an event; it is used in a "
          "when-equation (pre of a discrete variable can be used anywhere)");
      throw BuildError{};
    }
    pre_of_continuous.emplace(p, cx_.symbol(u.var));
  }
  const auto continuous_symbol = [&](uint32_t sy) {
    if (sy == flat_.time_symbol || ders_.integral_of(sy) >= 0) return true;
    auto it = flat_.var_of_symbol.find(sy);
    return it != flat_.var_of_symbol.end() && (flat_.vars[it->second].role == VarRole::Variable ||
                                               flat_.vars[it->second].role == VarRole::Input);
  };
  for (FlatWhen& w : flat_.whens) {
    for (FlatWhenBranch& b : w.branches) {
      if (!pre_of_continuous.empty()) {
        b.condition = sym::substitute(cx_, b.condition, pre_of_continuous);
        for (FlatReinit& r : b.reinits) r.value = sym::substitute(cx_, r.value, pre_of_continuous);
        for (FlatReinit& a : b.assigns) a.value = sym::substitute(cx_, a.value, pre_of_continuous);
      }
      // equality of continuous values cannot be located (of discrete ones it is an event test)
      for (Expr n : sym::topological_order(std::span<const Expr>(&b.condition, 1))) {
        if (n->op != sym::Op::Eq && n->op != sym::Op::Ne) continue;
        bool continuous = false;
        for (uint32_t sy : sym::free_symbols(n)) continuous |= continuous_symbol(sy);
        if (!continuous) continue;
        diags_.report(DiagKind::when_condition_equality, b.condition_span, {b.condition_text});
        diags_.help("write the crossing as a relation, e.g. 'x >= 0' or 'x < 0'");
        throw BuildError{};
      }
      for (const FlatReinit& r : b.reinits)
        if (discrete.count(r.var))
          fail(DiagKind::reinit_target, r.span,
               {"'" + cx_.symbol_name(r.var) +
                "' is a discrete variable: a when-equation assigns it with '" +
                cx_.symbol_name(r.var) + " = e'"});
      // order: depth-first over "reads the new value of"
      const size_t n = b.assigns.size();
      std::unordered_map<uint32_t, size_t> index;
      for (size_t k = 0; k < n; ++k) index.emplace(b.assigns[k].var, k);
      std::vector<std::vector<size_t>> reads(n);
      for (size_t k = 0; k < n; ++k)
        for (uint32_t sy : sym::free_symbols(b.assigns[k].value))
          if (auto it = index.find(sy); it != index.end()) reads[k].push_back(it->second);
      std::vector<uint8_t> state(n, 0);  // 0 new, 1 on the path, 2 done
      std::vector<size_t> order, path;
      std::function<void(size_t)> visit = [&](size_t k) {
        if (state[k] == 2) return;
        if (state[k] == 1) {
          std::string cycle;
          auto from = std::find(path.begin(), path.end(), k);
          for (auto i = from; i != path.end(); ++i)
            cycle += cx_.symbol_name(b.assigns[*i].var) + " -> ";
          cycle += cx_.symbol_name(b.assigns[k].var);
          diags_.report(DiagKind::when_algebraic_loop, b.assigns[k].span,
                        {"each new value depends on the next: " + cycle});
          diags_.help(
              "inside a when-equation 'x' is the new value of x; write pre(x) for its value "
              "before the event, e.g. 'n = pre(n) + 1'");
          throw BuildError{};
        }
        state[k] = 1;
        path.push_back(k);
        for (size_t r : reads[k]) visit(r);
        path.pop_back();
        state[k] = 2;
        order.push_back(k);
      };
      for (size_t k = 0; k < n; ++k) visit(k);
      std::vector<FlatReinit> sorted;
      std::unordered_map<uint32_t, Expr> new_value;
      for (size_t k : order) {
        FlatReinit a = b.assigns[k];
        a.value = sym::substitute(cx_, a.value, new_value);
        new_value.emplace(a.var, a.value);
        sorted.push_back(std::move(a));
      }
      b.assigns = std::move(sorted);
      if (!new_value.empty())
        for (FlatReinit& r : b.reinits) r.value = sym::substitute(cx_, r.value, new_value);
    }
  }
}

}  // namespace mbs::flattening
