// Elaboration: the attributes and binding of each scalar, and equations (simple, for, if,
// initial equations) turned into residuals of the flat model.
#include "compiler/flatten/Flattener.h"

namespace mbs::flattening {

std::string Flattener::source_text(Span span) const {
  if (!span.valid()) return {};
  std::string out;
  for (uint32_t l = span.line; l <= std::max(span.line, span.end_line); ++l) {
    std::string_view t = sources_.line_text(span.file, l);
    size_t from = l == span.line ? span.col - 1 : 0;
    size_t to = (l == span.end_line && span.end_col >= 1) ? span.end_col : t.size();
    if (from > t.size()) from = t.size();
    if (to > t.size()) to = t.size();
    if (to < from) to = from;
    if (!out.empty()) out += ' ';
    out += std::string(t.substr(from, to - from));
    if (l - span.line > 20) break;
  }
  // collapse whitespace runs
  std::string r;
  bool ws = false;
  for (char c : out) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ws = true;
      continue;
    }
    if (ws && !r.empty()) r += ' ';
    ws = false;
    r += c;
  }
  if (!r.empty() && r.back() == ';') r.pop_back();
  return r;
}

void Flattener::elaborate_scalar(Instance& inst) {
  FlatVar& fv = flat_.vars[inst.var];
  const ModEntry& m = inst.mod;
  auto attr = [&](const char* name) -> const ModEntry* {
    auto it = m.sub.find(name);
    if (it == m.sub.end() || !it->second.value) return nullptr;
    return &it->second;
  };
  if (auto ov = options_.start_overrides.find(fv.name);
      ov != options_.start_overrides.end() &&
      (fv.role == VarRole::Variable || fv.role == VarRole::Discrete)) {
    // --start NAME=VALUE replaces the model's start value (its span stays for messages)
    const ModEntry* a = attr("start");
    flat_.vars[inst.var].start = cx_.num(ov->second);
    flat_.vars[inst.var].start_span = a ? a->value->span : fv.span;
    start_overrides_used_[fv.name] = true;
  } else if (const ModEntry* a = attr("start")) {
    Value v = eval_mod_value(*a);
    check_value_type(inst.var, v, a->value->span, "the start value");
    flat_.vars[inst.var].start = scalar_of(v, a->value->span, "a start value");
    flat_.vars[inst.var].start_span = a->value->span;
  }
  if (const ModEntry* a = attr("fixed")) {
    Value v = eval_mod_value(*a);
    double f = structural(scalar_of(v, a->value->span, "'fixed'"), a->value->span, "'fixed'");
    flat_.vars[inst.var].fixed = f != 0.0;
    flat_.vars[inst.var].fixed_given = true;
  }
  for (const char* bound : {"min", "max"}) {
    if (const ModEntry* a = attr(bound)) {
      Value v = eval_mod_value(*a);
      Expr e = scalar_of(v, a->value->span, bound[1] == 'i' ? "'min'" : "'max'");
      FlatVar& f = flat_.vars[inst.var];
      (bound[1] == 'i' ? f.min : f.max) = e;
      (bound[1] == 'i' ? f.min_span : f.max_span) = a->value->span;
    }
  }
  if (const ModEntry* a = attr("unit")) {
    Value v = eval_mod_value(*a);
    if (!v.is_string) fail(DiagKind::attribute_type, a->value->span, {"unit", "a string"});
    flat_.vars[inst.var].unit = v.str;
  }
  if (fv.role == VarRole::Discrete && m.value)
    fail(DiagKind::unsupported, m.value->span.valid() ? m.value->span : fv.span,
         {"a value binding for the discrete variable '" + fv.name +
          "' (it would never change); give it a start value, e.g. '(start = ...)'"});
  if (fv.role != VarRole::Variable) {
    binding_of(inst.var, fv.span);
    return;
  }
  if (m.value) {
    // declaration equation `Real v = expr;`
    Value v = eval_mod_value(m);
    check_value_type(inst.var, v, m.value->span, "the binding");
    Expr rhs = scalar_of(v, m.value->span, "the value of a scalar");
    FlatEquation eq;
    eq.residual = cx_.sub(cx_.symbol(flat_.vars[inst.var].symbol), rhs);
    eq.span = m.value->span.valid() ? m.value->span : fv.span;
    eq.text = flat_.vars[inst.var].name + " = " + source_text(m.value->span);
    eq.origin = inst.parent ? inst.parent->path : "";
    flat_.equations.push_back(std::move(eq));
  }
}

