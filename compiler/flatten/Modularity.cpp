// Redeclaration, final elements and inner/outer (Modelica 3.6, sections 7.3, 7.2.6 and 5.4):
// which declaration makes a component, and whether an `outer` component is its own instance or
// the `inner` one of an enclosing instance.
//
// - `redeclare C sub(...)` in a modification (of a component or of an extends clause) or as an
//   element of a class that inherits `sub` replaces the declaration of a `replaceable` component.
//   The new type must have every public element of the constraining type (the `constrainedby`
//   class, else the declared type) with the same type; the modifications of the replaced
//   declaration that name elements of the constraining type are kept (7.3.1).
// - A `final` element cannot be modified or redeclared.
// - An `outer` component is the `inner` component of the same name of the nearest enclosing
//   instance (the instance hierarchy, not the classes); none is an error (no default inner is
//   made). `inner outer` is both: the outer one for its own class, the inner one below it.
#include "compiler/flatten/Flattener.h"

namespace mbs::flattening {

namespace {
bool is_builtin(const std::string& t) {
  return t == "Real" || t == "Integer" || t == "Boolean" || t == "String";
}
const char* kRedeclare =
    "Modelica 3.6, section 7.3: only an element declared 'replaceable' (and not 'final') can be "
    "redeclared, and its new type must have every public element of the constraining type (the "
    "'constrainedby' class, else the declared type)";
const char* kInner =
    "Modelica 3.6, section 5.4: an 'outer' component is the 'inner' component of the same name "
    "in the nearest enclosing instance; mbs makes no default inner";
}  // namespace

std::vector<std::pair<const ast::Component*, const ClassEntry*>> Flattener::public_elements(
    const ClassEntry* cls) {
  std::vector<std::pair<const ast::Component*, const ClassEntry*>> comps, r;
  Instance scratch;  // collect_elements records the classes of equations on it
  ModEntry ignored;
  collect_elements(cls, scratch, comps, ignored, 0);
  for (const auto& e : comps)
    if (!e.first->is_protected) r.push_back(e);
  return r;
}

void Flattener::check_compatible(const std::string& was, const ClassEntry* was_owner, Span was_span,
                                 const std::string& now, const ClassEntry* now_owner, Span now_span,
                                 DiagKind kind, const std::string& what) {
  auto refuse = [&](const std::string& why, Span at, const std::string& note) {
    diags_.report(kind, now_span, {what, now, why});
    if (at.valid()) diags_.note(at, note);
    diags_.help(kind == DiagKind::outer_incompatible ? kInner : kRedeclare);
    throw BuildError{};
  };
  if (is_builtin(was) || is_builtin(now)) {
    if (was != now) refuse("it is not a '" + was + "'", was_span, "the type required is here");
    return;
  }
  const ClassEntry* a = lookup_class(was, was_owner, was_span);
  const ClassEntry* b = lookup_class(now, now_owner, now_span);
  if (!a) fail(DiagKind::unknown_type, was_span, {was});
  if (!b) fail(DiagKind::unknown_type, now_span, {now});
  if (a == b) return;
  const auto need = public_elements(a);
  const auto have = public_elements(b);
  for (const auto& [e, e_owner] : need) {
    const std::pair<const ast::Component*, const ClassEntry*>* found = nullptr;
    for (const auto& h : have)
      if (h.first->name == e->name) found = &h;
    if (!found)
      refuse("it has no element '" + e->name + "' of '" + was + "'", e->span,
             "'" + e->name + "' is declared here");
    const std::string& te = e->type_name;
    const std::string& th = found->first->type_name;
    const bool same = is_builtin(te) || is_builtin(th)
                          ? te == th
                          : lookup_class(te, e_owner, e->type_span) ==
                                lookup_class(th, found->second, found->first->type_span);
    if (!same)
      refuse(
          "its element '" + e->name + "' is a '" + th + "', not a '" + te + "' as in '" + was + "'",
          e->span, "'" + e->name + "' is declared here");
  }
}

std::pair<Instance*, std::unique_ptr<Instance>> Flattener::make_element(
    Instance& parent, const ast::Component& c, const ClassEntry* owner, ModEntry mod,
    const std::pair<const ast::Component*, const ClassEntry*>* replaced, int depth) {
  const std::string path = parent.path.empty() ? c.name : parent.path + "." + c.name;
  // the declaration being replaced: by an element `redeclare` of this class, or by a modifier
  const ast::Component* orig = replaced ? replaced->first : &c;
  const ClassEntry* orig_owner = replaced ? replaced->second : owner;
  if (c.redeclare && !replaced)
    fail(DiagKind::redeclare_not_replaceable, c.span,
         {path, "no inherited element of this name to redeclare"});
  const ast::Component* decl = &c;
  const ClassEntry* decl_owner = owner;
  Instance* decl_scope = &parent;
  if (mod.redeclare()) {
    decl = mod.redeclare();
    decl_scope = mod.extra->redeclare_scope ? mod.extra->redeclare_scope : &parent;
    decl_owner = decl_scope->cls ? decl_scope->cls : owner;
    ModExtra& x = mod.edit();
    x.redeclare = nullptr;
    x.redeclare_scope = nullptr;
    orig = &c;
    orig_owner = owner;
  }
  if (orig->final_ && (decl != orig || !mod.sub.empty() || mod.value)) {
    diags_.report(DiagKind::final_modified,
                  decl != orig ? decl->span : (mod.span.valid() ? mod.span : c.span),
                  {path, decl != orig ? "redeclared" : "modified"});
    diags_.note(orig->span, "declared final here");
    diags_.help("Modelica 3.6, section 7.2.6: a final element cannot be modified or redeclared");
    throw BuildError{};
  }
  if (mod.extra && mod.extra->overridden.valid()) {
    diags_.report(DiagKind::final_modified, mod.extra->overridden, {path, "modified"});
    diags_.note(mod.extra->final_span, "made final here");
    diags_.help("Modelica 3.6, section 7.2.6: a final element cannot be modified or redeclared");
    throw BuildError{};
  }
  ModEntry carried;
  if (decl != orig) {
    if (!orig->replaceable) {
      diags_.report(DiagKind::redeclare_not_replaceable, decl->span, {path, "not replaceable"});
      diags_.note(orig->span, "declared here without 'replaceable'");
      diags_.help(kRedeclare);
      throw BuildError{};
    }
    const bool constrained = !orig->constrainedby.empty();
    const std::string& limit = constrained ? orig->constrainedby : orig->type_name;
    check_compatible(limit, orig_owner, constrained ? orig->constrainedby_span : orig->type_span,
                     decl->type_name, decl_owner, decl->type_span, DiagKind::redeclare_incompatible,
                     path);
    // the modifications of the replaced declaration that name elements of the constraining
    // type are kept (section 7.3.1)
    ModEntry was = mod_from_ast(orig->mod.get(), &parent, orig_owner);
    if (is_builtin(limit)) {
      carried = was;
    } else if (const ClassEntry* lc = lookup_class(limit, orig_owner, orig->type_span)) {
      for (const auto& [e, e_owner] : public_elements(lc))
        if (auto it = was.sub.find(e->name); it != was.sub.end()) carried.sub.insert(*it);
    }
  }
  if (c.outer) {
    if (!c.inner && (c.mod || !mod.sub.empty() || mod.value)) {
      diags_.report(DiagKind::outer_modified, mod.span.valid() ? mod.span : c.span, {path});
      diags_.help(kInner);
      throw BuildError{};
    }
    Instance* inner = nullptr;
    for (const Instance* p = parent.parent; p && !inner; p = p->parent)
      if (p->composite)
        for (const auto& [n, i] : p->composite->inners)
          if (n == c.name) inner = i;
    if (!inner) {
      diags_.report(DiagKind::missing_inner, c.span, {path, c.type_name, c.name});
      diags_.help(kInner + std::string(": declare 'inner ") + c.type_name + " " + c.name +
                  "' in the model that uses '" + (parent.path.empty() ? "it" : parent.path) + "'");
      throw BuildError{};
    }
    const ast::Component* inner_decl = nullptr;
    const ClassEntry* inner_owner = nullptr;
    if (inner->parent && inner->parent->cls) {
      inner_owner = inner->parent->cls;
      for (const auto& [e, e_owner] : public_elements(inner_owner))
        if (e->name == c.name) inner_decl = e, inner_owner = e_owner;
    }
    if (inner_decl)
      check_compatible(c.type_name, owner, c.type_span, inner_decl->type_name, inner_owner, c.span,
                       DiagKind::outer_incompatible, path);
    if (!c.inner) return {inner, nullptr};
    // `inner outer`: the outer one here, a new inner one for the instances below
    auto own = make_component(parent, c, owner, mod, depth);
    parent.data().inners.emplace_back(c.name, own.get());
    return {inner, std::move(own)};
  }
  auto own = make_component(parent, *decl, decl_owner, mod, depth, decl_scope, carried);
  if (c.inner) parent.data().inners.emplace_back(c.name, own.get());
  return {own.get(), std::move(own)};
}

}  // namespace mbs::flattening
