// User-defined functions, inlined: the algorithm is executed symbolically over the arguments.
#include "compiler/flatten/Flattener.h"

namespace mbs::flattening {

// ------------------------------------------------------------------------------------------------
// User-defined functions
//
// A call is inlined: the arguments are evaluated in the caller's scope, then the function's
// algorithm is executed symbolically over them. Each assignment rebinds a variable to an
// expression; an `if` whose condition is a constant runs one branch, otherwise both run on
// copies of the state, which are merged with select(condition, then, else) per variable; `for`
// and `while` loops are unrolled (a while condition must be known while compiling); `return`
// makes the rest of the algorithm keep the values of the paths that returned. The outputs are
// expressions of the arguments, so derivatives and Jacobians see through the call.

constexpr int kMaxWhileIterations = 100000;

bool is_one(sym::Expr e) {
  return e->is_const() && e->value != 0.0;
}

const char* scalar_type_name(ScalarType t) {
  switch (t) {
    case ScalarType::Integer:
      return "Integer";
    case ScalarType::Boolean:
      return "Boolean";
    default:
      return "Real";
  }
}

std::string describe_value(const Value& v) {
  if (v.is_string) return "a string";
  if (v.record) return "a record '" + v.record->cls->full_name + "'";
  std::string article = v.type == ScalarType::Integer ? "an " : "a ";
  if (v.shape.empty()) return article + scalar_type_name(v.type);
  return article + scalar_type_name(v.type) + " array of shape " + shape_str(v.shape);
}

const ClassEntry* Flattener::user_function(const ast::Expr& call, Scope s) {
  std::string full;
  for (size_t i = 0; i < call.ref.size(); ++i) full += (i ? "." : "") + call.ref[i].name;
  // the built-in functions keep their names (a user function cannot replace sin)
  if (call.ref.size() == 1) {
    const auto& builtin = function_names();
    if (std::find(builtin.begin(), builtin.end(), full) != builtin.end()) return nullptr;
  }
  const ClassEntry* from = s.frame                 ? s.frame->fn
                           : s.cls                 ? s.cls
                           : s.inst && s.inst->cls ? s.inst->cls
                                                   : nullptr;
  const ClassEntry* c = lookup_class(full, from, call.ref.front().span);
  if (!c) return nullptr;
  if (c->def->kind != ast::ClassKind::Function && c->def->kind != ast::ClassKind::Record) {
    diags_.report(
        DiagKind::bad_call, call.ref.front().span,
        {fmt::format("'{}' is a {}, not a function", full, ast::class_kind_name(c->def->kind))});
    diags_.note(c->def->span, fmt::format("'{}' is declared here", full));
    throw BuildError{};
  }
  return c;
}

std::vector<const ast::Expr*> Flattener::match_arguments(const ast::Expr& call,
                                                         const std::vector<std::string>& names,
                                                         const std::string& callee,
                                                         const char* what,
                                                         const std::string& too_many) {
  // positional arguments first, then by name (Modelica 3.6, section 12.4.1)
  std::vector<const ast::Expr*> given(names.size(), nullptr);
  size_t positional = 0;
  for (size_t i = 0; i < call.args.size(); ++i) {
    const bool named = i < call.arg_names.size() && !call.arg_names[i].empty();
    if (!named) {
      if (positional != i)
        fail(DiagKind::bad_call, call.args[i]->span,
             {"a positional argument cannot follow a named one"});
      if (i >= names.size()) fail(DiagKind::bad_call, call.span, {too_many});
      given[i] = call.args[i].get();
      ++positional;
      continue;
    }
    const std::string& n = call.arg_names[i];
    const size_t k = static_cast<size_t>(std::find(names.begin(), names.end(), n) - names.begin());
    if (k == names.size()) {
      diags_.report(DiagKind::unknown_argument, call.arg_spans[i], {callee, n});
      help_did_you_mean(n, names);
      throw BuildError{};
    }
    if (given[k])
      fail(DiagKind::bad_call, call.arg_spans[i],
           {fmt::format("{} '{}' of '{}' is given twice", what, n, callee)});
    given[k] = call.args[i].get();
  }
  return given;
}

std::vector<Value> Flattener::call_function(const ast::Expr& call, Scope s, const ClassEntry* fn) {
  const ast::ClassDef& def = *fn->def;
  const std::string& fname = fn->full_name;
  // recursion, direct or through other functions, would unroll forever
  for (size_t i = 0; i < call_stack_.size(); ++i) {
    if (call_stack_[i] != fn) continue;
    std::string cycle;
    for (size_t j = i; j < call_stack_.size(); ++j) cycle += call_stack_[j]->full_name + " -> ";
    diags_.report(DiagKind::recursive_function, call.span, {fname, cycle + fname});
    diags_.help("functions are inlined while compiling, so they cannot be recursive");
    throw BuildError{};
  }
  if (def.kind == ast::ClassKind::Record)
    fail(DiagKind::bad_call, call.span,
         {fmt::format("'{}' is a record: its constructor has one result", fname)});
  if (!def.extends.empty())
    fail(DiagKind::unsupported, def.extends.front().span, {"'extends' in a function"});
  if (!def.equations.empty())
    fail(DiagKind::unsupported, def.equations.front().span, {"an equation section in a function"});
  if (!def.initial_algorithm_spans.empty())
    fail(DiagKind::unsupported, def.initial_algorithm_spans.front(),
         {"an 'initial algorithm' section in a function"});
  std::vector<const ast::Component*> inputs, outputs;
  for (const auto& c : def.components) {
    if (c.causality == ast::Causality::Input) inputs.push_back(&c);
    if (c.causality == ast::Causality::Output) outputs.push_back(&c);
  }
  if (outputs.empty()) {
    diags_.report(DiagKind::function_no_output, def.span, {fname});
    diags_.note(call.span, "called here");
    diags_.help("declare the result with 'output Real y;' and assign it in the algorithm");
    throw BuildError{};
  }

  std::vector<std::string> input_names;
  for (const auto* in : inputs) input_names.push_back(in->name);
  const std::vector<const ast::Expr*> given =
      match_arguments(call, input_names, fname, "input",
                      fmt::format("function '{}' takes {} argument(s), {} given", fname,
                                  inputs.size(), call.args.size()));
  std::vector<std::optional<Value>> args(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k)
    if (given[k]) args[k] = eval_whole(*given[k], s);

  if (call_stack_.size() >= static_cast<size_t>(kMaxDepth))
    fail(DiagKind::unsupported, call.span,
         {fmt::format("calls of functions nested more than {} deep", kMaxDepth)});
  call_stack_.push_back(fn);
  struct Pop {
    std::vector<const ClassEntry*>& stack;
    ~Pop() { stack.pop_back(); }
  } pop{call_stack_};

  FunctionFrame frame;
  frame.fn = fn;
  frame.returned = cx_.zero();
  frame.broken = cx_.zero();
  for (const auto& c : def.components) {
    FunctionFrame::Local l;
    l.decl = &c;
    if (c.type_name == "Real")
      l.type = ScalarType::Real;
    else if (c.type_name == "Integer")
      l.type = ScalarType::Integer;
    else if (c.type_name == "Boolean")
      l.type = ScalarType::Boolean;
    else if (const ClassEntry* t = lookup_class(c.type_name, fn, c.type_span);
             t && t->def->kind == ast::ClassKind::Record)
      l.record = record_layout(t, c.type_span);  // a record (docs/language.md, "Records")
    else
      fail(DiagKind::unsupported, c.type_span,
           {"a variable of type '" + c.type_name +
            "' in a function (inputs, outputs and locals are Real, Integer or Boolean)"});
    frame.locals[c.name] = std::move(l);
  }
  Scope fs{nullptr, nullptr, &frame};
  // declared dimensions, evaluated in the function once the inputs before them are known
  auto declare_dims = [&](FunctionFrame::Local& l) {
    const ast::Component& c = *l.decl;
    for (const auto* list : {&c.dims, &c.type_dims})
      for (const auto& d : *list)
        l.dims.push_back(
            d->kind == ast::ExprKind::Colon
                ? -1
                : static_cast<int>(structural_int(eval(*d, fs), d->span, "an array dimension")));
  };
  auto fits = [&](const FunctionFrame::Local& l, const Value& v) {
    if (l.record || v.record) return l.record == v.record && l.dims.empty();
    if (v.is_string || v.shape.size() != l.dims.size()) return false;
    for (size_t d = 0; d < l.dims.size(); ++d)
      if (l.dims[d] >= 0 && l.dims[d] != v.shape[d]) return false;
    if (l.type == ScalarType::Boolean) return v.type == ScalarType::Boolean;
    if (v.type == ScalarType::Boolean) return false;
    return l.type == ScalarType::Real || v.type == ScalarType::Integer;
  };
  auto declared = [&](const FunctionFrame::Local& l) {
    if (l.record) return "a record '" + l.record->cls->full_name + "'";
    std::string dims;
    for (int d : l.dims) dims += (dims.empty() ? "" : ", ") + (d < 0 ? ":" : std::to_string(d));
    return std::string(scalar_type_name(l.type)) + (dims.empty() ? "" : "[" + dims + "]");
  };
  for (size_t k = 0; k < inputs.size(); ++k) {
    FunctionFrame::Local& l = frame.locals[inputs[k]->name];
    declare_dims(l);
    Value v;
    Span where = call.span;
    if (args[k]) {
      v = std::move(*args[k]);
      where = given[k]->span;
    } else if (inputs[k]->mod && inputs[k]->mod->value) {
      v = eval_whole(*inputs[k]->mod->value, fs);
      where = inputs[k]->mod->value->span;
    } else {
      diags_.report(DiagKind::bad_call, call.span,
                    {fmt::format("input '{}' of '{}' has no value", inputs[k]->name, fname)});
      diags_.note(inputs[k]->span, "declared here without a default");
      throw BuildError{};
    }
    if (l.record && v.record)
      v = as_record(v, l.record, where,
                    fmt::format("the argument of input '{}' of '{}'", inputs[k]->name, fname));
    if (!fits(l, v)) {
      diags_.report(DiagKind::type_error, where,
                    {fmt::format("input '{}' of '{}' is {}, the argument is {}", inputs[k]->name,
                                 fname, declared(l), describe_value(v))});
      diags_.note(inputs[k]->span, "declared here");
      throw BuildError{};
    }
    if (l.type == ScalarType::Real) v.type = ScalarType::Real;
    l.value = std::move(v);
    l.has_value = l.defined = true;
  }
  // outputs and protected variables: sizes, then declaration bindings in order
  for (const auto& c : def.components) {
    if (c.causality == ast::Causality::Input) continue;
    declare_dims(frame.locals[c.name]);
  }
  // An error in the body is reported for the first call only, not again for every call.
  if (failed_functions_.count(fn)) throw BuildError{};
  try {
    for (const auto& c : def.components) {
      if (c.causality == ast::Causality::Input || !c.mod || !c.mod->value) continue;
      ast::Expr target;
      target.kind = ast::ExprKind::Ref;
      target.span = c.span;
      target.ref.push_back(ast::RefPart{c.name, {}, c.span});
      assign(target, eval_whole(*c.mod->value, fs), frame, nullptr);
    }
    exec(def.algorithm, frame, nullptr);
    check_outputs_assigned(frame, def.span, "");
  } catch (const BuildError&) {
    failed_functions_.insert(fn);
    throw;
  }
  std::vector<Value> out;
  for (const auto* o : outputs) out.push_back(frame.locals[o->name].value);
  return out;
}

void Flattener::check_outputs_assigned(const FunctionFrame& f, Span where,
                                       const std::string& when) {
  for (const auto& c : f.fn->def->components) {
    if (c.causality != ast::Causality::Output) continue;
    const auto& l = f.locals.at(c.name);
    if (l.defined) continue;
    diags_.report(DiagKind::output_unassigned, when.empty() ? c.span : where,
                  {c.name, f.fn->full_name,
                   !when.empty() ? when
                   : l.has_value ? std::string(" on every path")
                                 : std::string()});
    if (!when.empty()) diags_.note(c.span, "declared here");
    diags_.help(when.empty()
                    ? "assign it in every branch, or give it a value in its declaration"
                    : "assign it before the return, or give it a value in its declaration");
    throw BuildError{};
  }
}

Value Flattener::current(Value v, const FunctionFrame& f) {
  // the variables the section assigns read as their current values
  if (!f.model || f.local_of_symbol.empty()) return v;
  for (Expr& e : v.elems) {
    std::unordered_map<uint32_t, Expr> now;
    for (uint32_t sy : sym::free_symbols(e))
      if (auto it = f.local_of_symbol.find(sy); it != f.local_of_symbol.end())
        now.emplace(sy, f.locals.at(it->second).value.elems[0]);
    if (!now.empty()) e = sym::substitute(cx_, e, now);
  }
  return v;
}

Value Flattener::read(const ast::Expr& e, FunctionFrame& f, const Iterators* iters) {
  return current(eval(e, scope_of(f, iters)), f);
}

// The condition under which an assignment changes nothing: the path has returned or left its
// loop by `break`.
Expr Flattener::inactive(const FunctionFrame& f) {
  return f.broken->is_const() && f.broken->value == 0.0
             ? f.returned
             : cx_.select(f.returned, cx_.one(), f.broken);
}

void Flattener::exec(const ast::StatementList& list, FunctionFrame& f, const Iterators* iters) {
  for (const auto& st : list) {
    if (is_one(f.returned) || is_one(f.broken)) return;
    exec_statement(st, f, iters);
  }
}

void Flattener::exec_statement(const ast::Statement& st, FunctionFrame& f, const Iterators* iters) {
  Scope fs = scope_of(f, iters);
  // unrolled loops multiply: bound the total work like comprehensions and reductions
  if (++iterations_ > 10 * options_.max_instances)
    fail(DiagKind::unsupported, st.span,
         {fmt::format("executing the statements of functions more than {} times in one model",
                      10 * options_.max_instances)});
  switch (st.kind) {
    case ast::StatementKind::Assign:
      assign(*st.target, current(eval_whole(*st.value, fs), f), f, iters);
      return;
    case ast::StatementKind::MultiAssign: {
      const ClassEntry* fn =
          st.value->kind == ast::ExprKind::Call ? user_function(*st.value, fs) : nullptr;
      if (!fn)
        fail(DiagKind::bad_call, st.value->span,
             {"the right side of '(...) := ...' must be a call of a user-defined function"});
      std::vector<Value> outs = call_function(*st.value, fs, fn);
      for (Value& o : outs) o = current(std::move(o), f);
      if (st.targets.size() > outs.size())
        fail(DiagKind::bad_call, st.span,
             {fmt::format("function '{}' has {} output(s), {} are assigned", fn->full_name,
                          outs.size(), st.targets.size())});
      for (size_t i = 0; i < st.targets.size(); ++i)
        if (st.targets[i]) assign(*st.targets[i], std::move(outs[i]), f, iters);
      return;
    }
    case ast::StatementKind::Return:
      if (f.fn) check_outputs_assigned(f, st.span, " when the function returns here");
      f.returned = cx_.one();
      return;
    case ast::StatementKind::Call: {
      std::string name;
      for (const auto& part : st.value->ref) name += (name.empty() ? "" : ".") + part.name;
      if (name != "assert" && name != "terminate")
        fail(DiagKind::unsupported, st.span,
             {"the call statement '" + name + "(...)' (assert(...) is the only one)"});
      add_assert(*st.value, fs, &f, iters, f.varying > 0 || !inactive(f)->is_const());
      return;
    }
    case ast::StatementKind::Break:
      if (f.loops == 0) fail(DiagKind::break_outside_loop, st.span);
      f.broken = cx_.one();
      return;
    case ast::StatementKind::If:
      exec_if(st, 0, f, iters);
      return;
    case ast::StatementKind::For: {
      // `break` leaves the whole nest of this statement's indices
      const Expr outer_broken = f.broken;
      ++f.loops;
      std::function<void(size_t, const Iterators*)> loop = [&](size_t k, const Iterators* outer) {
        if (k == st.indices.size()) {
          exec(st.body, f, outer);
          return;
        }
        const auto& ix = st.indices[k];
        Value range = ix.range ? read(*ix.range, f, outer)
                               : implicit_range(ix, nullptr, &st.body, scope_of(f, outer));
        const Span range_span = ix.range ? ix.range->span : ix.span;
        if (range.is_string || range.shape.size() != 1)
          fail(DiagKind::shape_mismatch, range_span, {"a for-loop range must be a vector"});
        // unrolled loops multiply: refuse a nest whose sizes go beyond the limit at its start
        const auto count = static_cast<double>(range.elems.size());
        check_projected_work(count, st.span, "executing the statements of functions");
        const double outer_pending = pending_iterations_;
        const PendingGuard restore{pending_iterations_};
        double done = 0.0;
        for (Expr x : range.elems) {
          pending_iterations_ = outer_pending * (count - done);
          done += 1.0;
          if (is_one(f.returned) || is_one(f.broken)) return;
          x = cx_.num(structural(x, range_span, "the range of loop index '" + ix.name + "'"));
          Iterators it{outer, ix.name, Value::of(x, range.type)};
          loop(k + 1, &it);
        }
      };
      loop(0, iters);
      --f.loops;
      f.broken = outer_broken;
      return;
    }
    case ast::StatementKind::While: {
      const ast::Expr& cond = *st.conditions[0];
      const Expr outer_broken = f.broken;
      ++f.loops;
      for (int n = 0;; ++n) {
        if (is_one(f.returned) || is_one(f.broken)) break;
        Expr c = scalar_of(read(cond, f, iters), cond.span, "a while condition");
        if (!c->is_const()) {
          diags_.report(DiagKind::not_structural, cond.span, {"the condition of a while loop"});
          diags_.help(f.model ? "a while loop of an algorithm section is unrolled while "
                                "compiling, so its condition cannot depend on values that "
                                "change in time; write a for loop with a bound, or an if"
                              : "while loops are unrolled while compiling, so their condition "
                                "may depend on constants, parameters and loop indices only");
          throw BuildError{};
        }
        if (c->value == 0.0) break;
        if (n == kMaxWhileIterations) {
          diags_.report(DiagKind::while_limit, st.span, {std::to_string(kMaxWhileIterations)});
          diags_.help(
              "a while loop is unrolled while compiling; does its condition ever become false?");
          throw BuildError{};
        }
        exec(st.body, f, iters);
      }
      --f.loops;
      f.broken = outer_broken;
      return;
    }
  }
}

// Runs the branch whose condition holds; a condition that depends on variables runs both sides
// and merges them with select().
void Flattener::exec_if(const ast::Statement& st, size_t branch, FunctionFrame& f,
                        const Iterators* iters) {
  if (branch == st.conditions.size()) {
    if (branch < st.branches.size()) exec(st.branches[branch], f, iters);
    return;
  }
  const ast::Expr& ce = *st.conditions[branch];
  Expr c = scalar_of(read(ce, f, iters), ce.span, "an if condition");
  if (c->is_const()) {
    if (c->value != 0.0)
      exec(st.branches[branch], f, iters);
    else
      exec_if(st, branch + 1, f, iters);
    return;
  }
  FunctionFrame saved = f;
  ++f.varying;
  exec(st.branches[branch], f, iters);
  --f.varying;
  FunctionFrame taken = std::move(f);
  f = std::move(saved);
  ++f.varying;
  exec_if(st, branch + 1, f, iters);
  --f.varying;
  const bool taken_done = is_one(taken.returned), other_done = is_one(f.returned);
  for (auto& [name, l] : f.locals) {
    const auto& t = taken.locals.at(name);
    if (t.has_value && l.has_value) {
      if (t.value.shape != l.value.shape)
        fail(DiagKind::shape_mismatch, st.span,
             {fmt::format("'{}' has shape {} in one branch and {} in another", name,
                          shape_str(t.value.shape), shape_str(l.value.shape))});
      for (size_t k = 0; k < l.value.elems.size(); ++k)
        l.value.elems[k] = cx_.select(c, t.value.elems[k], l.value.elems[k]);
    } else if (t.has_value) {
      l.value = t.value;
      l.has_value = true;
    }
    l.defined = (taken_done || t.defined) && (other_done || l.defined);
  }
  if (taken.returned != f.returned) f.returned = cx_.select(c, taken.returned, f.returned);
  if (taken.broken != f.broken) f.broken = cx_.select(c, taken.broken, f.broken);
}

void Flattener::assign(const ast::Expr& target, Value v, FunctionFrame& f, const Iterators* iters) {
  if (f.model) {
    assign_model(target, std::move(v), f, iters);
    return;
  }
  const auto& parts = target.ref;
  const std::string& name = parts[0].name;
  if (iters && iters->find(name))
    fail(DiagKind::type_error, target.span, {"cannot assign to the loop index '" + name + "'"});
  auto it = f.locals.find(name);
  if (it == f.locals.end()) {
    diags_.report(DiagKind::unknown_name, parts[0].span, {name});
    std::vector<std::string> names;
    for (const auto& [n, l] : f.locals) names.push_back(n);
    help_did_you_mean(name, names);
    throw BuildError{};
  }
  if (parts.size() > 1 && !it->second.record)
    fail(DiagKind::unknown_member, parts[1].span, {name, parts[1].name});
  FunctionFrame::Local& l = it->second;
  if (l.decl->causality == ast::Causality::Input) {
    diags_.report(DiagKind::assign_to_input, target.span, {name, f.fn->full_name});
    diags_.note(l.decl->span, "declared as an input here");
    diags_.help("assign a copy: declare 'protected Real " + name + "2 = " + name + ";'");
    throw BuildError{};
  }
  if (v.is_string) fail(DiagKind::type_error, target.span, {"strings cannot be assigned"});
  if (l.record || v.record) {
    // a record is assigned whole (docs/language.md, "Records")
    if (parts.size() > 1 || !parts[0].subscripts.empty() || !l.dims.empty())
      fail(DiagKind::unsupported, target.span,
           {"assigning a member or an element of a record in an algorithm"});
    l.value = as_record(v, l.record, target.span, "the value assigned to '" + name + "'");
    l.has_value = l.defined = true;
    return;
  }
  if ((l.type == ScalarType::Boolean) != (v.type == ScalarType::Boolean) ||
      (l.type == ScalarType::Integer && v.type == ScalarType::Real))
    fail(DiagKind::type_error, target.span,
         {fmt::format("'{}' is {}, the value is {}", name, scalar_type_name(l.type),
                      describe_value(v))});
  Value next;
  if (parts[0].subscripts.empty()) {
    bool shape_ok = v.shape.size() == l.dims.size();
    for (size_t d = 0; shape_ok && d < l.dims.size(); ++d)
      shape_ok = l.dims[d] < 0 || l.dims[d] == v.shape[d];
    if (!shape_ok || (l.has_value && v.shape != l.value.shape && !l.value.shape.empty()))
      fail(DiagKind::shape_mismatch, target.span,
           {fmt::format("'{}' has shape {}, the value has shape {}", name,
                        shape_str(l.has_value ? l.value.shape : l.dims), shape_str(v.shape))});
    next = std::move(v);
  } else {
    // one element of an array: every subscript a number known while compiling
    if (!v.scalar())
      fail(DiagKind::shape_mismatch, target.span,
           {"an element of '" + name + "' is assigned " + describe_value(v)});
    std::vector<int> shape = l.has_value ? l.value.shape : l.dims;
    const auto& subs = parts[0].subscripts;
    if (subs.size() != shape.size())
      fail(DiagKind::bad_subscript, parts[0].span,
           {fmt::format("'{}' has {} dimension(s), {} subscript(s) given", name, shape.size(),
                        subs.size())});
    for (int d : shape)
      if (d < 0)
        fail(DiagKind::bad_subscript, parts[0].span,
             {"an element of '" + name + "' is assigned before its size is known"});
    size_t offset = 0;
    for (size_t d = 0; d < subs.size(); ++d) {
      if (subs[d]->kind == ast::ExprKind::Colon)
        fail(DiagKind::unsupported, subs[d]->span, {"assigning a slice in an algorithm"});
      Iterators end_it{iters, "end", Value::of(cx_.num(shape[d]), ScalarType::Integer)};
      long idx =
          structural_int(eval(*subs[d], Scope{nullptr, &end_it, &f}), subs[d]->span, "a subscript");
      if (idx < 1 || idx > shape[d])
        fail(DiagKind::index_out_of_range, subs[d]->span,
             {std::to_string(idx), std::to_string(shape[d]), name});
      offset = offset * static_cast<size_t>(shape[d]) + static_cast<size_t>(idx - 1);
    }
    if (l.has_value) {
      // in place: copying the array for each element made filling it quadratic (issue 36); paths
      // that have already returned keep the old value
      Expr& slot = l.value.elems[offset];
      const Expr off = inactive(f);
      slot = off->is_const() ? v.elems[0] : cx_.select(off, slot, v.elems[0]);
      if (l.type == ScalarType::Real) l.value.type = ScalarType::Real;
      l.defined = true;
      return;
    }
    // elements not assigned yet are 0
    next.shape = shape;
    next.type = l.type;
    next.elems.assign(std::accumulate(shape.begin(), shape.end(), size_t{1},
                                      [](size_t a, int b) { return a * static_cast<size_t>(b); }),
                      cx_.zero());
    next.elems[offset] = v.elems[0];
  }
  if (l.type == ScalarType::Real) next.type = ScalarType::Real;
  // paths that have already returned (or left their loop) keep the old value
  const Expr off = inactive(f);
  if (!off->is_const() && l.has_value && l.value.shape == next.shape)
    for (size_t k = 0; k < next.elems.size(); ++k)
      next.elems[k] = cx_.select(off, l.value.elems[k], next.elems[k]);
  l.value = std::move(next);
  l.has_value = true;
  l.defined = true;  // an element assignment leaves the other elements at 0
}

}  // namespace mbs::flattening