void Flattener::elaborate(Instance& inst) {
  switch (inst.kind) {
    case Instance::Kind::Scalar:
      try {
        if (inst.is_string) {
          if (inst.mod.value) string_instance_value(&inst, inst.span);  // checks its type
          return;
        }
        elaborate_scalar(inst);
      } catch (const BuildError&) {
        if (diags_.error_limit_reached()) throw;
      }
      return;
    case Instance::Kind::Array:
      try {
        check_array_binding(inst);
      } catch (const BuildError&) {
        if (diags_.error_limit_reached()) throw;
        return;
      }
      for (auto& el : inst.elems) elaborate(*el);
      return;
    case Instance::Kind::Composite:
      for (auto& el : inst.elems) elaborate(*el);
      for (const ClassEntry* c : inst.equation_classes()) {
        add_equations(c->def->equations, Scope{&inst, nullptr, nullptr, c}, inst.path);
        if (!c->def->initial_equations.empty()) add_initial_equations(c, inst);
        if (!c->def->algorithm_starts.empty()) add_algorithms(*c->def, inst, false);
        if (!c->def->initial_algorithm_starts.empty()) add_algorithms(*c->def, inst, true);
      }
      return;
  }
}

// `initial equation` sections (docs/language.md, "Initial equations"): flattened like equations,
// into FlatModel::initial_equations; the DAE pass and the initial solve (compiler/dae/Initial)
// take them from there.
void Flattener::add_initial_equations(const ClassEntry* cls, Instance& inst) {
  struct Section {
    Flattener& f;
    std::vector<FlatEquation> model_equations;
    explicit Section(Flattener& fl) : f(fl) {
      model_equations.swap(f.flat_.equations);
      f.initial_section_ = true;
    }
    ~Section() {
      f.initial_section_ = false;
      model_equations.swap(f.flat_.equations);  // the initial ones are in model_equations now
      for (auto& e : model_equations) f.flat_.initial_equations.push_back(std::move(e));
    }
  } section(*this);
  add_equations(cls->def->initial_equations, Scope{&inst, nullptr, nullptr, cls}, inst.path);
}

void Flattener::add_equations(const ast::EquationList& eqs, Scope s, const std::string& origin) {
  for (const auto& eq : eqs) {
    try {
      add_equation(eq, s, origin);
    } catch (const BuildError&) {
      if (diags_.error_limit_reached()) throw;
    }
  }
}

