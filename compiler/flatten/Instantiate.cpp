// Instantiation: modifications merged outer over inner, and the instance tree of components,
// arrays of components and the elements inherited through extends clauses.
#include "compiler/flatten/Flattener.h"

namespace mbs::flattening {

// ------------------------------------------------------------------------------------------------
// Modifications

ModEntry Flattener::mod_from_ast(const ast::Modification* m, Instance* scope,
                                 const ClassEntry* scope_cls) {
  ModEntry r;
  if (!m) return r;
  r.span = m->span;
  if (m->value) {
    r.value = m->value.get();
    r.scope = scope;
    r.scope_cls = scope_cls;
  }
  for (const auto& a : m->args) {
    ModEntry sub = mod_from_ast(a.mod.get(), scope, scope_cls);
    sub.each = a.each;
    if (a.final_) {
      sub.final_ = true;
      sub.edit().final_span = a.span;
    }
    if (a.redeclare) {
      ModExtra& x = sub.edit();
      x.redeclare = a.redeclare.get();
      x.redeclare_scope = scope;
    }
    if (!sub.span.valid()) sub.span = a.span;
    // a dotted path x.start = 1 nests
    for (size_t i = a.path.size(); i-- > 1;) {
      ModEntry outer;
      outer.span = a.span;
      outer.sub.emplace(a.path[i], std::move(sub));
      sub = std::move(outer);
    }
    if (a.path.empty()) continue;
    auto it = r.sub.find(a.path[0]);
    if (it == r.sub.end())
      r.sub.emplace(a.path[0], std::move(sub));
    else
      it->second = merge(sub, it->second);
  }
  return r;
}

// The modification of element `index` of an array component. `each` values go to every element
// whole; once the component's last dimension is taken they are ordinary values again, so the
// element's own array members (`each n = {0, 0, 1}` for a member n[3]) are split as usual.
ModEntry Flattener::pick_element(const ModEntry& m, int index, bool last_dim) {
  ModEntry r = m;
  if (r.value && !r.each) r.pick.push_back(index);
  if (r.each && last_dim) r.each = false;
  for (auto& [k, v] : r.sub) v = pick_element(v, index, last_dim);
  return r;
}

// ------------------------------------------------------------------------------------------------
// Instantiation

std::vector<int> Flattener::eval_dims(const std::vector<ast::ExprPtr>& dims, Scope s) {
  std::vector<int> r;
  for (const auto& d : dims) {
    Value v = eval(*d, s);
    long n = structural_int(v, d->span, "an array size");
    if (n < 0 || n > 10'000'000)
      fail(DiagKind::bad_subscript, d->span, {"invalid array size " + std::to_string(n)});
    r.push_back(static_cast<int>(n));
  }
  return r;
}

void Flattener::collect_elements(
    const ClassEntry* cls, Instance& inst,
    std::vector<std::pair<const ast::Component*, const ClassEntry*>>& comps, ModEntry& effective,
    int depth) {
  if (depth > kMaxDepth) fail(DiagKind::recursive_class, cls->def->span, {cls->full_name});
  check_class_restrictions(cls);
  // extends first: base elements come before the class's own
  for (const auto& ext : cls->def->extends) {
    const ClassEntry* base = lookup_base(ext, cls);
    if (!base) {
      diags_.report(DiagKind::unknown_type, ext.span, {ext.base});
      // found only through another base of the same class: illegal, and say why
      const std::string first = ext.base.substr(0, ext.base.find('.'));
      for (const auto& other : cls->def->extends) {
        if (&other == &ext) continue;
        const ClassEntry* b = lookup_base(other, cls);
        if (b && find_nested(b, first)) {
          diags_.help("'" + first + "' is a class inherited from '" + other.base +
                      "': the name in an extends clause is looked up without what the class "
                      "inherits (Modelica 3.6, section 7.1 and 'The Inherited Contents of the "
                      "Element' in chapter 5)");
          break;
        }
      }
      throw BuildError{};
    }
    if (base == cls) fail(DiagKind::recursive_class, ext.span, {cls->full_name});
    check_base_kind(cls, base, ext.span);
    ModEntry ext_mod = mod_from_ast(ext.mod.get(), &inst, cls);
    effective = merge(effective, ext_mod);
    collect_elements(base, inst, comps, effective, depth + 1);
  }
  for (const auto& c : cls->def->components) comps.emplace_back(&c, cls);
  inst.data().equation_classes.push_back(cls);
}

void Flattener::instantiate_members(Instance& inst, const ClassEntry* cls, const ModEntry& mod,
                                    int depth) {
  if (depth > kMaxDepth) fail(DiagKind::recursive_class, cls->def->span, {cls->full_name});
  std::vector<std::pair<const ast::Component*, const ClassEntry*>> comps;
  ModEntry inherited;  // modifications from extends clauses
  collect_elements(cls, inst, comps, inherited, depth);
  ModEntry effective = merge(mod, inherited);
  // an element `redeclare A a;` replaces the inherited declaration of `a` (section 7.3)
  std::map<std::string, std::pair<const ast::Component*, const ClassEntry*>> replaced;
  for (size_t k = 0; k < comps.size(); ++k) {
    if (!comps[k].first->redeclare) continue;
    for (size_t e = 0; e < k; ++e)
      if (comps[e].first->name == comps[k].first->name) {
        replaced.emplace(comps[k].first->name, comps[e]);
        comps[e] = comps[k];
        comps.erase(comps.begin() + static_cast<long>(k));
        --k;
        break;
      }
  }
  std::set<std::string> names;
  for (const auto& [c, owner] : comps) {
    if (!names.insert(c->name).second) fail(DiagKind::duplicate_element, c->span, {c->name});
  }
  check_protected_modifiers(mod, cls, comps);
  for (const auto& [k, v] : effective.sub) {
    if (names.count(k)) continue;
    diags_.report(DiagKind::unknown_modifier, v.span.valid() ? v.span : inst.span,
                  {inst.path.empty() ? cls->def->name : inst.path, k});
    help_did_you_mean(k, std::vector<std::string>(names.begin(), names.end()));
    throw BuildError{};
  }
  // inner components first (the outer ones below find them), conditional components last (their
  // conditions may name any parameter of the class; a false one leaves no instance)
  std::vector<std::unique_ptr<Instance>> owned(comps.size());
  for (int pass = 0; pass < 3; ++pass)
    for (size_t k = 0; k < comps.size(); ++k) {
      const auto& [c, owner] = comps[k];
      if ((c->condition ? 2 : c->inner ? 0 : 1) != pass) continue;
      if (c->condition && !condition_holds(*c, inst)) {
        inst.data().removed.push_back(c);
        continue;
      }
      ModEntry m;
      if (auto it = effective.sub.find(c->name); it != effective.sub.end()) m = it->second;
      auto r = replaced.find(c->name);
      auto [member, own] =
          make_element(inst, *c, owner, m, r == replaced.end() ? nullptr : &r->second, depth + 1);
      if (member == own.get()) {
        member->conditional = c->condition ? c : nullptr;
        member->decl = c;
        member->declared_in = owner;
      } else {
        // an outer component: its member is the inner's instance, which keeps its own
        // declaration; the class that declares the outer one is kept here
        inst.data().outers.push_back({c->name, c, owner});
      }
      inst.members.emplace_back(c->name, member);
      owned[k] = std::move(own);
    }
  // members in declaration order (they are already unless an inner or a conditional component
  // was made before or after its place); elements too
  if (std::any_of(comps.begin(), comps.end(),
                  [](const auto& e) { return e.first->inner || e.first->condition != nullptr; })) {
    std::map<std::string, size_t> order;
    for (const auto& [c, owner] : comps) order.emplace(c->name, order.size());
    std::stable_sort(inst.members.begin(), inst.members.end(),
                     [&](const auto& a, const auto& b) { return order[a.first] < order[b.first]; });
  }
  for (auto& o : owned)
    if (o) inst.elems.push_back(std::move(o));
}

std::unique_ptr<Instance> Flattener::make_component(Instance& parent, const ast::Component& c,
                                                    const ClassEntry* owner, const ModEntry& mod,
                                                    int depth, Instance* decl_scope,
                                                    const ModEntry& carried) {
  // declaration modification, evaluated in the parent's scope; outer `mod` overrides it
  if (!decl_scope) decl_scope = &parent;
  // the class whose text the declaration is (for lookup legality); unknown for a redeclaration
  // written elsewhere, whose names are then looked up without that check
  const ClassEntry* text_cls = decl_scope == &parent ? owner : nullptr;
  ModEntry decl = mod_from_ast(c.mod.get(), decl_scope, text_cls);
  ModEntry m = merge(mod, merge(decl, carried));
  std::vector<int> dims = component_dims(c, *decl_scope, text_cls, m);
  VarRole role = parent.role;
  if (c.variability == ast::Variability::Parameter && role == VarRole::Variable)
    role = VarRole::Parameter;
  if (c.variability == ast::Variability::Constant) role = VarRole::Constant;
  if (c.variability == ast::Variability::Discrete && role == VarRole::Variable)
    role = VarRole::Discrete;
  std::string path = parent.path.empty() ? c.name : parent.path + "." + c.name;

  // resolve the type: builtin, short class (type X = Real(...)) or a class
  std::string builtin;
  const ClassEntry* type = nullptr;
  bool connector = false;
  std::string tn = c.type_name;
  ModEntry type_mod;
  for (int guard = 0; guard < 32; ++guard) {
    if (tn == "Real" || tn == "Integer" || tn == "Boolean" || tn == "String") {
      builtin = tn;
      break;
    }
    type = lookup_class(tn, type ? type : owner, c.type_span);
    if (!type && loader_.failed_to_load(tn.substr(0, tn.find('.')))) throw BuildError{};
    if (!type) fail(DiagKind::unknown_type, c.type_span, {c.type_name});
    if (type->def->kind == ast::ClassKind::Connector) connector = true;
    if (type->def->is_enumeration) {
      // an enumeration value is an Integer, the 1-based position of its literal (Types.cpp)
      if (type->def->enumeration_open)
        fail(DiagKind::unsupported, type->def->span,
             {"'enumeration(:)', an enumeration left open for a redeclaration (Modelica 3.6, "
              "section 4.9.5)"});
      builtin = "Integer";
      break;
    }
    if (!type->def->short_base.empty()) {
      // `type V = Real[3]`: the type's dimensions follow the component's (Modelica 3.6, 10.1)
      if (!type->def->short_dims.empty()) {
        for (const auto& d : type->def->short_dims)
          if (d->kind == ast::ExprKind::Colon)
            fail(DiagKind::unsupported, d->span, {"a size ':' in a short class definition"});
        auto more = eval_dims(type->def->short_dims, Scope{&parent, nullptr});
        dims.insert(dims.end(), more.begin(), more.end());
      }
      type_mod = merge(type_mod, mod_from_ast(type->def->short_mod.get(), &parent, nullptr));
      tn = type->def->short_base;
      continue;
    }
    break;
  }
  m = merge(m, type_mod);
  if (c.flow && !builtin.empty() && builtin != "Real") {
    diags_.report(DiagKind::flow_not_real, c.span,
                  {path, (builtin == "Integer" ? "an " : "a ") + builtin});
    diags_.note(c.type_span,
                "Modelica 3.6, section 4.4.2.2: variables declared with the flow prefix shall be a "
                "subtype of Real");
    throw BuildError{};
  }
  // an input of the model itself (not of one of its components): a known function of time
  if (c.causality == ast::Causality::Input && parent.parent == nullptr &&
      role == VarRole::Variable) {
    if (builtin != "Real")
      fail(DiagKind::input_not_real, c.span,
           {path, builtin.empty() ? "a component of type '" + c.type_name + "'" : "an " + builtin});
    role = VarRole::Input;
  }
  // a flow prefix on a structured component (a record) applies to its members (Modelica 3.6,
  // section 4.4.2.2, "Prefix Rules")
  return make_typed(&parent, path, c, type, builtin, m, dims, 0, role, c.flow || parent.flow,
                    connector, depth);
}

std::unique_ptr<Instance> Flattener::make_typed(Instance* parent, const std::string& path,
                                                const ast::Component& c, const ClassEntry* type,
                                                const std::string& builtin, const ModEntry& mod,
                                                std::vector<int> dims, size_t dim_pos, VarRole role,
                                                bool flow, bool connector, int depth) {
  // an array's scalar elements are counted before any is made, so a huge array fails at once
  double elements = 1.0;
  if (dim_pos == 0)
    for (int d : dims) elements *= static_cast<double>(d);
  if (static_cast<double>(++instances_) + (dim_pos == 0 ? elements - 1.0 : 0.0) >
      static_cast<double>(options_.max_instances))
    fail(DiagKind::unsupported, c.span,
         {fmt::format("a model of more than {} component instances", options_.max_instances)});
  auto inst = std::make_unique<Instance>();
  inst->path = path;
  inst->type_name = c.type_name;
  inst->parent = parent;
  inst->span = c.span;
  inst->role = role;
  inst->flow = flow;
  inst->is_connector = connector;
  if (dim_pos < dims.size()) {
    if (builtin == "String")
      fail(DiagKind::unsupported, c.type_span,
           {"an array of Strings (Modelica 3.6, section 4.9.4)"});
    inst->kind = Instance::Kind::Array;
    inst->dims.assign(dims.begin() + dim_pos, dims.end());
    inst->mod = mod;  // its binding's size is checked by check_array_binding
    int n = dims[dim_pos];
    for (int i = 1; i <= n; ++i) {
      std::string p = path;
      // x[1][2] is written x[1,2]
      if (dim_pos > 0 && !p.empty() && p.back() == ']') {
        p.pop_back();
        p += "," + std::to_string(i) + "]";
      } else {
        p += "[" + std::to_string(i) + "]";
      }
      auto el = make_typed(parent, p, c, type, builtin,
                           pick_element(mod, i - 1, dim_pos + 1 == dims.size()), dims, dim_pos + 1,
                           role, flow, connector, depth);
      inst->elems.push_back(std::move(el));
    }
    return inst;
  }
  if (!builtin.empty()) {
    if (builtin == "String") {
      // a String parameter or constant: a compile-time text (Types.cpp), no variable
      if (role != VarRole::Parameter && role != VarRole::Constant)
        fail(DiagKind::unsupported, c.type_span,
             {"a String variable that is not a parameter or constant (Modelica 3.6, section "
              "4.9.4)"});
      for (const auto& [k, v] : mod.sub)
        if (k != "start" && k != "quantity")
          fail(DiagKind::unknown_modifier, v.span.valid() ? v.span : c.span, {path, k});
      inst->kind = Instance::Kind::Scalar;
      inst->is_string = true;
      inst->mod = mod;
      return inst;
    }
    inst->kind = Instance::Kind::Scalar;
    inst->scalar_type = builtin == "Real"      ? ScalarType::Real
                        : builtin == "Integer" ? ScalarType::Integer
                                               : ScalarType::Boolean;
    if (type && type->def->is_enumeration) inst->enumeration = type;
    static const std::set<std::string> attrs = {"start",       "fixed",    "unit",
                                                "min",         "max",      "nominal",
                                                "displayUnit", "quantity", "stateSelect"};
    for (const auto& [k, v] : mod.sub) {
      if (attrs.count(k)) continue;
      diags_.report(DiagKind::unknown_modifier, v.span.valid() ? v.span : c.span, {path, k});
      help_did_you_mean(k, {"start", "fixed", "unit", "min", "max", "nominal"});
      throw BuildError{};
    }
    FlatVar fv;
    fv.name = path;
    fv.symbol = cx_.new_symbol(path);
    fv.type = inst->scalar_type;
    fv.role = role;
    fv.flow = flow;
    fv.input = c.causality == ast::Causality::Input;
    // an output of the model itself (not of one of its components): an FMU output
    fv.output =
        c.causality == ast::Causality::Output && parent != nullptr && parent->parent == nullptr;
    fv.description = c.description;
    fv.span = c.span;
    inst->var = static_cast<int>(flat_.vars.size());
    inst->mod = mod;
    flat_.var_of_symbol[fv.symbol] = flat_.vars.size();
    if (role != VarRole::Variable) ders_.set_constant(fv.symbol);
    flat_.vars.push_back(std::move(fv));
    scalars_.push_back(inst.get());
    binding_state_.push_back(0);
    resolved_state_.push_back(0);
    resolved_.push_back(nullptr);
    return inst;
  }
  inst->kind = Instance::Kind::Composite;
  inst->cls = type;
  instantiate_members(*inst, type, mod, depth);
  for (const ClassEntry* e : inst->equation_classes())
    if (!e->def->mbs_element.empty()) {
      inst->data().mbs_element = e->def->mbs_element;
      break;
    }
  if (!inst->mbs_element().empty())
    flat_.mech_elements.push_back(MechElement{inst->mbs_element(), path, c.type_name, c.span});
  if (mod.value && type->def->kind == ast::ClassKind::Record && mod.pick.empty()) {
    // `R r = R(1, 2)`: each member is bound to its part of the value (Records.cpp)
    bind_record(*inst, mod, mod.span.valid() ? mod.span : c.span);
  } else if (mod.value) {
    // a value for a model, or for an element of an array of records, is not supported
    fail(DiagKind::unsupported, mod.span.valid() ? mod.span : c.span,
         {"a value binding for component '" + path + "' of type '" + c.type_name + "'"});
  }
  return inst;
}

}  // namespace mbs::flattening
