// Expressions to values: references with subscripts, unary and binary operators on scalars
// and arrays, if-expressions, array constructors and ranges, and the built-in functions.
#include "compiler/flatten/Flattener.h"

namespace mbs::flattening {

const char* scalar_type_name(ScalarType t);  // Functions.cpp

Value Flattener::apply_subscripts(const Value& v, const std::vector<ast::ExprPtr>& subs, Scope s,
                                  Span span, const std::string& name) {
  if (subs.empty()) return v;
  if (subs.size() > v.shape.size())
    fail(DiagKind::bad_subscript, span,
         {fmt::format("'{}' has {} dimension(s) but {} subscript(s) are given", name,
                      v.shape.size(), subs.size())});
  // index lists per dimension
  std::vector<std::vector<int>> idx(v.shape.size());
  std::vector<bool> keep(v.shape.size(), true);
  for (size_t d = 0; d < v.shape.size(); ++d) {
    int n = v.shape[d];
    if (d >= subs.size() || subs[d]->kind == ast::ExprKind::Colon) {
      for (int i = 0; i < n; ++i) idx[d].push_back(i);
      continue;
    }
    Iterators end_it{s.iters, "end", Value::of(cx_.num(n), ScalarType::Integer)};
    Value sv = eval(*subs[d], s.with(&end_it));
    if (sv.shape.empty()) {
      long i = structural_int(sv, subs[d]->span, "a subscript");
      if (i < 1 || i > n)
        fail(DiagKind::index_out_of_range, subs[d]->span,
             {std::to_string(i), std::to_string(n), name});
      idx[d].push_back(static_cast<int>(i - 1));
      keep[d] = false;
    } else {
      for (Expr e : sv.elems) {
        double di = structural(e, subs[d]->span, "a subscript");
        long i = static_cast<long>(di);
        if (i < 1 || i > n)
          fail(DiagKind::index_out_of_range, subs[d]->span,
               {std::to_string(i), std::to_string(n), name});
        idx[d].push_back(static_cast<int>(i - 1));
      }
    }
  }
  Value r;
  r.type = v.type;
  for (size_t d = 0; d < idx.size(); ++d)
    if (keep[d]) r.shape.push_back(static_cast<int>(idx[d].size()));
  std::vector<size_t> stride(v.shape.size(), 1);
  for (size_t d = v.shape.size(); d-- > 1;) stride[d - 1] = stride[d] * v.shape[d];
  std::vector<size_t> pos(idx.size(), 0);
  while (true) {
    size_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d][pos[d]] * stride[d];
    r.elems.push_back(v.elems[off]);
    size_t d = idx.size();
    while (d > 0) {
      --d;
      if (++pos[d] < idx[d].size()) break;
      pos[d] = 0;
      if (d == 0) return r;
    }
    if (idx.empty()) return r;
  }
}