void Flattener::add_equation(const ast::Equation& eq, Scope s, const std::string& origin) {
  if (when_body_ && eq.kind != ast::EquationKind::Call && eq.kind != ast::EquationKind::For &&
      eq.kind != ast::EquationKind::If && eq.kind != ast::EquationKind::Simple) {
    if (eq.kind == ast::EquationKind::When) fail(DiagKind::when_nested, eq.span);
    diags_.report(DiagKind::when_equation_body, eq.span,
                  {eq.kind == ast::EquationKind::Connect ? "connect" : "an equation of outputs"});
    diags_.help(
        "a when-equation assigns discrete variables (x = e) and changes states with "
        "reinit(x, e); write connections and continuous equations outside it");
    throw BuildError{};
  }
  if (initial_section_ &&
      (eq.kind == ast::EquationKind::When || eq.kind == ast::EquationKind::Connect ||
       eq.kind == ast::EquationKind::Call)) {
    diags_.report(DiagKind::initial_equation_kind, eq.span,
                  {eq.kind == ast::EquationKind::When      ? "a when-equation"
                   : eq.kind == ast::EquationKind::Connect ? "connect"
                                                           : "a call equation"});
    diags_.help(
        "an initial equation relates values at the start (a = b, for, if); connections and "
        "events belong in the 'equation' section");
    throw BuildError{};
  }
  switch (eq.kind) {
    case ast::EquationKind::When:
      add_when(eq, s, origin);
      return;
    case ast::EquationKind::Call:
      add_reinit(eq, s);
      return;
    case ast::EquationKind::Simple: {
      if (when_body_) {
        add_assignment(eq, s);
        return;
      }
      Value l = eval_whole(*eq.lhs, s);
      Value r = eval_whole(*eq.rhs, s);
      if (l.is_string || r.is_string)
        fail(DiagKind::type_error, eq.span, {"an equation cannot relate strings"});
      if (l.record || r.record) {  // member by member (docs/language.md, "Records")
        as_record(l, r.record, eq.span, "the left side of the equation");
        r = as_record(r, l.record, eq.span, "the right side of the equation");
      }
      if (l.shape != r.shape)
        fail(DiagKind::shape_mismatch, eq.span,
             {fmt::format("the two sides of the equation have shapes {} and {}", shape_str(l.shape),
                          shape_str(r.shape))});
      check_equation_types(l, r, eq);
      std::string text = source_text(eq.span);
      // the input an equation would define: `u = ...`, or `... = u` with no unknown on the left
      const auto input_of = [&](Expr e) -> const FlatVar* {
        if (!e->is_symbol()) return nullptr;
        auto it = flat_.var_of_symbol.find(e->symbol);
        return it != flat_.var_of_symbol.end() && flat_.vars[it->second].role == VarRole::Input
                   ? &flat_.vars[it->second]
                   : nullptr;
      };
      const auto known = [&](Expr e) {
        for (uint32_t sy : sym::free_symbols(e)) {
          auto it = flat_.var_of_symbol.find(sy);
          if (sy != flat_.time_symbol &&
              (it == flat_.var_of_symbol.end() || flat_.vars[it->second].role == VarRole::Variable))
            return false;
        }
        return true;
      };
      for (size_t i = 0; i < l.size(); ++i) {
        const FlatVar* defined = input_of(l.elems[i]);
        if (!defined && known(l.elems[i])) defined = input_of(r.elems[i]);
        if (defined) {
          diags_.report(DiagKind::input_defined, eq.span, {defined->name});
          diags_.note(defined->span, "declared as an input of the model here");
          diags_.help("an input is a known function of time that the caller sets (--set " +
                      defined->name +
                      "=VALUE, rt::Instance::set_input, an FMU's importer); to compute it, "
                      "declare it without `input`");
          throw BuildError{};
        }
        if (l.elems[i]->is_symbol() && !initial_section_)
          continuous_lhs_.emplace(l.elems[i]->symbol, eq.span);
        FlatEquation fe;
        fe.residual = cx_.sub(l.elems[i], r.elems[i]);
        fe.span = eq.span;
        fe.text = l.size() > 1 ? fmt::format("{}  (element {})", text, i + 1) : text;
        fe.origin = origin;
        flat_.equations.push_back(std::move(fe));
      }
      return;
    }
    case ast::EquationKind::Outputs: {
      // (a, b) = f(x): one equation per named place, target - output
      const ClassEntry* fn =
          eq.rhs->kind == ast::ExprKind::Call ? user_function(*eq.rhs, s) : nullptr;
      if (!fn)
        fail(DiagKind::bad_call, eq.rhs->span,
             {"the right side of '(...) = ...' must be a call of a user-defined function"});
      std::vector<Value> outs = call_function(*eq.rhs, s, fn);
      if (eq.targets.size() > outs.size())
        fail(DiagKind::bad_call, eq.span,
             {fmt::format("function '{}' has {} output(s), {} are given", fn->full_name,
                          outs.size(), eq.targets.size())});
      std::string text = source_text(eq.span);
      for (size_t k = 0; k < eq.targets.size(); ++k) {
        if (!eq.targets[k]) continue;
        Value l = eval_whole(*eq.targets[k], s);
        Value r = outs[k];
        if (l.record || r.record) {
          as_record(l, r.record, eq.targets[k]->span, "'" + expr_to_string(*eq.targets[k]) + "'");
          r = as_record(r, l.record, eq.targets[k]->span,
                        fmt::format("output {} of '{}'", k + 1, fn->full_name));
        }
        if (l.is_string || l.shape != r.shape)
          fail(DiagKind::shape_mismatch, eq.targets[k]->span,
               {fmt::format("'{}' has shape {}, output {} of '{}' has shape {}",
                            expr_to_string(*eq.targets[k]), shape_str(l.shape), k + 1,
                            fn->full_name, shape_str(r.shape))});
        for (size_t i = 0; i < l.size(); ++i) {
          FlatEquation fe;
          fe.residual = cx_.sub(l.elems[i], r.elems[i]);
          fe.span = eq.targets[k]->span;
          fe.text = l.size() > 1 ? fmt::format("{}  (output {}, element {})", text, k + 1, i + 1)
                                 : fmt::format("{}  (output {})", text, k + 1);
          fe.origin = origin;
          flat_.equations.push_back(std::move(fe));
        }
      }
      return;
    }
    case ast::EquationKind::Connect:
      add_connect(eq, s);
      return;
    case ast::EquationKind::For: {
      std::function<void(size_t, const Iterators*)> loop = [&](size_t k, const Iterators* outer) {
        if (k == eq.indices.size()) {
          add_equations(eq.body, s.with(outer), origin);
          return;
        }
        const auto& ix = eq.indices[k];
        Value range = ix.range ? eval(*ix.range, s.with(outer))
                               : implicit_range(ix, &eq.body, nullptr, s.with(outer));
        if (range.shape.size() != 1)
          fail(DiagKind::shape_mismatch, ix.range->span, {"a for-loop range must be a vector"});
        for (Expr e : range.elems) {
          Iterators it{outer, ix.name, Value::of(e, range.type)};
          it.value.enumeration = range.enumeration;
          loop(k + 1, &it);
        }
      };
      loop(0, s.iters);
      return;
    }
    case ast::EquationKind::If: {
      if (add_switched_if(eq, s, origin)) return;
      for (size_t i = 0; i < eq.branches.size(); ++i) {
        if (i < eq.conditions.size()) {
          Value c = eval(*eq.conditions[i], s);
          check_condition(c, eq.conditions[i]->span, "an if-equation");
          double v = structural(scalar_of(c, eq.conditions[i]->span, "an if-equation condition"),
                                eq.conditions[i]->span, "the condition of an if-equation");
          if (v == 0.0) continue;
        }
        add_equations(eq.branches[i], s, origin);
        return;
      }
      return;
    }
  }
}

}  // namespace mbs::flattening
