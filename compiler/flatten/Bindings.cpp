// Bindings, parameters and start values: evaluated lazily (a parameter may be used before its
// declaration, cycles are reported), checked (finite, within min/max, start values of
// parameters only), and the --set/--start overrides that named nothing.
#include "compiler/flatten/Flattener.h"

namespace mbs::flattening {

// ------------------------------------------------------------------------------------------------
// Evaluation

Expr Flattener::scalar_of(const Value& v, Span span, const char* what) {
  if (v.is_string || v.record || v.elems.size() != 1 || !v.shape.empty())
    fail(DiagKind::shape_mismatch, span,
         {fmt::format("{} must be a scalar, found {}", what,
                      v.is_string || v.record ? describe_value(v) : shape_str(v.shape))});
  return v.elems[0];
}

Expr Flattener::binding_of(size_t var, Span use) {
  FlatVar& fv = flat_.vars[var];
  if (binding_state_[var] == 2) return fv.binding;
  if (binding_state_[var] == 3) throw BuildError{};  // its error was reported
  if (binding_state_[var] == 1)
    fail(DiagKind::parameter_cycle, use.valid() ? use : fv.span, {fv.name});
  binding_state_[var] = 1;
  Instance* inst = scalars_[var];
  Expr b = nullptr;
  auto ov = options_.overrides.find(fv.name);
  ValueOrigin origin = ValueOrigin::None;
  Span value_span;
  if (ov != options_.overrides.end() &&
      (fv.role == VarRole::Parameter || fv.role == VarRole::Input)) {
    b = cx_.num(ov->second);
    overrides_used_[fv.name] = true;
    origin = ValueOrigin::Override;
  } else if (inst->mod.value) {
    try {
      Value v = eval_mod_value(inst->mod);
      check_value_type(var, v, inst->mod.value->span.valid() ? inst->mod.value->span : fv.span,
                       "the value");
      b = scalar_of(v, inst->mod.span.valid() ? inst->mod.span : fv.span, "a binding");
    } catch (const BuildError&) {
      binding_state_[var] = 3;  // not "in progress": a later use is no cycle
      throw;
    }
    value_span = inst->mod.value->span.valid() ? inst->mod.value->span : fv.span;
    // a binding evaluated in the component that declares the parameter is its declaration's (or
    // an `extends` modifier's); one evaluated further out is a modifier of an enclosing component
    const Instance* owner = inst->parent;
    while (owner && owner->kind == Instance::Kind::Array) owner = owner->parent;
    origin = inst->mod.scope == owner ? ValueOrigin::Declaration : ValueOrigin::Modifier;
  }
  FlatVar& fvb = flat_.vars[var];  // eval may have added variables
  fvb.value_origin = origin;
  fvb.value_span = value_span;
  fvb.binding = b;
  binding_state_[var] = 2;
  return b;
}

Value Flattener::eval_mod_value(const ModEntry& m) {
  // The value of a modifier of an array is evaluated once and each element picks its part (it
  // was evaluated again for every element: start = {f(i) for i in 1:n} took O(n^2)).
  if (m.leaf() >= 0) {
    // a member of a record bound as a whole: its scalar of the record's value
    const auto key = std::make_pair(m.value, m.scope);
    auto it = array_mod_values_.find(key);
    if (it == array_mod_values_.end()) {
      if (failed_whole_.count(key)) throw BuildError{};  // reported for another member
      try {
        Value whole = eval_whole(*m.value, Scope{m.scope, nullptr, nullptr, m.scope_cls});
        whole = as_record(whole, m.whole(), m.value->span, "the value of the record component");
        it = array_mod_values_.emplace(key, std::move(whole)).first;
      } catch (const BuildError&) {
        failed_whole_.insert(key);
        throw;
      }
    }
    if (static_cast<size_t>(m.leaf()) >= it->second.elems.size())
      fail(DiagKind::type_error, m.value->span, {"the value of a record component is too short"});
    return Value::of(it->second.elems[static_cast<size_t>(m.leaf())], it->second.type);
  }
  if (m.pick.empty()) return eval(*m.value, Scope{m.scope, nullptr, nullptr, m.scope_cls});
  return pick_part(shared_mod_value(m), m);
}

const Value& Flattener::shared_mod_value(const ModEntry& m) {
  const auto key = std::make_pair(m.value, m.scope);
  auto it = array_mod_values_.find(key);
  if (it == array_mod_values_.end())
    it = array_mod_values_
             .emplace(key, eval(*m.value, Scope{m.scope, nullptr, nullptr, m.scope_cls}))
             .first;
  return it->second;
}

Value Flattener::pick_part(Value v, const ModEntry& m) {
  for (int idx : m.pick) {
    if (v.shape.empty()) break;  // a scalar applies to every element
    int n = v.shape[0];
    if (idx >= n)
      fail(DiagKind::shape_mismatch, m.value->span,
           {fmt::format("the value has {} elements but the array has more", n)});
    size_t stride = v.elems.size() / static_cast<size_t>(n);
    Value r;
    r.type = v.type;
    r.enumeration = v.enumeration;
    r.shape.assign(v.shape.begin() + 1, v.shape.end());
    r.elems.assign(v.elems.begin() + idx * stride, v.elems.begin() + (idx + 1) * stride);
    v = std::move(r);
  }
  return v;
}

Value Flattener::instance_value(Instance* inst, Span span) {
  if (inst->kind == Instance::Kind::Scalar && inst->is_string)
    return string_instance_value(inst, span);
  if (inst->kind == Instance::Kind::Scalar) {
    FlatVar& fv = flat_.vars[inst->var];
    if (fv.role == VarRole::Constant) {
      Expr b = binding_of(inst->var, span);
      if (!b) fail(DiagKind::parameter_no_value, span, {fv.name});
      Value r = Value::of(b, fv.type);
      r.enumeration = inst->enumeration;
      return r;
    }
    Value r = Value::of(cx_.symbol(fv.symbol), fv.type);
    r.enumeration = inst->enumeration;
    return r;
  }
  if (inst->kind == Instance::Kind::Array) {
    Value r;
    r.shape.push_back(static_cast<int>(inst->elems.size()));
    bool first = true;
    for (auto& el : inst->elems) {
      Value e = instance_value(el.get(), span);
      if (e.record)  // docs/language.md, "Records": arrays of records are used element by element
        fail(DiagKind::unsupported, span,
             {"the array of records '" + inst->path + "' used as a whole (use its elements)"});
      if (first) {
        r.shape.insert(r.shape.end(), e.shape.begin(), e.shape.end());
        r.type = e.type;
        r.enumeration = e.enumeration;
        first = false;
      }
      r.elems.insert(r.elems.end(), e.elems.begin(), e.elems.end());
    }
    return r;
  }
  if (inst->cls && inst->cls->def->kind == ast::ClassKind::Record) return record_value(inst, span);
  fail(DiagKind::not_a_value, span, {inst->path, inst->type_name});
}

Expr Flattener::resolved_binding(size_t var, Span use) {
  if (resolved_state_[var] == 2) return resolved_[var];
  const FlatVar& fv = flat_.vars[var];
  if (resolved_state_[var] == 1) fail(DiagKind::parameter_cycle, fv.span, {fv.name});
  resolved_state_[var] = 1;
  Expr b = binding_of(var, use);
  if (!b) {
    diags_.report(DiagKind::parameter_no_value, use.valid() ? use : fv.span, {fv.name});
    diags_.help("give it a value in the declaration, a modifier, or --set " + fv.name + "=VALUE");
    throw BuildError{};
  }
  std::unordered_map<uint32_t, Expr> repl;
  for (uint32_t s : sym::free_symbols(b)) {
    auto it = flat_.var_of_symbol.find(s);
    if (it == flat_.var_of_symbol.end() || flat_.vars[it->second].role == VarRole::Variable)
      continue;
    if (flat_.vars[it->second].role == VarRole::Input) {
      diags_.report(DiagKind::input_in_parameter, fv.value_span.valid() ? fv.value_span : fv.span,
                    {fmt::format("the value of {} '{}'",
                                 fv.role == VarRole::Constant ? "constant" : "parameter", fv.name),
                     flat_.vars[it->second].name});
      diags_.note(flat_.vars[it->second].span, "the input is declared here");
      diags_.help("make '" + flat_.vars[it->second].name +
                  "' a parameter, or the dependent quantity a variable (`Real " + fv.name +
                  " = ...`)");
      throw BuildError{};
    }
    repl[s] = resolved_binding(it->second, use);
  }
  resolved_[var] = sym::substitute(cx_, b, repl);
  resolved_state_[var] = 2;
  return resolved_[var];
}

void Flattener::check_parameter_value(size_t var) {
  const FlatVar& v = flat_.vars[var];
  if (v.type != ScalarType::Real) return;
  // the error points at the value; a value from --set points at the declaration and says so
  const bool from_cli = v.value_origin == ValueOrigin::Override;
  const Span at = !from_cli && v.value_span.valid() ? v.value_span : v.span;
  auto say_where = [&] {
    if (from_cli)
      diags_.note(Span{}, fmt::format("the value comes from the command line: --set {}={}", v.name,
                                      options_.overrides.at(v.name)));
    else if (v.value_origin == ValueOrigin::Modifier)
      diags_.note(v.span, fmt::format("'{}' is declared here", v.name));
  };
  if (!std::isfinite(v.value)) {
    diags_.report(DiagKind::parameter_not_finite, at,
                  {v.name, std::isnan(v.value) ? std::string("NaN") : fmt::format("{}", v.value)});
    say_where();
    diags_.help(
        "a parameter must be a finite number: look for a division by zero, or a sqrt, log or pow "
        "outside its domain, in the expressions it is computed from");
    throw BuildError{};
  }
  for (const bool lower : {true, false}) {
    const Expr bound_expr = lower ? v.min : v.max;
    if (!bound_expr) continue;
    const Span bound_span = lower ? v.min_span : v.max_span;
    const double bound = structural(bound_expr, bound_span, lower ? "'min'" : "'max'");
    if (lower ? v.value >= bound : v.value <= bound) continue;
    diags_.report(
        DiagKind::parameter_out_of_range, at,
        {v.name, fmt::format("{}", v.value), lower ? "min" : "max", fmt::format("{}", bound)});
    say_where();
    diags_.note(bound_span, fmt::format("the {} of '{}' is declared here",
                                        lower ? "minimum" : "maximum", v.name));
    throw BuildError{};
  }
}

void Flattener::check_start_value(size_t var) {
  const FlatVar& v = flat_.vars[var];
  if (v.role != VarRole::Variable || !v.start) return;
  for (uint32_t s : sym::free_symbols(v.start)) {
    auto it = flat_.var_of_symbol.find(s);
    if (it != flat_.var_of_symbol.end() && flat_.vars[it->second].role != VarRole::Variable)
      continue;
    const std::string n =
        it == flat_.var_of_symbol.end() ? cx_.symbol_name(s) : flat_.vars[it->second].name;
    fail(DiagKind::not_structural, v.start_span.valid() ? v.start_span : v.span,
         {"the start value of '" + v.name + "' (it depends on the variable '" + n + "')"});
  }
}

void Flattener::report_unused_overrides() {
  report_unused(options_.overrides, overrides_used_, VarRole::Parameter,
                DiagKind::unknown_override);
  report_unused(options_.start_overrides, start_overrides_used_, VarRole::Variable,
                DiagKind::unknown_start_override);
}

void Flattener::report_unused(const std::map<std::string, double>& given,
                              const std::map<std::string, bool>& used, VarRole role,
                              DiagKind kind) {
  for (const auto& [name, value] : given) {
    (void)value;
    if (used.count(name)) continue;
    const FlatVar* found = nullptr;
    std::vector<std::string> candidates;
    for (const auto& v : flat_.vars) {
      if (v.name == name) found = &v;
      // --set also names inputs
      if (v.role == role || (role == VarRole::Parameter && v.role == VarRole::Input))
        candidates.push_back(v.name);
    }
    if (found && found->role == role) continue;  // reported already, through an error path
    // a usage error: it points at the model the command line talks about
    diags_.report(kind, flat_.span, {name});
    if (!found) {
      // the rule of every "did you mean" of a name the user typed (one-letter names too)
      if (const std::string s = rt::meant_name(name, candidates); !s.empty())
        diags_.help("did you mean '" + s + "'?");
      continue;
    }
    const char* what = found->role == VarRole::Variable    ? "a variable"
                       : found->role == VarRole::Parameter ? "a parameter"
                       : found->role == VarRole::Input     ? "an input"
                                                           : "a constant";
    diags_.note(found->span, "'" + name + "' is " + what + ", declared here");
    if (found->role == VarRole::Variable)
      diags_.help("a variable's start value is set with --start " + name + "=VALUE");
    else if (found->role == VarRole::Parameter || found->role == VarRole::Input)
      diags_.help(std::string(found->role == VarRole::Input ? "an input" : "a parameter") +
                  " is set with --set " + name + "=VALUE");
  }
}

Expr Flattener::resolve_parameters(Expr e, Span span, const std::string& what) {
  std::unordered_map<uint32_t, Expr> repl;
  for (uint32_t s : sym::free_symbols(e)) {
    auto it = flat_.var_of_symbol.find(s);
    if (it == flat_.var_of_symbol.end() || flat_.vars[it->second].role == VarRole::Variable) {
      std::string n =
          it == flat_.var_of_symbol.end() ? cx_.symbol_name(s) : flat_.vars[it->second].name;
      fail(DiagKind::not_structural, span, {what + " (it depends on '" + n + "')"});
    }
    if (flat_.vars[it->second].role == VarRole::Input) {
      diags_.report(DiagKind::input_in_parameter, span, {what, flat_.vars[it->second].name});
      diags_.note(flat_.vars[it->second].span, "the input is declared here");
      diags_.help("the compiler needs this value as a number; use a parameter");
      throw BuildError{};
    }
    flat_.mark_compile_time(
        s, what + (span.valid()
                       ? fmt::format(" at {}:{}:{}", sources_.path(span.file), span.line, span.col)
                       : std::string()));
    repl[s] = resolved_binding(it->second, span);
  }
  return sym::substitute(cx_, e, repl);
}

double Flattener::structural(Expr e, Span span, const std::string& what) {
  Expr r = resolve_parameters(e, span, what);
  if (!r->is_const()) fail(DiagKind::not_structural, span, {what});
  return r->value;
}

long Flattener::structural_int(const Value& v, Span span, const std::string& what) {
  double d = structural(scalar_of(v, span, what.c_str()), span, what);
  if (d != std::floor(d) || std::fabs(d) > 1e12)
    fail(DiagKind::type_error, span, {what + " must be an integer, found " + fmt::format("{}", d)});
  return static_cast<long>(d);
}

}  // namespace mbs::flattening
