// Algorithm sections of models and blocks (Modelica 3.6, chapter 11; docs/language.md,
// "Algorithms"), executed by the executor of functions (Functions.cpp).
//
// A section as a whole computes the variables it assigns (section 11.1.2): each becomes one
// equation `v = f(values read)`, where the values read are the variables the section does not
// assign. The executor runs the statements once over symbolic values: each variable the section
// assigns (an element of an array: the whole array) is a local of the frame that starts from its
// start value (a continuous variable) or pre(v) (a discrete one), assignments rebind it, an `if`
// on a condition that varies merges its branches with select(), loops are unrolled. Expressions
// are evaluated in the instance the section belongs to (der, time and pre as in equations) and
// then see the current values of the locals. At the end, the value of each local is its equation.
#include "compiler/flatten/Flattener.h"

namespace mbs::flattening {

namespace {

void collect_scalars(Instance* inst, std::vector<Instance*>& out) {
  if (inst->kind == Instance::Kind::Scalar) {
    out.push_back(inst);
    return;
  }
  for (auto& el : inst->elems) collect_scalars(el.get(), out);
}

// The instances a component reference names when its subscripts are ignored: an element of an
// array stands for the whole array (section 11.1.2).
std::vector<Instance*> named_instances(Instance& scope, const ast::Expr& ref) {
  std::vector<Instance*> cur;
  if (ref.kind != ast::ExprKind::Ref || ref.ref.empty()) return cur;
  if (Instance* m = scope.member(ref.ref[0].name)) cur.push_back(m);
  for (size_t k = 1; k < ref.ref.size(); ++k) {
    std::vector<Instance*> next;
    std::function<void(Instance*)> step = [&](Instance* i) {
      if (i->kind == Instance::Kind::Array) {
        for (auto& el : i->elems) step(el.get());
      } else if (i->kind == Instance::Kind::Composite) {
        if (Instance* m = i->member(ref.ref[k].name)) next.push_back(m);
      }
    };
    for (Instance* i : cur) step(i);
    cur = std::move(next);
  }
  return cur;
}

}  // namespace

void Flattener::add_algorithms(const ast::ClassDef& def, Instance& inst, bool initial) {
  const auto& list = initial ? def.initial_algorithm : def.algorithm;
  const auto& starts = initial ? def.initial_algorithm_starts : def.algorithm_starts;
  const auto& spans = initial ? def.initial_algorithm_spans : def.algorithm_spans;
  for (size_t k = 0; k < starts.size() && k < spans.size(); ++k) {
    const size_t end = k + 1 < starts.size() ? starts[k + 1] : list.size();
    try {
      if (def.kind == ast::ClassKind::Record || def.kind == ast::ClassKind::Connector)
        fail(DiagKind::unsupported, spans[k],
             {fmt::format("an algorithm section in {} '{}' (Modelica 3.6, section 4.7: only "
                          "models, blocks and functions have algorithms)",
                          ast::class_kind_name(def.kind), def.name)});
      add_algorithm_section(list, starts[k], end, spans[k], inst, initial);
    } catch (const BuildError&) {
      if (diags_.error_limit_reached()) throw;
    }
  }
}

void Flattener::assigned_variables(const ast::StatementList& list, size_t begin, size_t end,
                                   Instance& inst, std::vector<std::pair<uint32_t, Span>>& out) {
  for (size_t i = begin; i < end; ++i) {
    const ast::Statement& st = list[i];
    std::vector<const ast::Expr*> targets;
    switch (st.kind) {
      case ast::StatementKind::Assign:
        targets.push_back(st.target.get());
        break;
      case ast::StatementKind::MultiAssign:
        for (const auto& t : st.targets)
          if (t) targets.push_back(t.get());
        break;
      case ast::StatementKind::If:
        for (const auto& b : st.branches) assigned_variables(b, 0, b.size(), inst, out);
        break;
      case ast::StatementKind::For:
      case ast::StatementKind::While:
        assigned_variables(st.body, 0, st.body.size(), inst, out);
        break;
      case ast::StatementKind::Return:
      case ast::StatementKind::Break:
      case ast::StatementKind::Call:
        break;
    }
    for (const ast::Expr* t : targets) {
      std::vector<Instance*> scalars;
      for (Instance* named : named_instances(inst, *t)) collect_scalars(named, scalars);
      for (Instance* sc : scalars) {
        const uint32_t sy = flat_.vars[static_cast<size_t>(sc->var)].symbol;
        bool seen = false;
        for (const auto& [s, at] : out) seen = seen || s == sy;
        if (!seen) out.emplace_back(sy, t->span);
      }
    }
  }
}

void Flattener::add_algorithm_section(const ast::StatementList& list, size_t begin, size_t end,
                                      Span span, Instance& inst, bool initial) {
  std::vector<std::pair<uint32_t, Span>> assigned;
  assigned_variables(list, begin, end, inst, assigned);
  FunctionFrame f;
  f.model = &inst;
  f.returned = cx_.zero();
  f.broken = cx_.zero();
  for (const auto& [sy, at] : assigned) {
    const FlatVar& v = flat_.vars[flat_.var_of_symbol.at(sy)];
    if (v.role != VarRole::Variable) {
      diags_.report(DiagKind::algorithm_target, at,
                    {v.name, v.role == VarRole::Discrete
                                 ? "it is discrete (it changes only at events), and when-"
                                   "statements in algorithms are not supported yet"
                             : v.role == VarRole::Parameter ? "it is a parameter"
                             : v.role == VarRole::Constant  ? "it is a constant"
                                                            : "it is an input of the model"});
      diags_.note(v.span, "declared here");
      throw BuildError{};
    }
    if (!initial) {
      auto [it, inserted] = algorithm_assigned_.emplace(sy, at);
      if (!inserted) {
        diags_.report(DiagKind::algorithm_defined_twice, at, {v.name, "by another one"});
        diags_.note(it->second, "assigned by this algorithm section");
        diags_.help("a variable is computed by one algorithm section (Modelica 3.6, 11.1.2)");
        throw BuildError{};
      }
    }
    // read before it is assigned: its start value (section 11.1.2)
    FunctionFrame::Local l;
    l.type = v.type;
    l.value = Value::of(v.start ? v.start : cx_.zero(), v.type);
    l.has_value = l.defined = true;
    f.locals[v.name] = std::move(l);
    f.local_of_symbol[sy] = v.name;
  }
  for (size_t i = begin; i < end && !is_one(f.returned); ++i) exec_statement(list[i], f, nullptr);
  const std::string where = fmt::format(" (the algorithm section at line {})", span.line);
  for (const auto& [sy, at] : assigned) {
    const FlatVar& v = flat_.vars[flat_.var_of_symbol.at(sy)];
    FlatEquation eq;
    eq.residual = cx_.sub(cx_.symbol(sy), f.locals.at(v.name).value.elems[0]);
    eq.span = at;
    eq.text = v.name + " := ..." + where;
    eq.origin = inst.path;
    (initial ? flat_.initial_equations : flat_.equations).push_back(std::move(eq));
  }
}

void Flattener::assign_model(const ast::Expr& target, Value v, FunctionFrame& f,
                             const Iterators* iters) {
  const std::string text = expr_to_string(target);
  if (iters && target.kind == ast::ExprKind::Ref && !target.ref.empty() &&
      iters->find(target.ref[0].name))
    fail(DiagKind::type_error, target.span,
         {"cannot assign to the loop index '" + target.ref[0].name + "'"});
  const Value t = eval(target, scope_of(f, iters));
  if (v.is_string) fail(DiagKind::type_error, target.span, {"strings cannot be assigned"});
  if (t.shape != v.shape)
    fail(DiagKind::shape_mismatch, target.span,
         {fmt::format("'{}' has shape {}, the value has shape {}", text, shape_str(t.shape),
                      shape_str(v.shape))});
  const Expr off = inactive(f);
  for (size_t k = 0; k < t.elems.size(); ++k) {
    const Expr e = t.elems[k];
    const auto it = e->is_symbol() ? f.local_of_symbol.find(e->symbol) : f.local_of_symbol.end();
    if (it == f.local_of_symbol.end())
      fail(DiagKind::algorithm_target, target.span,
           {text, "it is not a variable of the model (only variables can be assigned)"});
    FunctionFrame::Local& l = f.locals.at(it->second);
    if ((l.type == ScalarType::Boolean) != (v.type == ScalarType::Boolean) ||
        (l.type == ScalarType::Integer && v.type == ScalarType::Real))
      fail(DiagKind::type_error, target.span,
           {fmt::format("'{}' is {}, the value is {}", it->second, scalar_type_name(l.type),
                        describe_value(v))});
    Expr& slot = l.value.elems[0];
    slot = off->is_const() ? v.elems[k] : cx_.select(off, slot, v.elems[k]);
  }
}

// A variable computed by an algorithm section has no other equation (section 11.1.2).
void Flattener::finish_algorithms() {
  std::vector<std::pair<uint32_t, Span>> assigned(algorithm_assigned_.begin(),
                                                  algorithm_assigned_.end());
  std::sort(assigned.begin(), assigned.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  bool failed = false;
  for (const auto& [sy, at] : assigned) {
    const size_t var = flat_.var_of_symbol.at(sy);
    const FlatVar& v = flat_.vars[var];
    const Instance* sc = var < scalars_.size() ? scalars_[var] : nullptr;
    Span other;
    std::string what;
    if (sc && sc->mod.value) {
      other = sc->mod.value->span.valid() ? sc->mod.value->span : v.span;
      what = "by its declaration equation";
    } else if (auto c = continuous_lhs_.find(sy); c != continuous_lhs_.end()) {
      other = c->second;
      what = "by an equation";
    } else if (auto w = assigned_in_when_.find(sy); w != assigned_in_when_.end()) {
      other = w->second.second;
      what = "by a when-equation";
    } else {
      continue;
    }
    diags_.report(DiagKind::algorithm_defined_twice, at, {v.name, what});
    diags_.note(other, "the other definition");
    diags_.help(
        "a variable an algorithm section assigns is computed by that section alone (Modelica "
        "3.6, 11.1.2); remove the other definition or assign another variable");
    failed = true;
    if (diags_.error_limit_reached()) break;
  }
  if (failed) throw BuildError{};
}

// ------------------------------------------------------------------------------------------------
// `for i loop` without a range (Modelica 3.6, 11.2.2.2): the range is 1:size(a, k) for every
// use a[..., i, ...] of the index as a whole subscript in the body; the uses must agree.

namespace {

struct IndexUse {
  const ast::Expr* ref;
  size_t part, dim;
};

struct IndexUses {
  const std::string& name;
  std::vector<IndexUse> found;

  static bool rebinds(const std::vector<ast::ForIndex>& ixs, const std::string& n) {
    for (const auto& ix : ixs)
      if (ix.name == n) return true;
    return false;
  }
  void expr(const ast::Expr* e) {
    if (!e) return;
    for (size_t j = 0; j < e->ref.size(); ++j)
      for (size_t k = 0; k < e->ref[j].subscripts.size(); ++k) {
        const ast::Expr* sub = e->ref[j].subscripts[k].get();
        if (e->kind == ast::ExprKind::Ref && sub && sub->kind == ast::ExprKind::Ref &&
            sub->ref.size() == 1 && sub->ref[0].name == name && sub->ref[0].subscripts.empty())
          found.push_back({e, j, k});
        expr(sub);
      }
    for (const auto& ix : e->iterators) expr(ix.range.get());
    const bool shadowed = rebinds(e->iterators, name);
    if (!shadowed) {
      for (const auto& a : e->args) expr(a.get());
      for (const auto& row : e->rows)
        for (const auto& a : row) expr(a.get());
      expr(e->filter.get());
    }
  }
  void equations(const ast::EquationList& list) {
    for (const auto& eq : list) {
      expr(eq.lhs.get());
      expr(eq.rhs.get());
      for (const auto& t : eq.targets) expr(t.get());
      for (const auto& c : eq.conditions) expr(c.get());
      for (const auto& ix : eq.indices) expr(ix.range.get());
      if (!rebinds(eq.indices, name)) equations(eq.body);
      for (const auto& b : eq.branches) equations(b);
    }
  }
  void statements(const ast::StatementList& list) {
    for (const auto& st : list) {
      expr(st.target.get());
      expr(st.value.get());
      for (const auto& t : st.targets) expr(t.get());
      for (const auto& c : st.conditions) expr(c.get());
      for (const auto& ix : st.indices) expr(ix.range.get());
      if (!rebinds(st.indices, name)) statements(st.body);
      for (const auto& b : st.branches) statements(b);
    }
  }
};

}  // namespace

Value Flattener::implicit_range(const ast::ForIndex& ix, const ast::EquationList* eqs,
                                const ast::StatementList* sts, Scope s) {
  IndexUses uses{ix.name, {}};
  if (eqs) uses.equations(*eqs);
  if (sts) uses.statements(*sts);
  long size = -1;
  const ast::Expr* first = nullptr;
  for (const IndexUse& u : uses.found) {
    // the array the subscript indexes: a component (its instance) or a local of a function
    bool plain = true;
    for (size_t j = 0; j < u.part; ++j) plain = plain && u.ref->ref[j].subscripts.empty();
    if (!plain) continue;
    std::vector<int> shape;
    bool known = false;
    const auto& parts = u.ref->ref;
    if (s.frame && u.part == 0) {
      if (auto it = s.frame->locals.find(parts[0].name); it != s.frame->locals.end()) {
        shape = it->second.has_value ? it->second.value.shape : it->second.dims;
        known = true;
      }
    }
    if (!known && s.inst) {
      Instance* cur = s.inst->member(parts[0].name);
      for (size_t j = 1; cur && j <= u.part; ++j)
        cur = cur->kind == Instance::Kind::Composite ? cur->member(parts[j].name) : nullptr;
      if (cur) {
        if (cur->kind == Instance::Kind::Array) shape = cur->dims;
        known = true;
      }
    }
    if (!known || u.dim >= shape.size() || shape[u.dim] < 0) continue;
    if (size >= 0 && shape[u.dim] != size) {
      diags_.report(DiagKind::shape_mismatch, u.ref->span,
                    {fmt::format("the range of '{}' is deduced from the arrays it indexes, and "
                                 "'{}' has size {} there, '{}' size {}",
                                 ix.name, expr_to_string(*u.ref), shape[u.dim],
                                 expr_to_string(*first), size)});
      diags_.note(ix.span, "the loop without a range");
      diags_.help("write the range: 'for " + ix.name + " in 1:n loop'");
      throw BuildError{};
    }
    size = shape[u.dim];
    first = u.ref;
  }
  if (size < 0) {
    diags_.report(DiagKind::unsupported, ix.span,
                  {"'for " + ix.name + " loop' where '" + ix.name +
                   "' is not a subscript of an array of known size (Modelica 3.6, 11.2.2.2: the "
                   "range is deduced from such subscripts)"});
    diags_.help("write the range: 'for " + ix.name + " in 1:n loop'");
    throw BuildError{};
  }
  Value r;
  r.shape = {static_cast<int>(size)};
  r.type = ScalarType::Integer;
  for (long k = 1; k <= size; ++k) r.elems.push_back(cx_.num(static_cast<double>(k)));
  return r;
}

// ------------------------------------------------------------------------------------------------
// assert(condition, message, level = AssertionLevel.error) (Modelica 3.6, 8.3.7), as an equation
// or a statement: so far decided while compiling only. A condition of parameters that is false is
// a model error (a warning with AssertionLevel.warning), one that is true is dropped; a condition
// that changes in time, or an assert on a path that does, would be checked during the run, which
// is not implemented yet: refused by name. terminate(message) likewise.

std::string Flattener::assert_message(const ast::Expr& e) {
  if (e.kind == ast::ExprKind::String) return e.text;
  if (e.kind == ast::ExprKind::Binary && e.op == "+" && e.args.size() == 2 &&
      e.args[0]->kind == ast::ExprKind::String && e.args[1]->kind == ast::ExprKind::String)
    return e.args[0]->text + e.args[1]->text;
  // String(x) and other values: their text, as written
  return source_text(e.span);
}

void Flattener::add_assert(const ast::Expr& call, Scope s, FunctionFrame* f, const Iterators* iters,
                           bool conditional) {
  if (call.ref.size() == 1 && call.ref[0].name == "terminate") {
    diags_.report(DiagKind::unsupported, call.span,
                  {"terminate(message) (Modelica 3.6, 8.3.8; ending the run at an event)"});
    diags_.help("end the run at a time with --t-end; terminate is not implemented yet");
    throw BuildError{};
  }
  static const char* const names[3] = {"condition", "message", "level"};
  const ast::Expr* arg[3] = {nullptr, nullptr, nullptr};
  for (size_t i = 0; i < call.args.size(); ++i) {
    const bool named = i < call.arg_names.size() && !call.arg_names[i].empty();
    size_t k = i;
    if (named) {
      k = 0;
      while (k < 3 && call.arg_names[i] != names[k]) ++k;
      if (k == 3)
        fail(DiagKind::bad_call, call.arg_spans[i],
             {"assert has no argument named '" + call.arg_names[i] + "'"});
    }
    if (k >= 3 || arg[k])
      fail(DiagKind::bad_call, call.span,
           {"assert takes a condition, a message and a level: assert(condition, message, "
            "AssertionLevel.error)"});
    arg[k] = call.args[i].get();
  }
  if (!arg[0] || !arg[1])
    fail(DiagKind::bad_call, call.span,
         {"assert takes a condition and a message: assert(condition, message)"});
  bool warning = false;
  if (const ast::Expr* level = arg[2]) {
    const bool ok = level->kind == ast::ExprKind::Ref && level->ref.size() == 2 &&
                    level->ref[0].name == "AssertionLevel" &&
                    (level->ref[1].name == "error" || level->ref[1].name == "warning");
    if (!ok)
      fail(DiagKind::bad_call, level->span,
           {"the level of assert is AssertionLevel.error or AssertionLevel.warning"});
    warning = level->ref[1].name == "warning";
  }
  if (arg[1]->kind != ast::ExprKind::String && arg[1]->kind != ast::ExprKind::Binary &&
      arg[1]->kind != ast::ExprKind::Call)
    fail(DiagKind::type_error, arg[1]->span, {"the message of assert must be a string"});
  const Value cv = f ? read(*arg[0], *f, iters) : eval(*arg[0], s);
  if (cv.is_string || !cv.shape.empty() || cv.type != ScalarType::Boolean)
    fail(DiagKind::type_error, arg[0]->span,
         {"the condition of assert must be a Boolean, not " + describe_value(cv)});
  const Expr c = cv.elems[0];
  if (varies_in_time(c)) {
    diags_.report(DiagKind::unsupported, call.span,
                  {"an assert whose condition changes during the simulation (Modelica 3.6, "
                   "8.3.7: checked at run time, not implemented yet)"});
    diags_.help(
        "asserts on parameters and constants are checked while compiling; remove this one or "
        "check the condition on the results");
    throw BuildError{};
  }
  if (structural(c, arg[0]->span, "the condition of assert") != 0.0) return;
  if (conditional) {
    diags_.report(DiagKind::unsupported, call.span,
                  {"a failing assert on a path that depends on values that change during the "
                   "simulation (Modelica 3.6, 8.3.7: checked at run time, not implemented yet)"});
    throw BuildError{};
  }
  if (warning) {
    diags_.report(DiagKind::assertion_warning, call.span, {assert_message(*arg[1])});
    return;
  }
  fail(DiagKind::assertion_failed, call.span, {assert_message(*arg[1])});
}

}  // namespace mbs::flattening