Value Flattener::eval_ref(const ast::Expr& e, Scope s) {
  const auto& parts = e.ref;
  // a global name `.P.c` (Modelica 3.6, 5.3.3): a constant of a top-level class
  const bool global = !parts[0].name.empty() && parts[0].name[0] == '.';
  const std::string first = global ? parts[0].name.substr(1) : parts[0].name;
  Span span = e.span;
  // for-loop iterators
  if (s.iters && !global) {
    if (const Value* it = s.iters->find(first)) {
      if (parts.size() > 1) fail(DiagKind::unknown_member, parts[1].span, {first, parts[1].name});
      return apply_subscripts(*it, parts[0].subscripts, s, span, first);
    }
  }
  // the inputs, outputs and protected variables of a function
  if (s.frame && !global) {
    if (auto it = s.frame->locals.find(first); it != s.frame->locals.end()) {
      if (parts.size() > 1 && !it->second.record)
        fail(DiagKind::unknown_member, parts[1].span, {first, parts[1].name});
      if (!it->second.defined) {
        diags_.report(DiagKind::unassigned_use, parts[0].span, {first});
        diags_.note(it->second.decl->span, it->second.has_value
                                               ? "'" + first + "' is assigned on some paths only"
                                               : "'" + first + "' is declared here");
        throw BuildError{};
      }
      if (parts.size() > 1) {
        // a member of a record input, output or local: r.a, r.b.c[2]
        Value v = it->second.value;
        for (size_t i = 1; i < parts.size(); ++i) {
          if (!parts[i - 1].subscripts.empty())
            fail(DiagKind::unsupported, parts[i - 1].span, {"a subscript before a record member"});
          if (!v.record) fail(DiagKind::unknown_member, parts[i].span, {first, parts[i].name});
          v = record_field(v, parts[i].name, parts[i].span);
        }
        return apply_subscripts(v, parts.back().subscripts, s, span, first);
      }
      return apply_subscripts(it->second.value, parts[0].subscripts, s, span, first);
    }
  }
  // components: the elements of the class whose text this is (own or inherited, not those of a
  // class that extends it), in the instance the expression belongs to
  std::optional<Hidden> hidden;
  Instance* inst = s.inst && !global ? visible_member(s.inst, first, s.cls, &hidden) : nullptr;
  if (s.inst && !s.frame && !global) check_conditional_use(s.inst, inst, first, parts[0].span);
  if (!inst && !global && !s.frame && first == "time" && parts.size() == 1 &&
      parts[0].subscripts.empty())
    return Value::of(cx_.symbol(flat_.time_symbol));
  if (!inst) {
    // a constant in a package: P.c
    const ClassEntry* from = global                  ? nullptr
                             : s.frame               ? s.frame->fn
                             : s.cls                 ? s.cls
                             : s.inst && s.inst->cls ? s.inst->cls
                                                     : nullptr;
    const ClassEntry* pkg = nullptr;
    size_t k = 0;
    if (parts.size() == 1) {
      // a constant of an enclosing class (lexical scope; Modelica 3.6, section 5.3.1: only
      // constants, the other components of an enclosing class are not found)
      for (const ClassEntry* c = from ? from->parent : nullptr; c && !pkg; c = c->parent)
        for (const auto& comp : c->def->components)
          if (comp.name == first) {
            if (comp.variability != ast::Variability::Constant)
              check_enclosing_constant(first, comp, c, parts[0].span);
            pkg = c;
          }
    } else {
      pkg = lookup_first(first, from, span);
      k = 1;
      while (pkg && k + 1 < parts.size()) {
        const ClassEntry* n = find_nested(pkg, parts[k].name);
        if (!n) break;
        pkg = n;
        ++k;
      }
      // a literal of an enumeration type: E.a
      if (pkg && pkg->def->is_enumeration && k + 1 == parts.size())
        return enumeration_value(pkg, e, k);
      // an enumeration type named through its package, as the array of its literals: P.E
      if (pkg && k + 1 == parts.size() && parts[k].subscripts.empty())
        if (const ClassEntry* n = find_nested(pkg, parts[k].name); n && n->def->is_enumeration)
          return enumeration_value(n, e, parts.size());
    }
    // an enumeration type as the array of its literals: `for e in E loop`
    if (!pkg && parts.size() == 1 && parts[0].subscripts.empty())
      if (const ClassEntry* t = lookup_first(first, from, span); t && t->def->is_enumeration)
        return enumeration_value(t, e, parts.size());
    if (!pkg) {
      diags_.report(DiagKind::unknown_name, parts[0].span, {first});
      if (hidden) {
        note_hidden(first, *hidden, s.cls);
        throw BuildError{};
      }
      auto names = member_names(s.inst);
      if (s.frame)
        for (const auto& [n, l] : s.frame->locals) names.push_back(n);
      if (s.iters)
        for (const Iterators* it = s.iters; it; it = it->outer) names.push_back(it->name);
      help_did_you_mean(first, names);
      throw BuildError{};
    }
    // instantiate the package once as a composite holding its constants
    Instance* pinst = nullptr;
    for (auto& p : package_instances_)
      if (p->cls == pkg) pinst = p.get();
    if (!pinst) {
      auto p = std::make_unique<Instance>();
      p->kind = Instance::Kind::Composite;
      p->cls = pkg;
      p->path = pkg->full_name;
      p->role = VarRole::Constant;
      p->span = parts[0].span;
      instantiate_members(*p, pkg, ModEntry{}, 0);
      pinst = p.get();
      package_instances_.push_back(std::move(p));
    }
    inst = pinst->member(parts[k].name);
    if (!inst) fail(DiagKind::unknown_member, parts[k].span, {pkg->full_name, parts[k].name});
    if (k > 0) check_class_member(inst, pkg, parts[k].span);
    // evaluate remaining parts against the package instance
    Instance* cur = pinst;
    Value val;
    bool have_val = false;
    for (size_t i = k; i < parts.size(); ++i) {
      Instance* m = cur->member(parts[i].name);
      if (!m) fail(DiagKind::unknown_member, parts[i].span, {cur->path, parts[i].name});
      if (i > k) check_dot_access(m, cur->path, parts[i].span);
      cur = m;
      if (!parts[i].subscripts.empty() || i + 1 == parts.size()) {
        val = apply_subscripts(instance_value(cur, span), parts[i].subscripts, s, span, cur->path);
        have_val = true;
        if (i + 1 != parts.size())
          fail(DiagKind::unsupported, parts[i + 1].span,
               {"member access after a subscript of a package constant"});
      }
    }
    if (!have_val) val = instance_value(cur, span);
    return val;
  }
  // walk the parts through the instance tree
  Instance* cur = inst;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) {
      if (cur->kind != Instance::Kind::Composite)
        fail(DiagKind::unknown_member, parts[i].span, {cur->path, parts[i].name});
      Instance* m = cur->member(parts[i].name);
      check_conditional_use(cur, m, parts[i].name, parts[i].span);
      if (!m) {
        diags_.report(DiagKind::unknown_member, parts[i].span, {cur->path, parts[i].name});
        help_did_you_mean(parts[i].name, member_names(cur));
        throw BuildError{};
      }
      check_dot_access(m, cur->path, parts[i].span);
      cur = m;
    }
    const auto& subs = parts[i].subscripts;
    if (subs.empty()) continue;
    // scalar subscripts on an instance array select an element instance
    bool all_scalar = cur->kind == Instance::Kind::Array;
    std::vector<long> ids;
    if (all_scalar) {
      for (const auto& sx : subs) {
        if (sx->kind == ast::ExprKind::Colon) {
          all_scalar = false;
          break;
        }
        Iterators end_it{
            s.iters, "end",
            Value::of(cx_.num(cur->dims.size() > ids.size() ? cur->dims[ids.size()] : 0),
                      ScalarType::Integer)};
        Value v = eval(*sx, s.with(&end_it));
        if (!v.shape.empty()) {
          all_scalar = false;
          break;
        }
        ids.push_back(structural_int(v, sx->span, "a subscript"));
      }
    }
    if (all_scalar && ids.size() <= cur->dims.size()) {
      for (long id : ids) {
        if (cur->kind != Instance::Kind::Array) break;
        long n = static_cast<long>(cur->elems.size());
        if (id < 1 || id > n)
          fail(DiagKind::index_out_of_range, parts[i].span,
               {std::to_string(id), std::to_string(n), cur->path});
        cur = cur->elems[id - 1].get();
      }
      continue;
    }
    // slices: only on arrays of scalars and only as the last part
    if (i + 1 != parts.size())
      fail(DiagKind::unsupported, parts[i].span, {"a slice of an array of components"});
    return apply_subscripts(instance_value(cur, span), subs, s, span, cur->path);
  }
  return instance_value(cur, span);
}

