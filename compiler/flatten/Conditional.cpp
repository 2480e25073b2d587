// Conditional components `A a if cond;` (Modelica 3.6, section 4.4.5): the condition, a Boolean
// parameter expression, is evaluated when the component would be instantiated. When it is false
// the component does not exist: no instance, no variables, no equations, and every connect that
// names it is dropped (Connections.cpp). A conditional component, present or not, may only be
// modified and connected; any use in an expression is an error naming its condition.
#include "compiler/flatten/Flattener.h"

namespace mbs::flattening {

namespace {
const char* kSection =
    "Modelica 3.6, section 4.4.5: a component declared with a condition can only be modified "
    "and used in connect-equations; when the condition is false the component and its "
    "connections are removed";
}

bool Flattener::condition_holds(const ast::Component& c, Instance& parent) {
  const ast::Expr& cond = *c.condition;
  const std::string path = parent.path.empty() ? c.name : parent.path + "." + c.name;
  const std::string what = "the condition of the conditional component '" + path + "'";
  Value v = eval(cond, Scope{&parent, nullptr});
  if (v.is_string || !v.scalar() || v.type != ScalarType::Boolean) {
    const std::string found = v.is_string ? "a String"
                              : !v.scalar()
                                  ? "an array of shape " + shape_str(v.shape)
                                  : (v.type == ScalarType::Real ? "a Real" : "an Integer");
    diags_.report(DiagKind::type_error, cond.span,
                  {what + " must be a Boolean scalar, found " + found});
    diags_.help(kSection);
    throw BuildError{};
  }
  try {
    return structural(v.elems[0], cond.span, what) != 0.0;
  } catch (const BuildError&) {
    diags_.help(kSection);
    throw;
  }
}

const ast::Component* Flattener::removed_member(const Instance* inst, const std::string& name) {
  if (!inst) return nullptr;
  if (inst->composite)
    for (const ast::Component* c : inst->composite->removed)
      if (c->name == name) return c;
  return nullptr;
}

void Flattener::check_conditional_use(const Instance* owner, const Instance* found,
                                      const std::string& name, Span use) {
  const ast::Component* c = found ? found->conditional : removed_member(owner, name);
  if (!c) return;
  const std::string path =
      found ? found->path : (owner->path.empty() ? name : owner->path + "." + name);
  const std::string cond = source_text(c->condition->span);
  diags_.report(
      DiagKind::conditional_use, use,
      {path,
       found ? "(its condition '" + cond + "' is true): it can only be modified or connected"
             : "whose condition '" + cond + "' is false: it was removed, with its connections"});
  diags_.note(c->condition->span, "the condition of '" + c->name + "'");
  diags_.help(kSection);
  throw BuildError{};
}

}  // namespace mbs::flattening
