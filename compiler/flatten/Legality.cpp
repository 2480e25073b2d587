// Lookup and access legality (Modelica 3.6, sections 4.1, 5.3 and 5.6): which elements a class's
// text sees (its own and inherited ones, never those of a class that extends it), the constants
// of enclosing classes, and protected elements, which are used only by their simple name and
// modified only by their declaration and by extends clauses.
#include "compiler/flatten/Flattener.h"

namespace mbs::flattening {

namespace {

const char* variability_name(const ast::Component& c) {
  switch (c.variability) {
    case ast::Variability::Parameter:
      return "parameter";
    case ast::Variability::Discrete:
      return "discrete variable";
    case ast::Variability::Constant:
      return "constant";
    case ast::Variability::Continuous:
      break;
  }
  return "variable";
}

}  // namespace

bool Flattener::sees(const ClassEntry* from, const ClassEntry* owner) {
  if (!from || !owner || from == owner) return true;
  auto it = bases_of_.find(from);
  if (it == bases_of_.end()) {
    // the classes `from` inherits from, transitively (their lookups succeeded when the instance
    // was made; one that fails now was reported there)
    std::set<const ClassEntry*> all;
    std::vector<const ClassEntry*> todo{from};
    while (!todo.empty()) {
      const ClassEntry* c = todo.back();
      todo.pop_back();
      for (const auto& ext : c->def->extends) {
        const ClassEntry* b = nullptr;
        try {
          b = lookup_base(ext, c);
        } catch (const BuildError&) {
        }
        if (b && all.insert(b).second) todo.push_back(b);
      }
    }
    it = bases_of_.emplace(from, std::move(all)).first;
  }
  return it->second.count(owner) > 0;
}

Instance* Flattener::visible_member(Instance* inst, const std::string& name, const ClassEntry* from,
                                    std::optional<Hidden>* hidden) {
  Instance* m = inst->member(name);
  if (!m) return nullptr;
  // an outer component's member is the inner's instance: what declares it here is the outer
  // declaration
  Hidden declared{m->decl ? m->decl->span : m->span, m->declared_in};
  if (m->parent != inst && inst->composite)
    for (const auto& o : inst->composite->outers)
      if (o.name == name) declared = {o.decl->span, o.declared_in};
  if (!sees(from, declared.in)) {
    if (hidden) *hidden = declared;
    return nullptr;
  }
  return m;
}

void Flattener::note_hidden(const std::string& name, const Hidden& hidden, const ClassEntry* from) {
  diags_.note(
      hidden.at,
      fmt::format("'{}' is declared here, in '{}', which extends '{}': the names in the "
                  "text of '{}' are looked up where '{}' is defined, never in a class "
                  "that extends it (Modelica 3.6, section 5.6.1)",
                  name, hidden.in ? hidden.in->full_name : "?", from ? from->full_name : "?",
                  from ? from->def->name : "?", from ? from->def->name : "?"));
}

void Flattener::check_enclosing_constant(const std::string& name, const ast::Component& comp,
                                         const ClassEntry* c, Span at) {
  diags_.report(DiagKind::enclosing_not_constant, at, {name, variability_name(comp), c->full_name});
  diags_.note(comp.span,
              "declared here; a name found in an enclosing class must be a constant (Modelica "
              "3.6, section 5.3.1): pass the value in with a parameter and a modifier instead");
  throw BuildError{};
}

void Flattener::check_class_member(const Instance* inst, const ClassEntry* cls, Span at) {
  if (!inst->decl) return;
  if (inst->decl->is_protected) {
    diags_.report(DiagKind::protected_access, at, {inst->decl->name, cls->full_name});
    diags_.note(inst->decl->span,
                "declared protected here (Modelica 3.6, section 4.1: a protected element is "
                "used only by its simple name, in its class and the classes that extend it)");
    throw BuildError{};
  }
  if (inst->decl->variability == ast::Variability::Constant) return;
  diags_.report(DiagKind::class_member_not_constant, at,
                {inst->decl->name, variability_name(*inst->decl), cls->full_name});
  diags_.note(inst->decl->span,
              "declared here; through a class name only the constants of the class are found "
              "(Modelica 3.6, section 5.3.2)");
  throw BuildError{};
}

void Flattener::check_dot_access(const Instance* m, const std::string& through, Span at) {
  if (!m->decl || !m->decl->is_protected) return;
  diags_.report(DiagKind::protected_access, at,
                {m->decl->name, m->declared_in ? m->declared_in->full_name : through});
  diags_.note(m->decl->span,
              "declared protected here (Modelica 3.6, section 4.1: a protected element is used "
              "only by its simple name, in its class and the classes that extend it)");
  throw BuildError{};
}

void Flattener::check_protected_modifiers(
    const ModEntry& mod, const ClassEntry* cls,
    const std::vector<std::pair<const ast::Component*, const ClassEntry*>>& comps) {
  for (const auto& [name, sub] : mod.sub)
    for (const auto& [c, owner] : comps) {
      if (c->name != name || !c->is_protected) continue;
      diags_.report(DiagKind::protected_modifier, sub.span.valid() ? sub.span : c->span,
                    {name, owner ? owner->full_name : cls->full_name});
      diags_.note(c->span,
                  "declared protected here (Modelica 3.6, section 4.1: a protected element is "
                  "modified only by its declaration and by the modifier of an extends clause)");
      throw BuildError{};
    }
}

void Flattener::check_class_restrictions(const ClassEntry* cls) {
  if (!restrictions_checked_.insert(cls).second) return;
  const ast::ClassDef& d = *cls->def;
  const char* kind = ast::class_kind_name(d.kind);
  const auto refuse = [&](Span at, const std::string& what, const std::string& rule) {
    diags_.report(DiagKind::class_restriction, at, {kind, cls->full_name, what});
    diags_.note(d.span, fmt::format("'{}' is declared as a {} here; Modelica 3.6, section {}",
                                    d.name, kind, rule));
    throw BuildError{};
  };
  const bool record = d.kind == ast::ClassKind::Record;
  if (record || d.kind == ast::ClassKind::Connector) {
    const char* rule = record ? "4.6: a record has no equations or algorithms"
                              : "4.6: a connector has no equations or algorithms";
    if (!d.equations.empty()) refuse(d.equations.front().span, "cannot have equations", rule);
    if (!d.initial_spans.empty())
      refuse(d.initial_spans.front(), "cannot have initial equations", rule);
    if (!d.algorithm_spans.empty())
      refuse(d.algorithm_spans.front(), "cannot have an algorithm section", rule);
  }
  for (const auto& c : d.components) {
    if (record && c.is_protected)
      refuse(c.span, "cannot have protected elements ('" + c.name + "')",
             "4.6: only public sections are allowed in a record");
    if (record && (c.flow || c.stream || c.causality != ast::Causality::None))
      refuse(c.span,
             fmt::format("cannot have an element with the prefix '{}' ('{}')",
                         c.flow                                 ? "flow"
                         : c.stream                             ? "stream"
                         : c.causality == ast::Causality::Input ? "input"
                                                                : "output",
                         c.name),
             "4.6: the elements of a record shall not have the prefixes input, output, stream "
             "or flow (give the prefix to the record component instead)");
    if (c.stream && !record) {
      // a stream variable connected as a potential would give wrong numbers without a word
      diags_.report(DiagKind::unsupported, c.span,
                    {"the stream variable '" + c.name +
                     "' (Modelica 3.6, chapter 15: stream connectors, inStream and actualStream)"});
      throw BuildError{};
    }
    if (d.kind == ast::ClassKind::Package && c.variability != ast::Variability::Constant)
      refuse(c.span, "can only contain classes and constants, not '" + c.name + "'",
             "4.6: a package may only contain declarations of classes and constants");
  }
}

void Flattener::check_base_kind(const ClassEntry* cls, const ClassEntry* base, Span at) {
  using K = ast::ClassKind;
  const K d = cls->def->kind, b = base->def->kind;
  bool ok = d == b;
  if (d == K::Connector) ok = ok || b == K::Type || b == K::Record;
  if (d == K::Block) ok = ok || b == K::Record;
  if (d == K::Model) ok = ok || b == K::Record || b == K::Block;
  if (ok) return;
  diags_.report(
      DiagKind::base_class_kind, at,
      {ast::class_kind_name(d), cls->full_name, ast::class_kind_name(b), base->full_name});
  diags_.note(base->def->span,
              fmt::format("'{}' is declared as a {} here; Modelica 3.6, section 7.1.3: a model "
                          "extends models, blocks and records, a block blocks and records, a "
                          "connector connectors, records and types, and every other kind only "
                          "its own kind",
                          base->def->name, ast::class_kind_name(b)));
  throw BuildError{};
}

}  // namespace mbs::flattening