Value Flattener::eval_binary(const std::string& op, const Value& a, const Value& b, Span span) {
  if (op == "+" && a.is_string && b.is_string) {  // concatenation (Modelica 3.6, 3.4)
    Value r = a;
    r.str += b.str;
    return r;
  }
  auto elementwise = [&](auto f, ScalarType t) -> Value {
    if (a.is_string || b.is_string)
      fail(DiagKind::type_error, span, {"strings cannot be used in arithmetic"});
    Value r;
    r.type = t;
    if (a.shape == b.shape) {
      r.shape = a.shape;
      for (size_t i = 0; i < a.size(); ++i) r.elems.push_back(f(a.elems[i], b.elems[i]));
    } else if (a.shape.empty()) {
      r.shape = b.shape;
      for (Expr e : b.elems) r.elems.push_back(f(a.elems[0], e));
    } else if (b.shape.empty()) {
      r.shape = a.shape;
      for (Expr e : a.elems) r.elems.push_back(f(e, b.elems[0]));
    } else {
      fail(DiagKind::shape_mismatch, span,
           {fmt::format("operands of '{}' have incompatible shapes {} and {}", op,
                        shape_str(a.shape), shape_str(b.shape))});
    }
    return r;
  };
  ScalarType num_t = (a.type == ScalarType::Integer && b.type == ScalarType::Integer)
                         ? ScalarType::Integer
                         : ScalarType::Real;
  auto& cx = cx_;
  if (op == "+" || op == ".+") {
    if (op == "+" && a.shape != b.shape && !(a.shape.empty() && b.shape.empty()))
      fail(DiagKind::shape_mismatch, span,
           {fmt::format("operands of '+' have different shapes {} and {} (use '.+' to add a "
                        "scalar to every element)",
                        shape_str(a.shape), shape_str(b.shape))});
    return elementwise([&](Expr x, Expr y) { return cx.add(x, y); }, num_t);
  }
  if (op == "-" || op == ".-") {
    if (op == "-" && a.shape != b.shape && !(a.shape.empty() && b.shape.empty()))
      fail(DiagKind::shape_mismatch, span,
           {fmt::format("operands of '-' have different shapes {} and {} (use '.-' to subtract a "
                        "scalar from every element)",
                        shape_str(a.shape), shape_str(b.shape))});
    return elementwise([&](Expr x, Expr y) { return cx.sub(x, y); }, num_t);
  }
  if (op == ".*") return elementwise([&](Expr x, Expr y) { return cx.mul(x, y); }, num_t);
  if (op == "./")
    return elementwise([&](Expr x, Expr y) { return cx.div(x, y); }, ScalarType::Real);
  if (op == ".^") return elementwise([&](Expr x, Expr y) { return cx.pow(x, y); }, num_t);
  if (op == "/") {
    if (!b.shape.empty())
      fail(DiagKind::shape_mismatch, span,
           {"the divisor of '/' must be a scalar (use './' for element-wise division)"});
    return elementwise([&](Expr x, Expr y) { return cx.div(x, y); }, ScalarType::Real);
  }
  if (op == "^") {
    if (!a.shape.empty() || !b.shape.empty())
      fail(DiagKind::shape_mismatch, span,
           {"'^' needs scalar operands (use '.^' for element-wise powers)"});
    return elementwise([&](Expr x, Expr y) { return cx.pow(x, y); }, num_t);
  }
  if (op == "*") {
    if (a.shape.empty() || b.shape.empty())
      return elementwise([&](Expr x, Expr y) { return cx.mul(x, y); }, num_t);
    auto dot = [&](const std::vector<Expr>& xs, const std::vector<Expr>& ys) {
      std::vector<Expr> t;
      for (size_t i = 0; i < xs.size(); ++i) t.push_back(cx.mul(xs[i], ys[i]));
      return cx.add(std::span<const Expr>(t));
    };
    Value r;
    r.type = num_t;
    if (a.shape.size() == 1 && b.shape.size() == 1) {
      if (a.shape[0] != b.shape[0])
        fail(DiagKind::shape_mismatch, span,
             {fmt::format("vectors of sizes {} and {} cannot be multiplied", a.shape[0],
                          b.shape[0])});
      r.elems.push_back(dot(a.elems, b.elems));
      return r;
    }
    if (a.shape.size() == 2 && b.shape.size() == 1) {
      int m = a.shape[0], n = a.shape[1];
      if (n != b.shape[0])
        fail(DiagKind::shape_mismatch, span,
             {fmt::format("a {}x{} matrix cannot multiply a vector of size {}", m, n, b.shape[0])});
      r.shape = {m};
      for (int i = 0; i < m; ++i) {
        std::vector<Expr> row(a.elems.begin() + i * n, a.elems.begin() + (i + 1) * n);
        r.elems.push_back(dot(row, b.elems));
      }
      return r;
    }
    if (a.shape.size() == 1 && b.shape.size() == 2) {
      int n = b.shape[0], p = b.shape[1];
      if (n != a.shape[0])
        fail(DiagKind::shape_mismatch, span,
             {fmt::format("a vector of size {} cannot multiply a {}x{} matrix", a.shape[0], n, p)});
      r.shape = {p};
      for (int j = 0; j < p; ++j) {
        std::vector<Expr> col;
        for (int i = 0; i < n; ++i) col.push_back(b.elems[i * p + j]);
        r.elems.push_back(dot(a.elems, col));
      }
      return r;
    }
    if (a.shape.size() == 2 && b.shape.size() == 2) {
      int m = a.shape[0], n = a.shape[1], p = b.shape[1];
      if (n != b.shape[0])
        fail(DiagKind::shape_mismatch, span,
             {fmt::format("matrices of shapes {}x{} and {}x{} cannot be multiplied", m, n,
                          b.shape[0], p)});
      r.shape = {m, p};
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < p; ++j) {
          std::vector<Expr> row(a.elems.begin() + i * n, a.elems.begin() + (i + 1) * n);
          std::vector<Expr> col;
          for (int k = 0; k < n; ++k) col.push_back(b.elems[k * p + j]);
          r.elems.push_back(dot(row, col));
        }
      return r;
    }
    fail(DiagKind::shape_mismatch, span,
         {fmt::format("'*' is not defined for shapes {} and {}", shape_str(a.shape),
                      shape_str(b.shape))});
  }
  static const std::map<std::string, sym::Op> rel = {
      {"<", sym::Op::Lt},  {"<=", sym::Op::Le}, {">", sym::Op::Gt},    {">=", sym::Op::Ge},
      {"==", sym::Op::Eq}, {"<>", sym::Op::Ne}, {"and", sym::Op::And}, {"or", sym::Op::Or}};
  if (auto it = rel.find(op); it != rel.end()) {
    sym::Op o = it->second;
    return elementwise([&](Expr x, Expr y) { return cx.binary(o, x, y); }, ScalarType::Boolean);
  }
  fail(DiagKind::unsupported, span, {"operator '" + op + "'"});
}

