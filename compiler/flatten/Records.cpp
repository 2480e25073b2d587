// Records (Modelica 3.6, sections 4.6 and 12.6; docs/language.md, "Records"): a record value is
// the run of its scalar members in declaration order (RecordLayout), built from a record
// instance, by a record constructor `R(1, b = 2)` (the members' declaration bindings are the
// defaults) or by a function; equations and bindings of records are expanded member by member.
#include "compiler/flatten/Flattener.h"

namespace mbs::flattening {

const RecordLayout* Flattener::record_layout(const ClassEntry* cls, Span use) {
  if (auto it = layouts_.find(cls); it != layouts_.end()) {
    if (!it->second) fail(DiagKind::recursive_class, use, {cls->full_name});
    return it->second.get();
  }
  layouts_[cls] = nullptr;  // in progress: a record that contains itself
  auto layout = std::make_unique<RecordLayout>();
  layout->cls = cls;
  // the members in the order of instantiate_members: the bases' first, then the class's own
  std::vector<std::pair<const ast::Component*, const ClassEntry*>> comps;
  std::function<void(const ClassEntry*, int)> collect = [&](const ClassEntry* c, int depth) {
    if (depth > kMaxDepth) fail(DiagKind::recursive_class, c->def->span, {c->full_name});
    for (const auto& ext : c->def->extends) {
      const ClassEntry* b = lookup_base(ext, c);
      if (!b) fail(DiagKind::unknown_type, ext.span, {ext.base});
      collect(b, depth + 1);
    }
    for (const auto& comp : c->def->components) comps.emplace_back(&comp, c);
  };
  collect(cls, 0);
  for (const auto& [c, owner] : comps) {
    RecordLayout::Field f;
    f.name = c->name;
    f.decl = c;
    f.owner = owner;
    std::string tn = c->type_name;
    const ClassEntry* type = nullptr;
    for (int guard = 0; guard < 32; ++guard) {
      if (tn == "Real" || tn == "Integer" || tn == "Boolean") break;
      type = lookup_class(tn, type ? type : owner, c->type_span);
      if (!type) fail(DiagKind::unknown_type, c->type_span, {c->type_name});
      if (type->def->short_base.empty()) break;
      tn = type->def->short_base;
      type = nullptr;
    }
    if (tn == "Integer") f.type = ScalarType::Integer;
    if (tn == "Boolean") f.type = ScalarType::Boolean;
    f.shape = eval_dims(c->type_dims, Scope{nullptr, nullptr, nullptr, owner});
    auto more = eval_dims(c->dims, Scope{nullptr, nullptr, nullptr, owner});
    f.shape.insert(f.shape.end(), more.begin(), more.end());
    if (type) {
      if (type->def->kind != ast::ClassKind::Record)
        fail(DiagKind::unsupported, c->type_span,
             {fmt::format("a member of type '{}' (a {}) in record '{}'", c->type_name,
                          ast::class_kind_name(type->def->kind), cls->full_name)});
      if (!f.shape.empty())
        fail(DiagKind::unsupported, c->span, {"an array of records as a member of a record"});
      f.record = record_layout(type, c->type_span);
    }
    f.size = f.record ? f.record->size : 1;
    for (int d : f.shape) f.size *= static_cast<size_t>(d);
    f.offset = layout->size;
    layout->size += f.size;
    layout->fields.push_back(std::move(f));
  }
  const RecordLayout* r = layout.get();
  layouts_[cls] = std::move(layout);
  return r;
}

Value Flattener::record_value(Instance* inst, Span span) {
  const RecordLayout* layout = record_layout(inst->cls, span);
  Value r;
  r.record = layout;
  for (const auto& [name, m] : inst->members) {
    Value v = instance_value(m, span);
    r.elems.insert(r.elems.end(), v.elems.begin(), v.elems.end());
  }
  if (r.elems.size() != layout->size)
    fail(DiagKind::unsupported, span,
         {fmt::format("record '{}' whose member sizes depend on modifiers", inst->path)});
  return r;
}

Value Flattener::record_field(const Value& v, const std::string& name, Span at) {
  for (const auto& f : v.record->fields) {
    if (f.name != name) continue;
    Value r;
    r.shape = f.shape;
    r.type = f.type;
    r.record = f.record;
    r.elems.assign(v.elems.begin() + static_cast<long>(f.offset),
                   v.elems.begin() + static_cast<long>(f.offset + f.size));
    return r;
  }
  std::vector<std::string> names;
  for (const auto& f : v.record->fields) names.push_back(f.name);
  diags_.report(DiagKind::unknown_member, at, {v.record->cls->full_name, name});
  help_did_you_mean(name, names);
  throw BuildError{};
}

Value Flattener::as_record(const Value& v, const RecordLayout* target, Span at,
                           const std::string& what) {
  if (!target || v.record == target) return v;
  if (!v.record)
    fail(DiagKind::type_error, at,
         {fmt::format("{} is {}, a record '{}' is expected", what, describe_value(v),
                      target->cls->full_name)});
  Value r;
  r.record = target;
  for (const auto& f : target->fields) {
    const RecordLayout::Field* g = nullptr;
    for (const auto& h : v.record->fields)
      if (h.name == f.name) g = &h;
    const bool type_ok = g && g->shape == f.shape &&
                         (g->record != nullptr) == (f.record != nullptr) &&
                         (f.type == ScalarType::Boolean) == (g->type == ScalarType::Boolean) &&
                         !(f.type == ScalarType::Integer && g->type == ScalarType::Real);
    if (!type_ok)
      fail(DiagKind::type_error, at,
           {fmt::format("{} is a record '{}', which is not compatible with '{}': {} member '{}'",
                        what, v.record->cls->full_name, target->cls->full_name,
                        g ? "a different type of" : "it has no", f.name)});
    Value m = record_field(v, f.name, at);
    if (f.record) m = as_record(m, f.record, at, what + ", member '" + f.name + "',");
    r.elems.insert(r.elems.end(), m.elems.begin(), m.elems.end());
  }
  return r;
}

// R(1, b = 2): the record constructor function of section 12.6 — an input for each member, in
// declaration order, whose default is the member's declaration binding (evaluated in the frame
// of the constructor, so a default may use the members before it).
Value Flattener::construct_record(const ast::Expr& call, Scope s, const ClassEntry* cls) {
  const RecordLayout* layout = record_layout(cls, call.span);
  const auto& fields = layout->fields;
  std::vector<std::string> names;
  for (const auto& f : fields) names.push_back(f.name);
  const std::vector<const ast::Expr*> given =
      match_arguments(call, names, cls->full_name, "member",
                      fmt::format("record '{}' has {} member(s), {} arguments given",
                                  cls->full_name, fields.size(), call.args.size()));
  FunctionFrame frame;  // the members given so far, for the defaults
  frame.fn = cls;
  frame.returned = cx_.zero();
  Value r;
  r.record = layout;
  for (size_t k = 0; k < fields.size(); ++k) {
    const auto& f = fields[k];
    Value v;
    Span where = call.span;
    if (given[k]) {
      v = eval_whole(*given[k], s);
      where = given[k]->span;
    } else if (f.decl->mod && f.decl->mod->value) {
      v = eval_whole(*f.decl->mod->value, Scope{nullptr, nullptr, &frame, f.owner});
      where = f.decl->mod->value->span;
    } else {
      diags_.report(
          DiagKind::bad_call, call.span,
          {fmt::format("member '{}' of record '{}' has no value", f.name, cls->full_name)});
      diags_.note(f.decl->span, "declared here without a default");
      throw BuildError{};
    }
    if (f.record) {
      v = as_record(v, f.record, where,
                    fmt::format("the value of member '{}' of '{}'", f.name, cls->full_name));
    } else if (v.record || v.is_string || v.shape != f.shape ||
               (f.type != ScalarType::Boolean) != (v.type != ScalarType::Boolean) ||
               (f.type == ScalarType::Integer && v.type == ScalarType::Real)) {
      diags_.report(DiagKind::type_error, where,
                    {fmt::format("member '{}' of record '{}' is {}{}, the value is {}", f.name,
                                 cls->full_name, scalar_type_name(f.type),
                                 f.shape.empty() ? "" : " " + shape_str(f.shape),
                                 v.record ? "a record" : describe_value(v))});
      diags_.note(f.decl->span, "declared here");
      throw BuildError{};
    }
    r.elems.insert(r.elems.end(), v.elems.begin(), v.elems.end());
    FunctionFrame::Local l;
    l.decl = f.decl;
    l.type = f.type;
    l.dims = f.shape;
    l.record = f.record;
    l.value = std::move(v);
    l.has_value = l.defined = true;
    frame.locals[f.name] = std::move(l);
  }
  return r;
}

Value Flattener::eval_whole(const ast::Expr& e, Scope s) {
  struct Allow {
    const ast::Expr*& slot;
    const ast::Expr* saved;
    ~Allow() { slot = saved; }
  } allow{allow_record_, allow_record_};
  allow_record_ = &e;
  return eval(e, s);
}

void Flattener::refuse_record(const Value& v, const ast::Expr& e) {
  diags_.report(DiagKind::unsupported, e.span,
                {fmt::format("{} used in an expression", describe_value(v))});
  diags_.help(
      "a record is used whole as a side of an equation, a binding, a function argument or an "
      "assignment; its members (r.a) are values of their own");
  throw BuildError{};
}

void Flattener::bind_record(Instance& inst, const ModEntry& mod, Span at) {
  const RecordLayout* layout = record_layout(inst.cls, at);
  size_t next = 0;
  std::function<void(Instance&)> walk = [&](Instance& m) {
    if (m.kind == Instance::Kind::Scalar) {
      ModEntry& leaf = m.mod;
      leaf.value = mod.value;
      leaf.scope = mod.scope;
      leaf.scope_cls = mod.scope_cls;
      leaf.span = mod.span;
      leaf.pick = mod.pick;
      ModExtra& x = leaf.edit();
      x.leaf = static_cast<int>(next++);
      x.whole = layout;
      return;
    }
    for (auto& el : m.elems) walk(*el);
  };
  walk(inst);
  if (next != layout->size)
    fail(DiagKind::unsupported, at,
         {fmt::format("record '{}' whose member sizes depend on modifiers", inst.path)});
}

}  // namespace mbs::flattening
