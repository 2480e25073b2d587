// connect: connector references, connection sets (union-find over scalar elements) and the
// equality and sum-to-zero equations they give.
#include "compiler/flatten/Flattener.h"

namespace mbs::flattening {

Instance* Flattener::resolve_connector(const ast::Expr& ref, Scope s, bool& outside) {
  if (ref.kind != ast::ExprKind::Ref)
    fail(DiagKind::bad_connect, ref.span,
         {"the arguments of connect must be connector references"});
  Instance* cur = s.inst;
  outside = false;
  for (size_t i = 0; i < ref.ref.size(); ++i) {
    const auto& part = ref.ref[i];
    std::optional<Hidden> hidden;
    Instance* m = cur->kind != Instance::Kind::Composite ? nullptr
                  : i == 0 ? visible_member(cur, part.name, s.cls, &hidden)
                           : cur->member(part.name);
    if (!m && removed_member(cur, part.name)) return nullptr;  // a conditional component, removed
    if (!m) {
      diags_.report(i == 0 ? DiagKind::unknown_name : DiagKind::unknown_member, part.span,
                    i == 0 ? std::vector<std::string>{part.name}
                           : std::vector<std::string>{cur->path, part.name});
      if (hidden) note_hidden(part.name, *hidden, s.cls);
      throw BuildError{};
    }
    if (i > 0) check_dot_access(m, cur->path, part.span);
    cur = m;
    for (const auto& sx : part.subscripts) {
      if (cur->kind != Instance::Kind::Array)
        fail(DiagKind::bad_subscript, sx->span, {"'" + cur->path + "' is not an array"});
      Value v = eval(*sx, s);
      long id = structural_int(v, sx->span, "a subscript");
      long n = static_cast<long>(cur->elems.size());
      if (id < 1 || id > n)
        fail(DiagKind::index_out_of_range, sx->span,
             {std::to_string(id), std::to_string(n), cur->path});
      cur = cur->elems[id - 1].get();
    }
    if (i == 0 && cur->is_connector && cur->parent != s.inst)
      fail(DiagKind::unsupported, part.span,
           {"a connect of the outer connector '" + part.name + "' (Modelica 3.6, section 5.4)"});
    if (i == 0 && cur->is_connector) outside = true;
  }
  if (!cur->is_connector)
    fail(DiagKind::bad_connect, ref.span,
         {"'" + cur->path + "' is not a connector (its type '" + cur->type_name +
          "' is not declared with 'connector')"});
  return cur;
}

void Flattener::connect_pair(Instance* a, bool a_out, Instance* b, bool b_out,
                             const ast::Equation& eq) {
  if (a->kind != b->kind)
    fail(DiagKind::bad_connect, eq.span,
         {"cannot connect '" + a->path + "' and '" + b->path + "': they have different structure"});
  if (a->kind == Instance::Kind::Array) {
    if (a->elems.size() != b->elems.size())
      fail(DiagKind::bad_connect, eq.span,
           {"cannot connect arrays '" + a->path + "' and '" + b->path + "' of different sizes"});
    for (size_t i = 0; i < a->elems.size(); ++i)
      connect_pair(a->elems[i].get(), a_out, b->elems[i].get(), b_out, eq);
    return;
  }
  if (a->kind == Instance::Kind::Composite) {
    for (const auto& [n, ma] : a->members) {
      Instance* mb = b->member(n);
      if (!mb)
        fail(DiagKind::bad_connect, eq.span,
             {"cannot connect '" + a->path + "' and '" + b->path + "': '" + b->path +
              "' has no member '" + n + "'"});
      connect_pair(ma, a_out, mb, b_out, eq);
    }
    for (const auto& [n, mb] : b->members)
      if (!a->member(n))
        fail(DiagKind::bad_connect, eq.span,
             {"cannot connect '" + a->path + "' and '" + b->path + "': '" + a->path +
              "' has no member '" + n + "'"});
    return;
  }
  if (a->is_string || b->is_string) {  // String parameters: no equation
    if (a->is_string && b->is_string) return;
    fail(DiagKind::bad_connect, eq.span,
         {"cannot connect '" + a->path + "' and '" + b->path + "': one of them is a String"});
  }
  const FlatVar& va = flat_.vars[a->var];
  const FlatVar& vb = flat_.vars[b->var];
  if (va.flow != vb.flow)
    fail(DiagKind::bad_connect, eq.span,
         {"cannot connect flow variable '" + (va.flow ? va.name : vb.name) +
          "' with potential variable '" + (va.flow ? vb.name : va.name) + "'"});
  check_connect_types(va, vb, eq);
  if (va.role != VarRole::Variable || vb.role != VarRole::Variable)
    return;  // parameters: no equation
  int ea = element(a->var, a_out, eq.span);
  int eb = element(b->var, b_out, eq.span);
  int ra = find(ea), rb = find(eb);
  if (ra != rb) uf_parent_[ra] = rb;
}

void Flattener::add_connect(const ast::Equation& eq, Scope s) {
  bool a_out = false, b_out = false;
  Instance* a = resolve_connector(*eq.lhs, s, a_out);
  Instance* b = resolve_connector(*eq.rhs, s, b_out);
  if (!a || !b) return;  // a removed conditional component: the connection is removed with it
  if (a == b) fail(DiagKind::bad_connect, eq.span, {"a connector cannot be connected to itself"});
  bool a_frame = a->mbs_element() == "Frame", b_frame = b->mbs_element() == "Frame";
  if (a_frame != b_frame)
    fail(DiagKind::bad_connect, eq.span,
         {"cannot connect '" + a->path + "' and '" + b->path + "': only a mechanical frame (" +
          "Mechanics.Frame) connects to a frame"});
  if (a_frame) {
    // frames are joined in the multibody graph by the mechanics lowering (compiler/mech)
    flat_.frame_connections.push_back(
        FrameConnection{a->path, b->path, eq.span, source_text(eq.span)});
    return;
  }
  connect_pair(a, a_out, b, b_out, eq);
}

void Flattener::generate_connection_equations(Instance& root) {
  // every flow variable of every connector instance has an inside element (a singleton when the
  // connector is not connected from outside: its flow is then zero)
  std::function<void(Instance&, bool)> walk = [&](Instance& in, bool in_connector) {
    bool conn = in_connector || in.is_connector;
    if (in.kind == Instance::Kind::Scalar) {
      if (in.is_string) return;  // a String parameter: no variable
      const FlatVar& v = flat_.vars[in.var];
      if (conn && v.flow && v.role == VarRole::Variable) element(in.var, false, v.span);
      return;
    }
    for (auto& el : in.elems) walk(*el, conn);
  };
  walk(root, false);
  std::map<int, std::vector<int>> sets;
  for (int i = 0; i < static_cast<int>(elements_.size()); ++i) sets[find(i)].push_back(i);
  for (auto& [rep, members] : sets) {
    std::sort(members.begin(), members.end(),
              [&](int x, int y) { return elements_[x] < elements_[y]; });
    const FlatVar& v0 = flat_.vars[elements_[members[0]].var];
    if (v0.flow) {
      std::vector<Expr> terms;
      std::string text;
      for (int m : members) {
        const Element& el = elements_[m];
        Expr s = cx_.symbol(flat_.vars[el.var].symbol);
        terms.push_back(el.outside ? cx_.neg(s) : s);
        text += (text.empty() ? (el.outside ? "-" : "") : (el.outside ? " - " : " + ")) +
                flat_.vars[el.var].name;
      }
      FlatEquation fe;
      fe.residual = cx_.add(std::span<const Expr>(terms));
      fe.span = element_span_[members.back()];
      fe.text = members.size() == 1 ? text + " = 0  (unconnected flow variable)"
                                    : text + " = 0  (connection set)";
      flat_.equations.push_back(std::move(fe));
    } else {
      for (size_t k = 1; k < members.size(); ++k) {
        const FlatVar& vk = flat_.vars[elements_[members[k]].var];
        FlatEquation fe;
        fe.residual = cx_.sub(cx_.symbol(v0.symbol), cx_.symbol(vk.symbol));
        fe.span = element_span_[members[k]];
        fe.text = v0.name + " = " + vk.name + "  (connection set)";
        flat_.equations.push_back(std::move(fe));
      }
    }
  }
}

}  // namespace mbs::flattening