Value Flattener::eval(const ast::Expr& e, Scope s) {
  using K = ast::ExprKind;
  switch (e.kind) {
    case K::Ref:
      return no_stray_record(eval_ref(e, s), e);
    case K::Call:
      return no_stray_record(eval_call(e, s), e);
    case K::Unary:
    case K::Binary:
      return eval_operator(e, s);
    default:
      return eval_compound(e, s);
  }
}

Value Flattener::eval_operator(const ast::Expr& e, Scope s) {
  if (e.kind == ast::ExprKind::Binary) {
    Value a = eval(*e.args[0], s);
    Value b = eval(*e.args[1], s);
    if (a.enumeration || b.enumeration) check_enumeration_operands(e.op, a, b, e.span);
    return eval_binary(e.op, a, b, e.span);
  }
  Value a = eval(*e.args[0], s);
  if (a.enumeration) check_enumeration_operands(e.op, a, a, e.span);
  if (a.is_string) fail(DiagKind::type_error, e.span, {"strings cannot be used in arithmetic"});
  if (e.op == "+") return a;
  for (auto& x : a.elems) x = e.op == "-" ? cx_.neg(x) : cx_.unary(sym::Op::Not, x);
  if (e.op == "not") a.type = ScalarType::Boolean;
  return a;
}

Value Flattener::eval_compound(const ast::Expr& e, Scope s) {
  using K = ast::ExprKind;
  switch (e.kind) {
    case K::Number:
      return Value::of(cx_.num(e.number), e.is_integer ? ScalarType::Integer : ScalarType::Real);
    case K::Bool:
      return Value::of(cx_.num(e.boolean ? 1.0 : 0.0), ScalarType::Boolean);
    case K::String: {
      Value v;
      v.is_string = true;
      v.str = e.text;
      return v;
    }
    case K::Ref:
    case K::Call:
    case K::Unary:
    case K::Binary:
      return eval(e, s);  // eval's own
    case K::Comprehension:
      return eval_comprehension(e, s);
    case K::Reduction:
      return eval_reduction(e, s);
    case K::If: {
      // if c1 then a1 elseif c2 then a2 else b   (args: c1, a1, c2, a2, ..., b)
      size_t n = e.args.size();
      Value result = eval(*e.args[n - 1], s);
      for (size_t i = n - 1; i >= 2; i -= 2) {
        Value c = eval(*e.args[i - 2], s);
        check_condition(c, e.args[i - 2]->span, "an if-expression");
        Expr ce = scalar_of(c, e.args[i - 2]->span, "an if condition");
        if (ce->is_const()) {
          if (ce->value != 0.0) result = eval(*e.args[i - 1], s);
          continue;
        }
        Value t = eval(*e.args[i - 1], s);
        if (t.enumeration != result.enumeration)
          check_enumeration_operands("if", t, result, e.span);
        if (t.shape != result.shape)
          fail(DiagKind::shape_mismatch, e.span,
               {"the branches of an if-expression have different shapes"});
        for (size_t k = 0; k < t.size(); ++k)
          result.elems[k] = cx_.select(ce, t.elems[k], result.elems[k]);
        if (t.type == ScalarType::Real) result.type = ScalarType::Real;
      }
      return result;
    }
    case K::Array: {
      Value r;
      r.type = ScalarType::Integer;
      if (e.args.empty()) {
        r.shape = std::vector<int>{0};
        return r;
      }
      std::vector<int> inner;
      for (size_t i = 0; i < e.args.size(); ++i) {
        Value v = eval(*e.args[i], s);
        if (v.is_string)
          fail(DiagKind::type_error, e.args[i]->span, {"arrays of strings are not supported"});
        if (i == 0)
          inner = v.shape;
        else if (v.shape != inner)
          fail(DiagKind::shape_mismatch, e.args[i]->span,
               {fmt::format("array elements have different shapes {} and {}", shape_str(inner),
                            shape_str(v.shape))});
        if (v.type == ScalarType::Real) r.type = ScalarType::Real;
        if (v.type == ScalarType::Boolean && i == 0) r.type = ScalarType::Boolean;
        if (i == 0) r.enumeration = v.enumeration;
        r.elems.insert(r.elems.end(), v.elems.begin(), v.elems.end());
      }
      r.shape.push_back(static_cast<int>(e.args.size()));
      r.shape.insert(r.shape.end(), inner.begin(), inner.end());
      return r;
    }
    case K::Matrix: {
      // promote to 2-D, concatenate horizontally within rows and vertically across rows
      std::vector<Value> rows;
      for (const auto& row : e.rows) {
        Value acc;
        bool first = true;
        for (const auto& el : row) {
          Value v = eval(*el, s);
          if (v.shape.empty())
            v.shape = std::vector<int>{1, 1};
          else if (v.shape.size() == 1)
            v.shape = std::vector<int>{v.shape[0], 1};
          if (v.shape.size() != 2)
            fail(DiagKind::shape_mismatch, el->span,
                 {"matrix elements must be scalars, vectors or matrices"});
          if (first) {
            acc = v;
            first = false;
            continue;
          }
          if (v.shape[0] != acc.shape[0])
            fail(DiagKind::shape_mismatch, el->span,
                 {"elements of a matrix row have different numbers of rows"});
          Value c;
          c.type = (acc.type == ScalarType::Real || v.type == ScalarType::Real) ? ScalarType::Real
                                                                                : acc.type;
          int m = acc.shape[0], n1 = acc.shape[1], n2 = v.shape[1];
          c.shape = std::vector<int>{m, n1 + n2};
          for (int i = 0; i < m; ++i) {
            c.elems.insert(c.elems.end(), acc.elems.begin() + i * n1,
                           acc.elems.begin() + (i + 1) * n1);
            c.elems.insert(c.elems.end(), v.elems.begin() + i * n2, v.elems.begin() + (i + 1) * n2);
          }
          acc = std::move(c);
        }
        rows.push_back(std::move(acc));
      }
      Value r = rows[0];
      for (size_t i = 1; i < rows.size(); ++i) {
        if (rows[i].shape[1] != r.shape[1])
          fail(DiagKind::shape_mismatch, e.span,
               {"rows of a matrix have different numbers of columns"});
        r.shape[0] += rows[i].shape[0];
        r.elems.insert(r.elems.end(), rows[i].elems.begin(), rows[i].elems.end());
        if (rows[i].type == ScalarType::Real) r.type = ScalarType::Real;
      }
      return r;
    }
    case K::Range: {
      const Value first = eval(*e.args[0], s);
      double a =
          structural(scalar_of(first, e.args[0]->span, "a range bound"), e.span, "a range bound");
      double step = 1, b;
      if (e.args.size() == 3) {
        step = structural(scalar_of(eval(*e.args[1], s), e.args[1]->span, "a range step"), e.span,
                          "a range step");
        b = structural(scalar_of(eval(*e.args[2], s), e.args[2]->span, "a range bound"), e.span,
                       "a range bound");
      } else {
        b = structural(scalar_of(eval(*e.args[1], s), e.args[1]->span, "a range bound"), e.span,
                       "a range bound");
      }
      if (step == 0) fail(DiagKind::bad_subscript, e.span, {"the step of a range is zero"});
      double count = std::floor((b - a) / step + 1e-10) + 1;
      check_elements(count, e.span);
      Value r;
      r.type =
          (a == std::floor(a) && step == std::floor(step)) ? ScalarType::Integer : ScalarType::Real;
      for (long i = 0; i < static_cast<long>(count); ++i) r.elems.push_back(cx_.num(a + i * step));
      r.shape = std::vector<int>{static_cast<int>(r.elems.size())};
      r.enumeration = first.enumeration;  // E.a:E.c
      return r;
    }
    case K::End:
      if (s.iters)
        if (const Value* v = s.iters->find("end")) return *v;
      [[fallthrough]];
    case K::Colon:
      fail(DiagKind::bad_subscript, e.span,
           {e.kind == K::Colon ? "':' is only allowed as a subscript"
                               : "'end' is only allowed inside subscripts"});
  }
  fail(DiagKind::unsupported, e.span, {"this expression"});
}

