// Class lookup (Modelica 3.6 ch. 5): a name is looked up in the class, its inherited classes and
// its lexical parents; the extends clauses of a class are looked up without what it inherits.
#include "compiler/flatten/Flattener.h"

namespace mbs::flattening {

std::string Flattener::suggestion(const std::string& name,
                                  const std::vector<std::string>& candidates) {
  // a suggestion must be close (at most a third of the name wrong) and not a different short name
  std::string best;
  size_t best_d = std::max<size_t>(1, name.size() / 3) + 1;
  for (const auto& c : candidates) {
    if (name.size() < 2 || c.size() < 2 || c.size() > 4 * name.size()) continue;
    size_t d = rt::edit_distance(name, c);
    if (d < best_d && d < name.size()) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

void Flattener::help_did_you_mean(const std::string& name,
                                  const std::vector<std::string>& candidates) {
  std::string s = suggestion(name, candidates);
  if (!s.empty()) diags_.help("did you mean '" + s + "'?");
}

// ------------------------------------------------------------------------------------------------
// Class lookup

const ClassEntry* Flattener::entry_for(const ast::ClassDef* def, const ClassEntry* parent) {
  if (auto it = entry_of_.find(def); it != entry_of_.end()) return it->second;
  auto e = std::make_unique<ClassEntry>();
  e->def = def;
  e->parent = parent;
  e->full_name = parent ? parent->full_name + "." + def->name : def->name;
  const ClassEntry* r = e.get();
  entries_.push_back(std::move(e));
  entry_of_[def] = r;
  return r;
}

const ClassEntry* Flattener::find_nested(const ClassEntry* c, const std::string& name) {
  for (const auto& n : c->def->classes)
    if (n->name == name) return entry_for(n.get(), c);
  return nullptr;
}

const ClassEntry* Flattener::lookup_first(const std::string& name, const ClassEntry* from,
                                          Span use) {
  for (const ClassEntry* c = from; c; c = c->parent) {
    if (c->def->name == name) return c;
    if (auto* n = find_nested(c, name)) return n;
    // bases' nested classes (not while c's own extends clauses are being looked up)
    const bool resolving =
        std::find(resolving_bases_.begin(), resolving_bases_.end(), c) != resolving_bases_.end();
    for (const auto& ext : c->def->extends) {
      if (resolving) break;
      // a base named through `name` itself (extends name or name.X) cannot hold name's class
      if (ext.base == name || ext.base.rfind(name + ".", 0) == 0) continue;
      if (auto* b = lookup_base(ext, c))
        if (auto* n = find_nested(b, name)) return n;
    }
    for (const auto& imp : c->def->imports) {
      if (!imp.alias.empty()) {
        if (imp.alias == name) {
          auto* t = lookup_class(imp.path, nullptr, imp.span);
          if (!t) fail(DiagKind::import_not_found, imp.span, {imp.path});
          return t;
        }
      } else if (imp.wildcard) {
        auto* pkg = lookup_class(imp.path, nullptr, imp.span);
        if (!pkg) fail(DiagKind::import_not_found, imp.span, {imp.path});
        if (auto* n = find_nested(pkg, name)) return n;
      } else {
        auto dot = imp.path.rfind('.');
        std::string last = dot == std::string::npos ? imp.path : imp.path.substr(dot + 1);
        if (last == name) {
          auto* t = lookup_class(imp.path, nullptr, imp.span);
          if (!t) fail(DiagKind::import_not_found, imp.span, {imp.path});
          return t;
        }
      }
    }
  }
  if (const ast::ClassDef* top = loader_.find_top_level(name, use)) return entry_for(top, nullptr);
  return nullptr;
}

const ClassEntry* Flattener::lookup_base(const ast::Extends& ext, const ClassEntry* cls) {
  resolving_bases_.push_back(cls);
  const ClassEntry* base = nullptr;
  try {
    base = lookup_class(ext.base, cls, ext.span);
  } catch (...) {
    resolving_bases_.pop_back();
    throw;
  }
  resolving_bases_.pop_back();
  return base;
}

const ClassEntry* Flattener::lookup_class(const std::string& dotted, const ClassEntry* from,
                                          Span use) {
  // a global name `.A.B` (Modelica 3.6, 5.3.3) is looked up from the top level
  const bool global = !dotted.empty() && dotted[0] == '.';
  const ClassEntry* cur = nullptr;
  bool first = true;
  for (const std::string& part : split_name(global ? dotted.substr(1) : dotted)) {
    cur = first ? lookup_first(part, global ? nullptr : from, use) : find_nested(cur, part);
    first = false;
    if (!cur) return nullptr;
  }
  return cur;
}

}  // namespace mbs::flattening
