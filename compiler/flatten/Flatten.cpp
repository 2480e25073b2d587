// Flattening of a model: instance tree, modifications, extends, arrays, equations and connect.
//
// Two phases. Instantiation walks the class tree and creates an Instance for every component and
// a FlatVar (with its own symbol) for every scalar; array sizes are evaluated on the way.
// Elaboration then evaluates bindings, attributes and equations in the scope of the instance they
// belong to, and turns connection sets into equations. Parameter bindings are evaluated lazily so
// that a parameter may be used before it is declared, with cycle detection. The Flattener's
// members live in the files of this folder by concern (Flattener.h lists them); this file has the
// pass itself and its entry point.
#include "compiler/flatten/Flatten.h"

#include "compiler/flatten/Flattener.h"

namespace mbs::flattening {

std::optional<FlatModel> Flattener::run(const ast::ClassDef& model) {
  flat_.name = model.name;
  flat_.description = model.description;
  flat_.span = model.span;
  flat_.time_symbol = cx_.new_symbol("time");
  ders_.set_time(flat_.time_symbol);
  Instance root;
  root.kind = Instance::Kind::Composite;
  root.span = model.span;
  try {
    const ClassEntry* cls = nullptr;
    for (const auto& f : loader_.files())
      for (const auto& c : f->classes)
        if (c.get() == &model) cls = entry_for(&model, nullptr);
    if (!cls) cls = entry_for(&model, nullptr);
    root.cls = cls;
    root.type_name = model.name;
    root.is_connector = model.kind == ast::ClassKind::Connector;
    instantiate_members(root, cls, ModEntry{}, 0);
    elaborate(root);
    generate_connection_equations(root);
    finish_algorithms();
    finish_discrete();
    // every parameter's value, with the parameters it refers to resolved (cycles reported)
    for (size_t i = 0; i < flat_.vars.size(); ++i) {
      FlatVar& v = flat_.vars[i];
      if (v.role == VarRole::Variable) continue;
      try {
        if (v.role == VarRole::Input || v.role == VarRole::Discrete) {
          // its value at the start: the binding (`input Real u = 2`, --set u=2) or `start`
          const bool bound = v.binding != nullptr;
          const Expr e = bound ? v.binding : v.start ? v.start : cx_.zero();
          const Span at = bound ? (v.value_span.valid() ? v.value_span : v.span)
                                : (v.start ? v.start_span : v.span);
          const double x = structural(
              e, at,
              std::string("the start value of ") +
                  (v.role == VarRole::Input ? "input '" : "discrete variable '") + v.name + "'");
          flat_.vars[i].value = x;
          continue;
        }
        Expr r = resolved_binding(i, Span{});
        for (uint32_t s : sym::free_symbols(r))
          fail(DiagKind::not_structural, v.span,
               {"the value of parameter '" + v.name + "' (it depends on '" + cx_.symbol_name(s) +
                "')"});
        flat_.vars[i].value = r->value;
        check_parameter_value(i);
      } catch (const BuildError&) {
        if (diags_.error_limit_reached()) throw;
        // parameters left half-resolved by this error are not reported a second time
        for (size_t j = 0; j < resolved_state_.size(); ++j)
          if (resolved_state_[j] == 1) resolved_state_[j] = 2, resolved_[j] = cx_.zero();
      }
    }
    for (size_t i = 0; i < flat_.vars.size(); ++i) {
      try {
        check_start_value(i);
      } catch (const BuildError&) {
        if (diags_.error_limit_reached()) throw;
      }
    }
  } catch (const BuildError&) {
  }
  report_unused_overrides();
  if (diags_.has_errors()) return std::nullopt;
  assign_equation_groups();
  return std::move(flat_);
}

// FlatEquation::group: equations of the same source equation (its span) whose instance paths
// differ only in array indices ("a[3].b" and "a[7].b" are both "a[].b") form one group: the
// elements of a for-equation, of an array equation and of the equations of an array of
// components. (The connection sets of a connect in a for-equation share the span of their last
// connector's declaration; they group the same way.)
void Flattener::assign_equation_groups() {
  struct Key {
    uint32_t file, line, col, origin;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      uint64_t h = (static_cast<uint64_t>(k.file) << 48) ^ (static_cast<uint64_t>(k.line) << 24) ^
                   (static_cast<uint64_t>(k.col) << 8) ^ (static_cast<uint64_t>(k.origin) << 32);
      return std::hash<uint64_t>{}(h * 0x9e3779b97f4a7c15ULL);
    }
  };
  std::unordered_map<std::string, uint32_t> origins;  // the paths without their indices
  std::unordered_map<Key, uint32_t, KeyHash> groups;
  std::string stripped;
  const std::string* last_origin = nullptr;
  uint32_t last_origin_id = 0;
  for (FlatEquation& e : flat_.equations) {
    if (!e.span.valid()) continue;  // no source equation: no group
    if (last_origin == nullptr || e.origin != *last_origin) {
      stripped.clear();
      append_without_indices(e.origin, stripped);
      last_origin_id =
          origins.try_emplace(stripped, static_cast<uint32_t>(origins.size())).first->second;
      last_origin = &e.origin;
    }
    const Key key{e.span.file, e.span.line, e.span.col, last_origin_id};
    e.group = groups.try_emplace(key, static_cast<uint32_t>(groups.size() + 1)).first->second;
  }
}

}  // namespace mbs::flattening

namespace mbs {

std::optional<FlatModel> flatten(const ast::ClassDef& model, ClassLoader& loader,
                                 const SourceManager& sources, sym::Context& cx,
                                 DerivativeTable& ders, const FlattenOptions& options,
                                 DiagnosticEngine& diags) {
  flattening::Flattener f(loader, sources, cx, ders, options, diags);
  return f.run(model);
}

}  // namespace mbs
