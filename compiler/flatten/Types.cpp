// Types and checking (Modelica 3.6, ch. 4.8, 6.7 and 10): array sizes taken from a binding
// (`Real a[:] = {1, 2, 3}`), a declared size checked against its binding, and the type checks of
// bindings, start values, equations, conditions, built-in arguments and connections. Integer to
// Real is the one implicit conversion; every other mismatch is an error that names both types and
// points at the declaration in a note, never a silent conversion.
#include "compiler/flatten/Flattener.h"

namespace mbs::flattening {

const char* scalar_type_name(ScalarType t);  // Functions.cpp

namespace {

// A value of type `from` may be given where `to` is declared (Modelica 3.6, 6.7: Integer is
// converted to Real; nothing else converts).
bool assignable(ScalarType to, ScalarType from) {
  return to == from || (to == ScalarType::Real && from == ScalarType::Integer);
}

std::string an(ScalarType t) {
  return std::string(t == ScalarType::Integer ? "an " : "a ") + scalar_type_name(t);
}

// "a Real", "an Integer", "a value of the enumeration type 'E'"
std::string an(ScalarType t, const ClassEntry* e) {
  return e ? "a value of the enumeration type '" + e->full_name + "'" : an(t);
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// Array sizes

std::vector<int> Flattener::component_dims(const ast::Component& c, Instance& parent,
                                           const ClassEntry* owner, const ModEntry& m) {
  std::vector<const ast::Expr*> all;
  for (const auto& d : c.type_dims) all.push_back(d.get());
  for (const auto& d : c.dims) all.push_back(d.get());
  bool colon = false;
  for (const ast::Expr* d : all) colon = colon || d->kind == ast::ExprKind::Colon;
  if (!colon) {
    std::vector<int> dims = eval_dims(c.type_dims, Scope{&parent, nullptr, nullptr, owner});
    auto more = eval_dims(c.dims, Scope{&parent, nullptr, nullptr, owner});
    dims.insert(dims.end(), more.begin(), more.end());
    return dims;
  }
  // `Real a[:] = {1, 2, 3}`: a `:` takes its size from the binding (Modelica 3.6, 10.1)
  const ast::Expr* first_colon = nullptr;
  for (const ast::Expr* d : all)
    if (d->kind == ast::ExprKind::Colon && !first_colon) first_colon = d;
  if (!m.value || m.each) {
    diags_.report(DiagKind::unsupported, first_colon->span,
                  {"the size ':' of '" + c.name + "' without a binding to take it from"});
    diags_.help("give the array a value, e.g. 'Real " + c.name +
                "[:] = {1, 2, 3};', or write its size");
    throw BuildError{};
  }
  // evaluated once here; the elements pick their parts from the same value (eval_mod_value)
  const Value v = pick_part(shared_mod_value(m), m);
  if (v.is_string || v.shape.size() != all.size())
    fail(DiagKind::shape_mismatch, m.value->span,
         {fmt::format("'{}' is declared with {} dimension(s), its binding is {}", c.name,
                      all.size(), v.is_string ? std::string("a string") : shape_str(v.shape))});
  std::vector<int> dims;
  for (size_t k = 0; k < all.size(); ++k) {
    if (all[k]->kind == ast::ExprKind::Colon) {
      dims.push_back(v.shape[k]);
      continue;
    }
    Value d = eval(*all[k], Scope{&parent, nullptr, nullptr, owner});
    long n = structural_int(d, all[k]->span, "an array size");
    if (n != v.shape[k]) {
      diags_.report(DiagKind::shape_mismatch, m.value->span,
                    {fmt::format("'{}' is declared with size {} in dimension {}, its binding "
                                 "has size {} there",
                                 c.name, n, k + 1, v.shape[k])});
      diags_.note(all[k]->span, "the size is declared here");
      throw BuildError{};
    }
    dims.push_back(static_cast<int>(n));
  }
  return dims;
}

void Flattener::check_array_binding(const Instance& inst) {
  // the array declared with the binding: not an element of a larger array, no `each`
  const ModEntry& m = inst.mod;
  if (!m.value || m.each || !m.pick.empty() || inst.elems.empty()) return;
  const Instance* leaf = &inst;
  while (leaf->kind == Instance::Kind::Array && !leaf->elems.empty()) leaf = leaf->elems[0].get();
  if (leaf->kind != Instance::Kind::Scalar) return;
  const Value& v = shared_mod_value(m);
  if (v.is_string || v.shape.empty() || v.shape == inst.dims) return;
  diags_.report(DiagKind::shape_mismatch, m.value->span,
                {fmt::format("'{}' is declared with size {}, its binding has size {}", inst.path,
                             shape_str(inst.dims), shape_str(v.shape))});
  diags_.note(inst.span, "'" + inst.path + "' is declared here");
  throw BuildError{};
}

// ------------------------------------------------------------------------------------------------
// Type checks

void Flattener::check_value_type(size_t var, const Value& v, Span at, const std::string& what) {
  const FlatVar& fv = flat_.vars[var];
  if (v.is_string) {
    diags_.report(DiagKind::type_error, at,
                  {fmt::format("{} of '{}' is a String, but '{}' is declared {}", what, fv.name,
                               fv.name, scalar_type_name(fv.type))});
    diags_.note(fv.span, fmt::format("'{}' is declared {} here", fv.name, an(fv.type)));
    throw BuildError{};
  }
  const ClassEntry* declared = enumeration_of(var);
  if (declared || v.enumeration) {
    if (declared == v.enumeration) return;
    // an enumeration converts to nothing and nothing converts to it (Modelica 3.6, 4.9.5)
    diags_.report(DiagKind::type_error, at,
                  {fmt::format("{} of '{}' is {}, but '{}' is declared {}", what, fv.name,
                               an(v.type, v.enumeration), fv.name,
                               declared ? "of the enumeration type '" + declared->full_name + "'"
                                        : an(fv.type))});
    diags_.note(fv.span, fmt::format("'{}' is declared here", fv.name));
    if (declared && !v.enumeration)
      diags_.help("write a literal of the type, e.g. '" + declared->full_name + "." +
                  (declared->def->enum_literals.empty() ? std::string("a")
                                                        : declared->def->enum_literals[0]) +
                  "'");
    else if (v.enumeration)
      diags_.help("Integer(e) is the position of an enumeration value, starting at 1");
    throw BuildError{};
  }
  if (assignable(fv.type, v.type)) return;
  diags_.report(DiagKind::type_error, at,
                {fmt::format("{} of '{}' is {} expression, but '{}' is declared {}", what, fv.name,
                             an(v.type), fv.name, scalar_type_name(fv.type))});
  diags_.note(fv.span, fmt::format("'{}' is declared {} here", fv.name, an(fv.type)));
  if (fv.type == ScalarType::Integer && v.type == ScalarType::Real)
    diags_.help(
        "Modelica converts Integer to Real, never back: round explicitly with integer(...)");
  else if (fv.type == ScalarType::Boolean)
    diags_.help("a Boolean is true or false, or a relation such as 'x > 0'");
  throw BuildError{};
}

void Flattener::check_condition(const Value& c, Span at, const char* what) {
  if (!c.is_string && c.type == ScalarType::Boolean) return;
  fail(DiagKind::type_error, at,
       {fmt::format("the condition of {} must be a Boolean, found {}", what,
                    c.is_string ? std::string("a String") : an(c.type))});
}

void Flattener::check_equation_types(const Value& l, const Value& r, const ast::Equation& eq) {
  // the variable a side is, if it is one variable (for the note)
  const auto var_of = [&](const Value& v) -> const FlatVar* {
    if (v.size() != 1 || !v.elems[0]->is_symbol()) return nullptr;
    auto it = flat_.var_of_symbol.find(v.elems[0]->symbol);
    return it == flat_.var_of_symbol.end() ? nullptr : &flat_.vars[it->second];
  };
  if (l.enumeration != r.enumeration) {
    diags_.report(DiagKind::type_error, eq.span,
                  {fmt::format("the two sides of the equation are {} and {}",
                               an(l.type, l.enumeration), an(r.type, r.enumeration))});
    const FlatVar* v = var_of(l.enumeration ? l : r);
    if (v) diags_.note(v->span, fmt::format("'{}' is declared here", v->name));
    throw BuildError{};
  }
  const bool lb = l.type == ScalarType::Boolean, rb = r.type == ScalarType::Boolean;
  if (lb != rb) {
    diags_.report(DiagKind::type_error, eq.span,
                  {fmt::format("the two sides of the equation are {} and {}: a Boolean equals "
                               "only a Boolean",
                               an(l.type), an(r.type))});
    const FlatVar* v = var_of(lb ? l : r);
    if (!v) v = var_of(lb ? r : l);
    if (v) diags_.note(v->span, fmt::format("'{}' is declared {} here", v->name, an(v->type)));
    throw BuildError{};
  }
  // an Integer variable defined by a Real expression: the expression depends on no Real unknown
  // (only on time, parameters and discrete values), so this equation can only compute the
  // Integer from a Real, which Modelica never converts (`Integer i; equation i = 2.5*time;`)
  for (const bool left : {true, false}) {
    const Value& iv = left ? l : r;
    const Value& rv = left ? r : l;
    if (iv.type != ScalarType::Integer || rv.type != ScalarType::Real) continue;
    const FlatVar* v = var_of(iv);
    if (!v || v->type != ScalarType::Integer ||
        (v->role != VarRole::Variable && v->role != VarRole::Discrete))
      continue;
    bool real_unknown = false;
    for (Expr e : rv.elems)
      for (uint32_t s : sym::free_symbols(e)) {
        auto it = flat_.var_of_symbol.find(s);
        if (it != flat_.var_of_symbol.end() && flat_.vars[it->second].role == VarRole::Variable &&
            flat_.vars[it->second].type == ScalarType::Real)
          real_unknown = true;
      }
    if (real_unknown) continue;
    diags_.report(
        DiagKind::type_error, eq.span,
        {fmt::format("the Integer variable '{}' is defined by a Real expression", v->name)});
    diags_.note(v->span, fmt::format("'{}' is declared an Integer here", v->name));
    diags_.help(
        "Modelica converts Integer to Real, never back: round explicitly with integer(...)");
    throw BuildError{};
  }
}

void Flattener::check_connect_types(const FlatVar& a, const FlatVar& b, const ast::Equation& eq) {
  if (a.type == b.type) return;
  diags_.report(DiagKind::bad_connect, eq.span,
                {fmt::format("cannot connect '{}' ({}) with '{}' ({}): connected variables have "
                             "one type",
                             a.name, scalar_type_name(a.type), b.name, scalar_type_name(b.type))});
  diags_.note(a.span, fmt::format("'{}' is declared {} here", a.name, an(a.type)));
  diags_.note(b.span, fmt::format("'{}' is declared {} here", b.name, an(b.type)));
  throw BuildError{};
}

void Flattener::check_numeric_argument(const std::string& fn, const Value& v, Span at) {
  if (!v.is_string && v.type != ScalarType::Boolean) return;
  fail(DiagKind::type_error, at,
       {fmt::format("the argument of '{}' must be a Real or an Integer, found {}", fn,
                    v.is_string ? std::string("a String") : an(v.type))});
}

// ------------------------------------------------------------------------------------------------
// Enumerations (Modelica 3.6, 4.9.5): a value is an Integer, the 1-based position of its literal,
// that carries its type (Value::enumeration) so that relations and bindings are checked.

Value Flattener::enumeration_value(const ClassEntry* en, const ast::Expr& ref, size_t part) {
  const auto& lits = en->def->enum_literals;
  Value v;
  v.type = ScalarType::Integer;
  v.enumeration = en;
  if (part >= ref.ref.size()) {  // the type itself: all its literals, in order
    for (size_t i = 0; i < lits.size(); ++i) v.elems.push_back(cx_.num(static_cast<double>(i + 1)));
    v.shape = std::vector<int>{static_cast<int>(lits.size())};
    return v;
  }
  const ast::RefPart& p = ref.ref[part];
  const auto it = std::find(lits.begin(), lits.end(), p.name);
  if (it == lits.end()) {
    diags_.report(DiagKind::unknown_member, p.span, {en->full_name, p.name});
    help_did_you_mean(p.name, lits);
    diags_.note(en->def->span, "the enumeration '" + en->full_name + "' is declared here");
    throw BuildError{};
  }
  if (!p.subscripts.empty())
    fail(DiagKind::bad_subscript, p.span, {"an enumeration literal cannot be subscripted"});
  v.elems.push_back(cx_.num(static_cast<double>(it - lits.begin() + 1)));
  return v;
}

void Flattener::check_enumeration_operands(const std::string& op, const Value& a, const Value& b,
                                           Span span) {
  static const std::set<std::string> relations = {"==", "<>", "<",   "<=", ">",
                                                  ">=", "if", "min", "max"};
  if (!relations.count(op))
    fail(DiagKind::type_error, span,
         {fmt::format(
             "'{}' is not defined for {}: an enumeration value only compares (==, <>, "
             "<, <=, >, >=); Integer(e) is its position",
             op,
             an(a.enumeration ? a.type : b.type, a.enumeration ? a.enumeration : b.enumeration))});
  if (a.enumeration == b.enumeration) return;
  fail(DiagKind::type_error, span,
       {fmt::format("{} of {} and {}: values of different types",
                    op == "if" ? "the branches" : "'" + op + "'", an(a.type, a.enumeration),
                    an(b.type, b.enumeration))});
}

// ------------------------------------------------------------------------------------------------
// Strings (Modelica 3.6, 4.9.4): parameters and constants, concatenation with `+`, String(x, ...).
// A String is a text known at compile time; a String variable is refused (Instantiate.cpp).

Value Flattener::string_instance_value(Instance* inst, Span span) {
  if (!inst->mod.value) {
    diags_.report(DiagKind::parameter_no_value, span.valid() ? span : inst->span, {inst->path});
    diags_.help("give it a value in the declaration or a modifier");
    throw BuildError{};
  }
  if (strings_failed_.count(inst)) throw BuildError{};  // reported already
  if (!strings_in_progress_.insert(inst).second)
    fail(DiagKind::parameter_cycle, span.valid() ? span : inst->span, {inst->path});
  Value v;
  try {
    v = eval_mod_value(inst->mod);
  } catch (...) {
    strings_in_progress_.erase(inst);
    strings_failed_.insert(inst);
    throw;
  }
  strings_in_progress_.erase(inst);
  if (!v.is_string) {
    strings_failed_.insert(inst);
    diags_.report(DiagKind::type_error, inst->mod.value->span,
                  {fmt::format("the value of '{}' is {}, but '{}' is declared String", inst->path,
                               an(v.type, v.enumeration), inst->path)});
    diags_.note(inst->span, fmt::format("'{}' is declared here", inst->path));
    diags_.help("String(x) turns a number into text");
    throw BuildError{};
  }
  return v;
}

std::string Flattener::compile_time_string(const ast::Expr& e, Scope s) {
  Value v = eval(e, s);
  if (!v.is_string)
    fail(DiagKind::type_error, e.span,
         {"expected a String, found " + (v.shape.empty()
                                             ? an(v.type, v.enumeration)
                                             : "an array of shape " + shape_str(v.shape))});
  return v.str;
}

// String(x, significantDigits = 6, minimumLength = 0, leftJustified = true), String(x, format =
// "8.3f"), String(i), String(b), String(e) (Modelica 3.6, 3.7.3): of a value known at compile time.
Value Flattener::string_call(const ast::Expr& e, Scope s) {
  if (e.args.empty())
    fail(DiagKind::bad_call, e.span, {"'String' takes the value to convert, 0 given"});
  Value v = eval(*e.args[0], s);
  if (v.is_string) return v;
  Expr x = scalar_of(v, e.args[0]->span, "the value converted by String");
  const double d = structural(x, e.args[0]->span, "the value converted by String(...)");
  long digits = 6, min_length = 0;
  bool left = true;
  std::string format;
  for (size_t i = 1; i < e.args.size(); ++i) {
    const std::string name = i < e.arg_names.size() ? e.arg_names[i] : "";
    const Span at = e.args[i]->span;
    if (name == "significantDigits" && v.type == ScalarType::Real && !v.enumeration) {
      digits = structural_int(eval(*e.args[i], s), at, "significantDigits");
      if (digits < 1 || digits > 17)
        fail(DiagKind::bad_call, at, {"significantDigits must be 1 to 17"});
    } else if (name == "minimumLength") {
      min_length = structural_int(eval(*e.args[i], s), at, "minimumLength");
      if (min_length < 0 || min_length > 1000)
        fail(DiagKind::bad_call, at, {"minimumLength must be 0 to 1000"});
    } else if (name == "leftJustified") {
      Value b = eval(*e.args[i], s);
      check_condition(b, at, "leftJustified");
      left = structural(scalar_of(b, at, "leftJustified"), at, "leftJustified") != 0.0;
    } else if (name == "format" && v.type == ScalarType::Real && !v.enumeration) {
      format = compile_time_string(*e.args[i], s);
      // [flags][width][.precision]conversion, as in C (Modelica 3.6, 3.7.3)
      size_t k = format.find_first_not_of("-+ #0");
      k = format.find_first_not_of("0123456789", k == std::string::npos ? format.size() : k);
      if (k != std::string::npos && format[k] == '.')
        k = format.find_first_not_of("0123456789", k + 1);
      if (format.size() > 32 || k == std::string::npos || k + 1 != format.size() ||
          std::string("eEfFgGdixXo").find(format[k]) == std::string::npos)
        fail(DiagKind::bad_call, at,
             {"format = \"" + format +
              "\" is not a format of one number ([flags][width][.precision] and one of "
              "e, E, f, F, g, G, d, i, x, X, o)"});
    } else {
      diags_.report(DiagKind::bad_call, at,
                    {name.empty() ? std::string("String(...) takes its options by name")
                                  : "String of " + an(v.type, v.enumeration) + " has no option '" +
                                        name + "'"});
      diags_.help(v.type == ScalarType::Real && !v.enumeration
                      ? "the options are significantDigits, minimumLength, leftJustified, format"
                      : "the options are minimumLength and leftJustified");
      throw BuildError{};
    }
  }
  std::string text;
  if (v.enumeration) {
    const auto& lits = v.enumeration->def->enum_literals;
    const long k = static_cast<long>(d);
    text = k >= 1 && k <= static_cast<long>(lits.size()) ? lits[k - 1] : std::to_string(k);
  } else if (v.type == ScalarType::Boolean) {
    text = d != 0.0 ? "true" : "false";
  } else if (v.type == ScalarType::Integer) {
    text = fmt::format("{}", static_cast<long long>(d));
  } else if (!format.empty()) {
    char buf[512];
    const std::string f = "%" + format;
    const char conv = format.back();
    const bool integer = conv == 'd' || conv == 'i' || conv == 'x' || conv == 'X' || conv == 'o';
    if (integer && conv != 'd' && conv != 'i')
      std::snprintf(buf, sizeof buf, (f.substr(0, f.size() - 1) + "ll" + conv).c_str(),
                    static_cast<unsigned long long>(static_cast<long long>(d)));
    else if (integer)
      std::snprintf(buf, sizeof buf, (f.substr(0, f.size() - 1) + "lld").c_str(),
                    static_cast<long long>(d));
    else
      std::snprintf(buf, sizeof buf, f.c_str(), d);
    text = buf;
  } else {
    text = fmt::format("{:.{}g}", d, static_cast<int>(digits));
  }
  if (static_cast<long>(text.size()) < min_length) {
    const std::string pad(static_cast<size_t>(min_length) - text.size(), ' ');
    text = left ? text + pad : pad + text;
  }
  Value r;
  r.is_string = true;
  r.str = std::move(text);
  return r;
}

}  // namespace mbs::flattening