Value Flattener::eval_call(const ast::Expr& e, Scope s) {
  std::string name = e.ref.back().name;
  std::string full;
  for (size_t i = 0; i < e.ref.size(); ++i) full += (i ? "." : "") + e.ref[i].name;
  auto nargs = e.args.size();
  auto need = [&](size_t lo, size_t hi) {
    if (nargs < lo || nargs > hi)
      fail(
          DiagKind::bad_call, e.span,
          {lo == hi ? fmt::format("'{}' takes {} argument(s), {} given", full, lo, nargs)
                    : fmt::format("'{}' takes {} to {} arguments, {} given", full, lo, hi, nargs)});
  };
  auto arg = [&](size_t i) { return eval(*e.args[i], s); };
  auto map1 = [&](Value v, auto f) {
    if (v.is_string) fail(DiagKind::type_error, e.span, {"'" + full + "' of a string"});
    for (auto& x : v.elems) x = f(x);
    v.type = ScalarType::Real;
    return v;
  };
  if (name == "Integer" && e.ref.size() == 1 && e.arg_names.empty()) {
    // Integer(e): the position of an enumeration value, from 1 (Modelica 3.6, 4.9.5.2)
    need(1, 1);
    Value v = arg(0);
    if (!v.enumeration)
      fail(DiagKind::type_error, e.args[0]->span,
           {"the argument of 'Integer' must be an enumeration value, found " +
            std::string(v.is_string ? "a String" : scalar_type_name(v.type))});
    v.enumeration = nullptr;
    return v;
  }
  if (const ClassEntry* fn = user_function(e, s))
    return fn->def->kind == ast::ClassKind::Record ? construct_record(e, s, fn)
                                                   : call_function(e, s, fn).front();
  if (name == "String" && e.ref.size() == 1) return string_call(e, s);
  for (size_t i = 0; i < e.arg_names.size(); ++i) {
    if (e.arg_names[i].empty()) continue;
    diags_.report(DiagKind::unsupported, e.arg_spans[i],
                  {"the named argument '" + e.arg_names[i] + " = ...'"});
    diags_.help("only functions declared with 'function' take named arguments");
    throw BuildError{};
  }
  static const std::map<std::string, sym::Op> unary = {
      {"sin", sym::Op::Sin},   {"cos", sym::Op::Cos},   {"tan", sym::Op::Tan},
      {"asin", sym::Op::Asin}, {"acos", sym::Op::Acos}, {"atan", sym::Op::Atan},
      {"sinh", sym::Op::Sinh}, {"cosh", sym::Op::Cosh}, {"tanh", sym::Op::Tanh},
      {"exp", sym::Op::Exp},   {"log", sym::Op::Log},   {"log10", sym::Op::Log10},
      {"sqrt", sym::Op::Sqrt}, {"abs", sym::Op::Abs},   {"sign", sym::Op::Sign}};
  if (auto it = unary.find(name); it != unary.end()) {
    need(1, 1);
    sym::Op op = it->second;
    Value a = arg(0);
    check_numeric_argument(full, a, e.args[0]->span);
    const ScalarType in = a.type;
    Value v = map1(std::move(a), [&](Expr x) { return cx_.unary(op, x); });
    // sign is an Integer; abs keeps its argument's type (Modelica 3.6, 3.7.1)
    if (name == "sign") v.type = ScalarType::Integer;
    if (name == "abs") v.type = in;
    return v;
  }
  if (name == "der") {
    need(1, 1);
    if (s.frame) {
      diags_.report(DiagKind::der_in_function, e.ref.front().span, {s.frame->fn->full_name});
      diags_.help("a function maps its inputs to its outputs; pass the derivative as an input");
      throw BuildError{};
    }
    Value a = arg(0);
    if (!a.is_string && a.type != ScalarType::Real) {
      // Modelica 3.6, 3.7.4: der of a Real expression only (an Integer or Boolean is piecewise
      // constant; its derivative is not defined)
      diags_.report(DiagKind::type_error, e.args[0]->span,
                    {fmt::format("the argument of 'der' must be a Real, found {}",
                                 a.type == ScalarType::Integer ? "an Integer" : "a Boolean")});
      if (a.size() == 1 && a.elems[0]->is_symbol())
        if (auto it = flat_.var_of_symbol.find(a.elems[0]->symbol); it != flat_.var_of_symbol.end())
          diags_.note(flat_.vars[it->second].span,
                      fmt::format("'{}' is declared {} here", flat_.vars[it->second].name,
                                  a.type == ScalarType::Integer ? "an Integer" : "a Boolean"));
      throw BuildError{};
    }
    return map1(std::move(a), [&](Expr x) {
      for (uint32_t sy : sym::free_symbols(x))
        if (auto it = flat_.var_of_symbol.find(sy);
            it != flat_.var_of_symbol.end() && flat_.vars[it->second].role == VarRole::Input) {
          diags_.report(DiagKind::input_differentiated, e.span, {flat_.vars[it->second].name});
          diags_.note(flat_.vars[it->second].span, "declared as an input of the model here");
          diags_.help(
              "an input is held constant over a step, so its time derivative is unknown; "
              "declare its derivative as an input of its own");
          throw BuildError{};
        }
      return ders_.total_derivative(x);
    });
  }
  if ((name == "initial" || name == "terminal") && e.ref.size() == 1) {
    // 1.0 at the event of the start (the end), 0.0 otherwise: only a when-condition can see it
    need(0, 0);
    if (!when_condition_ || s.frame) {
      diags_.report(DiagKind::unsupported, e.span,
                    {"the event operator " + name + "() outside the condition of a when-equation"});
      diags_.help(
          name == "initial"
              ? "write 'when initial() then ... end when;' for assignments at the start, or "
                "an 'initial equation' section (docs/language.md, \"Initial equations\")"
              : "write 'when terminal() then ... end when;' for assignments at the end");
      throw BuildError{};
    }
    int64_t& sy = name == "initial" ? flat_.initial_symbol : flat_.terminal_symbol;
    if (sy < 0) {
      sy = cx_.new_symbol(name + "()");
      ders_.set_constant(static_cast<uint32_t>(sy));
    }
    return Value::of(cx_.symbol(static_cast<uint32_t>(sy)), ScalarType::Boolean);
  }
  if (name == "sample" && e.ref.size() == 1) {
    // sample(start, interval): true at the event of each instant start + i interval (i >= 0)
    need(2, 2);
    if (!when_condition_ || s.frame) {
      diags_.report(DiagKind::unsupported, e.span,
                    {"the event operator sample() outside the condition of a when-equation"});
      diags_.help("write 'when sample(start, interval) then ... end when;'");
      throw BuildError{};
    }
    Expr start = scalar_of(arg(0), e.args[0]->span, "the start of sample(start, interval)");
    Expr interval = scalar_of(arg(1), e.args[1]->span, "the interval of sample(start, interval)");
    for (size_t i = 0; i < 2; ++i)
      if (varies_in_time(i == 0 ? start : interval))
        fail(DiagKind::bad_call, e.args[i]->span,
             {fmt::format("the {} of sample(start, interval) must not change in time: '{}' does "
                          "(write an expression of parameters)",
                          i == 0 ? "start" : "interval", expr_to_string(*e.args[i]))});
    // The compiler needs the interval as a number (a parameter in it is used at compile time:
    // --set recompiles): one that is not positive never ticked, one below the time axis's
    // resolution ticked twice and then never (issue 36).
    const double T =
        structural(interval, e.args[1]->span, "the interval of sample(start, interval)");
    const double t0 = start->is_const() ? std::fabs(start->value) : 0.0;
    if (!(T > 0.0))
      fail(DiagKind::bad_call, e.args[1]->span,
           {fmt::format("the interval of sample(start, interval) must be positive, not {}", T)});
    const double resolution = 64 * std::numeric_limits<double>::epsilon() * std::max(1.0, t0);
    if (T < resolution)
      fail(DiagKind::bad_call, e.args[1]->span,
           {fmt::format("the interval of sample(start, interval), {:g}, is below the resolution "
                        "of the time axis ({:.3g} at t = {:g}): its instants cannot be told apart",
                        T, resolution, std::max(1.0, t0))});
    return Value::of(sample_trigger(start, cx_.num(T), e.span), ScalarType::Boolean);
  }
  if (name == "pre" || name == "edge" || name == "change") {
    // pre(x): x just before the event (of a continuous x: x itself inside a when, where every
    // value is taken before the event's changes); edge(b) = b and not pre(b); change(x) =
    // x <> pre(x). Which variables are discrete is known at the end (finish_discrete).
    need(1, 1);
    if (s.frame) {
      diags_.report(
          DiagKind::unsupported, e.ref.front().span,
          {"the event operator " + name + "() inside function '" + s.frame->fn->full_name + "'"});
      diags_.help("a function maps its inputs to its outputs; pass " + name + "(x) as an input");
      throw BuildError{};
    }
    Value x = arg(0);
    Value out = x;
    out.type = name == "pre" ? x.type : ScalarType::Boolean;
    if (name == "pre") out.enumeration = x.enumeration;
    for (size_t i = 0; i < x.size(); ++i) {
      const Expr xe = x.elems[i];
      const auto it =
          xe->is_symbol() ? flat_.var_of_symbol.find(xe->symbol) : flat_.var_of_symbol.end();
      const bool variable =
          it != flat_.var_of_symbol.end() && (flat_.vars[it->second].role == VarRole::Variable ||
                                              flat_.vars[it->second].role == VarRole::Discrete);
      if (!variable)
        fail(DiagKind::event_operator_argument, e.args[0]->span,
             {name,
              it == flat_.var_of_symbol.end()
                  ? "'" + expr_to_string(*e.args[0]) + "' is not a variable"
                  : "'" + flat_.vars[it->second].name + "' is a parameter, constant or input"});
      const uint32_t p = pre_symbol_of(xe->symbol);
      pre_uses_.push_back({xe->symbol, name, e.span, when_body_ != nullptr || when_condition_});
      const Expr pe = cx_.symbol(p);
      out.elems[i] = name == "pre"    ? pe
                     : name == "edge" ? cx_.binary(sym::Op::And, xe, cx_.unary(sym::Op::Not, pe))
                                      : cx_.binary(sym::Op::Ne, xe, pe);
    }
    return out;
  }
  if (name == "noEvent" || name == "smooth" || name == "homotopy") {
    // the switches inside do not stop the solvers, and floor() & co. inside are plain functions
    const auto quiet = [&](size_t i) {
      ++no_event_depth_;
      try {
        Value v = arg(i);
        --no_event_depth_;
        return v;
      } catch (...) {
        --no_event_depth_;
        throw;
      }
    };
    if (name == "smooth") {  // smooth(p, e): e is p times differentiable: no switch events
      need(2, 2);
      Value v = quiet(1);
      flat_.no_event.insert(flat_.no_event.end(), v.elems.begin(), v.elems.end());
      return v;
    }
    need(1, 2);
    Value v = name == "noEvent" ? quiet(0) : arg(0);
    if (name == "noEvent")
      flat_.no_event.insert(flat_.no_event.end(), v.elems.begin(), v.elems.end());
    return v;
  }
  if (name == "floor" || name == "ceil" || name == "integer") {
    // piecewise constant: where the argument varies in time, the value changes at events
    need(1, 1);
    Value v = arg(0);
    if (v.is_string) fail(DiagKind::type_error, e.span, {"'" + full + "' of a string"});
    for (Expr& x : v.elems)
      x = name == "ceil" ? cx_.neg(event_floor(cx_.neg(x), s, e.span)) : event_floor(x, s, e.span);
    v.type = name == "integer" ? ScalarType::Integer : ScalarType::Real;
    return v;
  }
  if (name == "div" || name == "mod" || name == "rem") {
    // div(x, y): x / y truncated toward zero; mod(x, y) = x - floor(x / y) y;
    // rem(x, y) = x - div(x, y) y (Modelica's definitions)
    need(2, 2);
    const Value a = arg(0), b = arg(1);
    Expr x = scalar_of(a, e.args[0]->span, ("an argument of " + name).c_str());
    Expr y = scalar_of(b, e.args[1]->span, ("an argument of " + name).c_str());
    Expr q = cx_.div(x, y);
    Expr d = name == "mod" ? nullptr : event_floor(q, s, e.span, true);
    const bool integers = a.type == ScalarType::Integer && b.type == ScalarType::Integer;
    const ScalarType type = integers ? ScalarType::Integer : ScalarType::Real;
    if (name == "div") return Value::of(d, type);
    if (name == "mod") return Value::of(cx_.sub(x, cx_.mul(event_floor(q, s, e.span), y)), type);
    return Value::of(cx_.sub(x, cx_.mul(d, y)), type);
  }
  if (name == "atan2") {
    need(2, 2);
    Expr y = scalar_of(arg(0), e.args[0]->span, "an argument of atan2");
    Expr x = scalar_of(arg(1), e.args[1]->span, "an argument of atan2");
    return Value::of(cx_.binary(sym::Op::Atan2, y, x));
  }
  if (name == "hypot") {
    // sqrt(x^2 + y^2): the DAG differentiates it exactly, d = (x dx + y dy)/hypot(x, y)
    need(2, 2);
    Expr x = scalar_of(arg(0), e.args[0]->span, "an argument of hypot");
    Expr y = scalar_of(arg(1), e.args[1]->span, "an argument of hypot");
    Expr two = cx_.num(2.0);
    return Value::of(cx_.unary(sym::Op::Sqrt, cx_.add(cx_.pow(x, two), cx_.pow(y, two))));
  }
  if (name == "min" || name == "max") {
    sym::Op op = name == "min" ? sym::Op::Min : sym::Op::Max;
    if (nargs == 2) {
      const Value va = arg(0), vb = arg(1);
      Expr a = scalar_of(va, e.args[0]->span, "an argument of min/max");
      Expr b = scalar_of(vb, e.args[1]->span, "an argument of min/max");
      const bool integers = va.type == ScalarType::Integer && vb.type == ScalarType::Integer;
      if (va.enumeration || vb.enumeration) check_enumeration_operands(name, va, vb, e.span);
      Value out =
          Value::of(cx_.binary(op, a, b), integers ? ScalarType::Integer : ScalarType::Real);
      out.enumeration = va.enumeration;
      return out;
    }
    need(1, 1);
    Value v = arg(0);
    if (v.elems.empty()) fail(DiagKind::bad_call, e.span, {"'" + name + "' of an empty array"});
    Expr r = v.elems[0];
    for (size_t i = 1; i < v.size(); ++i) r = cx_.binary(op, r, v.elems[i]);
    Value out = Value::of(r, v.type);
    out.enumeration = v.enumeration;
    return out;
  }
  if (name == "size") {
    need(1, 2);
    Value v = arg(0);
    if (nargs == 2) {
      long d = structural_int(arg(1), e.args[1]->span, "the dimension of size()");
      if (d < 1 || d > static_cast<long>(v.shape.size()))
        fail(DiagKind::bad_call, e.span,
             {fmt::format("size(a, {}): a has {} dimension(s)", d, v.shape.size())});
      return Value::of(cx_.num(v.shape[d - 1]), ScalarType::Integer);
    }
    Value r;
    r.type = ScalarType::Integer;
    r.shape = {static_cast<int>(v.shape.size())};
    for (int n : v.shape) r.elems.push_back(cx_.num(n));
    return r;
  }
  if (name == "ndims") {
    need(1, 1);
    return Value::of(cx_.num(static_cast<double>(arg(0).shape.size())), ScalarType::Integer);
  }
  if (name == "zeros" || name == "ones" || name == "fill") {
    size_t first = name == "fill" ? 1 : 0;
    if (nargs < first + 1) need(first + 1, 8);
    Value r;
    Expr val = name == "zeros" ? cx_.num(0) : name == "ones" ? cx_.num(1) : nullptr;
    r.type = ScalarType::Integer;
    if (name == "fill") {
      Value f = arg(0);
      val = scalar_of(f, e.args[0]->span, "the fill value");
      r.type = f.type;
    }
    size_t count = 1;
    for (size_t i = first; i < nargs; ++i) {
      long n = structural_int(arg(i), e.args[i]->span, "an array size");
      if (n < 0) fail(DiagKind::bad_call, e.args[i]->span, {"negative array size"});
      check_elements(static_cast<double>(count) * static_cast<double>(n), e.span);
      r.shape.push_back(static_cast<int>(n));
      count *= static_cast<size_t>(n);
    }
    r.elems.assign(count, val);
    return r;
  }
  if (name == "identity") {
    need(1, 1);
    long n = structural_int(arg(0), e.args[0]->span, "the size of identity()");
    check_elements(static_cast<double>(n) * static_cast<double>(n), e.span);
    Value r;
    r.type = ScalarType::Integer;
    r.shape = {static_cast<int>(n), static_cast<int>(n)};
    for (long i = 0; i < n; ++i)
      for (long j = 0; j < n; ++j) r.elems.push_back(cx_.num(i == j ? 1 : 0));
    return r;
  }
  if (name == "diagonal" || name == "diag") {
    need(1, 1);
    Value v = arg(0);
    if (v.shape.size() != 1) fail(DiagKind::bad_call, e.span, {"'" + name + "' needs a vector"});
    int n = v.shape[0];
    Value r;
    r.type = v.type;
    r.shape = {n, n};
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) r.elems.push_back(i == j ? v.elems[i] : cx_.num(0));
    return r;
  }
  if (name == "transpose") {
    need(1, 1);
    Value v = arg(0);
    if (v.shape.size() != 2) fail(DiagKind::bad_call, e.span, {"'transpose' needs a matrix"});
    Value r;
    r.type = v.type;
    int m = v.shape[0], n = v.shape[1];
    r.shape = {n, m};
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) r.elems.push_back(v.elems[i * n + j]);
    return r;
  }
  if (name == "sum" || name == "product") {
    need(1, 1);
    Value v = arg(0);
    Expr r = name == "sum" ? cx_.add(std::span<const Expr>(v.elems))
                           : cx_.mul(std::span<const Expr>(v.elems));
    return Value::of(r, v.type);
  }
  if (name == "cross") {
    need(2, 2);
    Value a = arg(0), b = arg(1);
    if (a.shape != std::vector<int>{3} || b.shape != std::vector<int>{3})
      fail(DiagKind::bad_call, e.span, {"'cross' needs two vectors of size 3"});
    auto& x = a.elems;
    auto& y = b.elems;
    Value r;
    r.shape = {3};
    r.elems = {cx_.sub(cx_.mul(x[1], y[2]), cx_.mul(x[2], y[1])),
               cx_.sub(cx_.mul(x[2], y[0]), cx_.mul(x[0], y[2])),
               cx_.sub(cx_.mul(x[0], y[1]), cx_.mul(x[1], y[0]))};
    return r;
  }
  if (name == "skew") {
    need(1, 1);
    Value a = arg(0);
    if (a.shape != std::vector<int>{3})
      fail(DiagKind::bad_call, e.span, {"'skew' needs a vector of size 3"});
    auto& x = a.elems;
    Value r;
    r.shape = {3, 3};
    Expr z = cx_.num(0);
    r.elems = {z, cx_.neg(x[2]), x[1], x[2], z, cx_.neg(x[0]), cx_.neg(x[1]), x[0], z};
    return r;
  }
  if (name == "outerProduct") {
    need(2, 2);
    Value a = arg(0), b = arg(1);
    if (a.shape.size() != 1 || b.shape.size() != 1)
      fail(DiagKind::bad_call, e.span, {"'outerProduct' needs two vectors"});
    Value r;
    r.shape = {a.shape[0], b.shape[0]};
    for (Expr x : a.elems)
      for (Expr y : b.elems) r.elems.push_back(cx_.mul(x, y));
    return r;
  }
  if (name == "norm") {
    need(1, 1);
    Value a = arg(0);
    std::vector<Expr> sq;
    for (Expr x : a.elems) sq.push_back(cx_.mul(x, x));
    return Value::of(cx_.unary(sym::Op::Sqrt, cx_.add(std::span<const Expr>(sq))));
  }
  if (name == "scalar") {
    need(1, 1);
    Value a = arg(0);
    if (a.size() != 1)
      fail(DiagKind::bad_call, e.span, {"'scalar' needs an array with one element"});
    a.shape.clear();
    return a;
  }
  if (name == "vector") {
    need(1, 1);
    Value a = arg(0);
    a.shape = {static_cast<int>(a.size())};
    return a;
  }
  if (name == "linspace") {
    need(3, 3);
    double x1 = structural(scalar_of(arg(0), e.span, "linspace start"), e.span, "linspace start");
    double x2 = structural(scalar_of(arg(1), e.span, "linspace end"), e.span, "linspace end");
    long n = structural_int(arg(2), e.span, "linspace count");
    if (n < 2) fail(DiagKind::bad_call, e.span, {"linspace needs at least 2 points"});
    check_elements(static_cast<double>(n), e.span);
    Value r;
    r.shape = {static_cast<int>(n)};
    for (long i = 0; i < n; ++i) r.elems.push_back(cx_.num(x1 + (x2 - x1) * i / (n - 1)));
    return r;
  }
  diags_.report(DiagKind::unknown_function, e.ref.front().span, {full});
  help_did_you_mean(name, function_names());
  throw BuildError{};
}

}  // namespace mbs::flattening
