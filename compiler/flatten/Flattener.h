// The flattener's own types, shared by the files of compiler/flatten/ and by nothing else: values
// (scalars and arrays of symbolic expressions), classes with their lexical parents, modifications,
// the instance tree, scopes, the frame of a function being inlined, and the Flattener class whose
// members the files define by concern (docs/architecture.md, "compiler/flatten"):
//
//   Flatten.cpp      the pass: run() (instantiate, elaborate, connect, check), equation groups,
//                    and the entry point flatten()
//   ClassLoader.cpp  library files found on the path, parsed on first use
//   Lookup.cpp       class lookup through the lexical parents and the extends clauses
//   Instantiate.cpp  modifications and the instance tree (components, arrays, extends)
//   Bindings.cpp     bindings, parameters and start values: lazy evaluation, checks, overrides
//   Evaluate.cpp     expressions to values: references, subscripts, operators, built-in calls
//   Functions.cpp    user-defined functions, inlined by executing their algorithm symbolically
//   Algorithms.cpp   algorithm sections of models, executed by the same executor
//   Loops.cpp        iterators: comprehensions, reductions and the projected work of loop nests
//   Equations.cpp    elaboration of scalars and equations (for, if, initial equations)
//   Events.cpp       when-equations, reinit, pre, sample, event-generating floor, discrete checks
//   Connections.cpp  connect: connection sets and their equations
//   Conditional.cpp  conditional components `A a if cond`: the condition, removed components and
//                    the uses a conditional component does not allow
//   Types.cpp        types and checking: sizes from bindings, type checks of bindings, equations,
//                    conditions, built-in arguments and connections
//   Legality.cpp     lookup and access legality: what a class sees, enclosing constants, protected
//   Records.cpp      records: layouts, constructors, record values in bindings and equations
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "compiler/flatten/Flatten.h"
#include "compiler/syntax/Parser.h"
#include "runtime/io/InputFile.h"
#include "runtime/io/Suggest.h"

namespace mbs::flattening {

using sym::Expr;

struct ClassEntry;

// ------------------------------------------------------------------------------------------------
// Values: scalars and arrays of symbolic expressions.

struct RecordLayout;
struct ClassEntry;

struct Value {
  std::vector<int> shape;  // empty: scalar
  std::vector<Expr> elems;
  ScalarType type = ScalarType::Real;
  bool is_string = false;
  std::string str;
  // an enumeration value (type Integer, the literal's 1-based position): its type, else null
  const ClassEntry* enumeration = nullptr;
  // a record (shape empty): elems are its scalar members in declaration order (Records.cpp)
  const RecordLayout* record = nullptr;

  size_t size() const { return elems.size(); }
  bool scalar() const { return shape.empty() && !is_string && !record; }
  static Value of(Expr e, ScalarType t = ScalarType::Real) {
    Value v;
    v.elems.push_back(e);
    v.type = t;
    return v;
  }
  static Value of_record(const RecordLayout* r) {  // the type only (no members)
    Value v;
    v.record = r;
    return v;
  }
};

// The members of a record class in declaration order (inherited ones first), each a run of
// scalars of a record Value (Records.cpp; docs/language.md, "Records").
struct RecordLayout {
  const ClassEntry* cls = nullptr;
  struct Field {
    std::string name;
    size_t offset = 0, size = 1;
    std::vector<int> shape;  // a scalar or array member
    ScalarType type = ScalarType::Real;
    const RecordLayout* record = nullptr;  // a record member (scalar)
    const ast::Component* decl = nullptr;
    const ClassEntry* owner = nullptr;  // the class that declares it
  };
  std::vector<Field> fields;
  size_t size = 0;
};

inline std::string shape_str(const std::vector<int>& s) {
  if (s.empty()) return "scalar";
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// (Functions.cpp) a constant that is not 0; "Real", "Integer" or "Boolean"; "a Real array of
// shape [2]" and the like, for messages
bool is_one(sym::Expr e);
const char* scalar_type_name(ScalarType t);
std::string describe_value(const Value& v);

// ------------------------------------------------------------------------------------------------
// Classes with their lexical parents.

struct ClassEntry {
  const ast::ClassDef* def = nullptr;
  const ClassEntry* parent = nullptr;  // enclosing class, or null at top level
  std::string full_name;
};

// ------------------------------------------------------------------------------------------------
// Modifications

struct Instance;

// The rarer parts of a modification, shared between copies and copied on write (ModEntry::edit):
// most modifications have none, and one ModEntry is held by every scalar instance.
struct ModExtra {
  // `redeclare C name(...)` (Modelica 3.6, section 7.3): the new declaration and the instance in
  // whose scope it was written
  const ast::Component* redeclare = nullptr;
  Instance* redeclare_scope = nullptr;
  // `final k = 2` in a modifier (section 7.2.6); overridden: where a modification from outside
  // tried to change it (checked by make_element)
  Span final_span, overridden;
  // a member of a record bound as a whole (`R r = R(1, 2)`): `value` is the record's and this is
  // the index of the member's scalar in it (-1: the value is the member's own)
  int leaf = -1;
  const RecordLayout* whole = nullptr;  // with leaf: the record the value must be
};

struct ModEntry {
  const ast::Expr* value = nullptr;
  Instance* scope = nullptr;  // the instance in which `value` is evaluated
  // the class whose text `value` is (its names are looked up there: Scope::cls); null: any
  const ClassEntry* scope_cls = nullptr;
  std::vector<int> pick;  // element of an array value meant for this (array element) instance
  std::map<std::string, ModEntry> sub;
  Span span;
  bool each = false;
  bool final_ = false;  // `final k = 2` (section 7.2.6)
  std::shared_ptr<const ModExtra> extra;

  const ast::Component* redeclare() const { return extra ? extra->redeclare : nullptr; }
  int leaf() const { return extra ? extra->leaf : -1; }
  const RecordLayout* whole() const { return extra ? extra->whole : nullptr; }
  // The rarer parts, for writing: this entry's own copy.
  ModExtra& edit() {
    auto e = std::make_shared<ModExtra>(extra ? *extra : ModExtra{});
    ModExtra& r = *e;
    extra = std::move(e);
    return r;
  }
};
using ModMap = std::map<std::string, ModEntry>;

// outer takes precedence over inner
inline ModEntry merge(const ModEntry& outer, const ModEntry& inner) {
  ModEntry r = inner;
  if (inner.final_ && !(r.extra && r.extra->overridden.valid()) &&
      (outer.value || !outer.sub.empty()))
    r.edit().overridden = outer.span.valid() ? outer.span : inner.span;
  // a final modification keeps its value; its members still merge (below)
  if (outer.value && !inner.final_) {
    r.value = outer.value;
    r.scope = outer.scope;
    r.scope_cls = outer.scope_cls;
    if (outer.leaf() != r.leaf() || outer.whole() != r.whole()) {
      ModExtra& x = r.edit();
      x.leaf = outer.leaf();
      x.whole = outer.whole();
    }
    r.pick = outer.pick;
    r.span = outer.span;
    r.each = outer.each;
  }
  if (outer.redeclare() && !inner.final_) {
    ModExtra& x = r.edit();
    x.redeclare = outer.extra->redeclare;
    x.redeclare_scope = outer.extra->redeclare_scope;
  }
  for (const auto& [k, v] : outer.sub) {
    auto it = r.sub.find(k);
    if (it == r.sub.end())
      r.sub.emplace(k, v);
    else
      it->second = merge(v, it->second);
  }
  return r;
}

// ------------------------------------------------------------------------------------------------
// Instances

struct Instance {
  enum class Kind { Scalar, Composite, Array } kind = Kind::Composite;
  ScalarType scalar_type = ScalarType::Real;
  VarRole role = VarRole::Variable;
  int var = -1;            // Scalar: index into FlatModel::vars
  bool is_string = false;  // Scalar: a String parameter or constant (no FlatVar, var = -1)
  bool is_connector = false;
  bool flow = false;
  std::string path;
  std::string type_name;
  const ClassEntry* cls = nullptr;               // Composite
  const ClassEntry* enumeration = nullptr;       // Scalar of an enumeration type (an Integer)
  std::vector<int> dims;                         // Array
  std::vector<std::unique_ptr<Instance>> elems;  // Array elements / Composite members (owned)
  std::vector<std::pair<std::string, Instance*>> members;  // Composite
  Instance* parent = nullptr;
  // the declaration that made this component and the class that holds it (null for the root, a
  // package instance and array elements): what lookup and access control need (Lookup.cpp)
  const ast::Component* decl = nullptr;
  const ClassEntry* declared_in = nullptr;
  // A conditional component (`A a if cond`, present: its condition was true); null otherwise.
  const ast::Component* conditional = nullptr;
  Span span;
  // Scalar: attribute modifications and binding (evaluated during elaboration)
  ModEntry mod;
  // What only an instance of a class has (null for scalars and arrays, which are most instances:
  // kept apart so that they stay small, see test_scaling's peak bytes per equation).
  struct CompositeData {
    std::string mbs_element;  // the multibody element kind of its class (or a base)
    // the classes whose equations belong to this instance (the class and its bases)
    std::vector<const ClassEntry*> equation_classes;
    // its conditional components whose condition was false (they have no instance)
    std::vector<const ast::Component*> removed;
    // its `inner` components, found by the `outer` ones below it (Modularity.cpp)
    std::vector<std::pair<std::string, Instance*>> inners;
    // its `outer` components (their members are inners' instances) and the classes that declare
    // them, for lookup legality (Legality.cpp)
    struct Outer {
      std::string name;
      const ast::Component* decl;
      const ClassEntry* declared_in;
    };
    std::vector<Outer> outers;
  };
  std::unique_ptr<CompositeData> composite;
  CompositeData& data() {
    if (!composite) composite = std::make_unique<CompositeData>();
    return *composite;
  }
  const std::string& mbs_element() const {
    static const std::string none;
    return composite ? composite->mbs_element : none;
  }
  const std::vector<const ClassEntry*>& equation_classes() const {
    static const std::vector<const ClassEntry*> none;
    return composite ? composite->equation_classes : none;
  }

  Instance* member(const std::string& n) const {
    for (const auto& [k, v] : members)
      if (k == n) return v;
    return nullptr;
  }
};

// For-loop iterator bindings visible in a scope.
struct Iterators {
  const Iterators* outer = nullptr;
  std::string name;
  Value value;
  const Value* find(const std::string& n) const {
    for (const Iterators* it = this; it; it = it->outer)
      if (it->name == n) return &it->value;
    return nullptr;
  }
};

struct FunctionFrame;

struct Scope {
  Instance* inst = nullptr;
  const Iterators* iters = nullptr;
  FunctionFrame* frame = nullptr;  // inside the algorithm of a function being inlined
  // the class whose text is evaluated: a name is one of its elements (own or inherited), never
  // an element of a class that extends it (Modelica 3.6, section 5.6); null: no restriction
  const ClassEntry* cls = nullptr;
  Scope with(const Iterators* it) const { return Scope{inst, it, frame, cls}; }
};

// The state of one call of a user-defined function while its algorithm is executed
// symbolically: every input, output and protected variable holds an expression of the
// arguments (an assignment rebinds it), and `returned` is the condition under which the call has
// already returned (0: on no path, 1: on every path).
struct FunctionFrame {
  const ClassEntry* fn = nullptr;
  struct Local {
    const ast::Component* decl = nullptr;
    ScalarType type = ScalarType::Real;
    std::vector<int> dims;  // declared shape; -1 for `:` (taken from the first value)
    const RecordLayout* record = nullptr;  // a record input, output or local
    Value value;                           // meaningful when has_value
    bool has_value = false;                // assigned on some path
    bool defined = false;                  // assigned on every path that has not returned
  };
  std::map<std::string, Local> locals;
  Expr returned;
  // the condition under which the innermost loop has been left by `break` (0 outside loops)
  Expr broken;
  int loops = 0;    // loops around the statement being executed
  int varying = 0;  // branches of ifs on conditions that vary around it
  // An algorithm section of a model (Algorithms.cpp; fn is null): the instance it belongs to,
  // and its locals are the scalar variables the section assigns, by name, with the symbol of
  // each; expressions are evaluated in the instance and see the current values of those.
  Instance* model = nullptr;
  std::unordered_map<uint32_t, std::string> local_of_symbol;
};

struct BuildError {};  // thrown after a diagnostic has been reported, caught per equation

class Flattener {
 public:
  Flattener(ClassLoader& loader, const SourceManager& sources, sym::Context& cx,
            DerivativeTable& ders, const FlattenOptions& options, DiagnosticEngine& diags)
      : loader_(loader),
        sources_(sources),
        cx_(cx),
        ders_(ders),
        options_(options),
        diags_(diags) {}

  std::optional<FlatModel> run(const ast::ClassDef& model);

 private:
  // ---- classes
  const ClassEntry* entry_for(const ast::ClassDef* def, const ClassEntry* parent);
  const ClassEntry* lookup_class(const std::string& dotted, const ClassEntry* from, Span use);
  const ClassEntry* lookup_first(const std::string& name, const ClassEntry* from, Span use);
  const ClassEntry* find_nested(const ClassEntry* c, const std::string& name);
  // ---- records (Records.cpp)
  // eval where a record value may be the result (an equation's side, a binding, an argument, an
  // assignment); everywhere else a record is refused by name (no_stray_record)
  Value eval_whole(const ast::Expr& e, Scope s);
  Value no_stray_record(Value&& v, const ast::Expr& e) {
    if (v.record && allow_record_ != &e) refuse_record(v, e);
    return std::move(v);
  }
  [[noreturn]] void refuse_record(const Value& v, const ast::Expr& e);
  const ast::Expr* allow_record_ = nullptr;
  const RecordLayout* record_layout(const ClassEntry* cls, Span use);
  Value record_value(Instance* inst, Span span);  // a record instance's members as one value
  Value construct_record(const ast::Expr& call, Scope s, const ClassEntry* cls);
  // member `name` of the record value `v` (a scalar, an array or a record)
  Value record_field(const Value& v, const std::string& name, Span at);
  // binds the scalars of the record instance `inst` to the members of the value of `mod`
  void bind_record(Instance& inst, const ModEntry& mod, Span at);
  // `v` as a value of the record `target`: its members picked by name (records are compatible
  // when they have the members of the same names and types, Modelica 3.6, section 6.4); fails
  // naming `what` otherwise
  Value as_record(const Value& v, const RecordLayout* target, Span at, const std::string& what);
  std::set<std::pair<const ast::Expr*, Instance*>> failed_whole_;  // reported once
  std::map<const ClassEntry*, std::unique_ptr<RecordLayout>> layouts_;
  // ---- lookup and access control (Legality.cpp; Modelica 3.6, sections 4.1, 5.3, 5.6)
  // whether an element declared in `owner` is an element of `from` (its own or inherited)
  bool sees(const ClassEntry* from, const ClassEntry* owner);
  // A member that a class's text does not see: its declaration and the class that holds it.
  struct Hidden {
    Span at;
    const ClassEntry* in = nullptr;
  };
  // member `name` of `inst` as the text of class `from` sees it; null when there is none or
  // when it belongs to a class that extends `from` (then *hidden says where it is declared)
  Instance* visible_member(Instance* inst, const std::string& name, const ClassEntry* from,
                           std::optional<Hidden>* hidden);
  // explains why `name` is not found when `hidden` (of visible_member) holds it (a note)
  void note_hidden(const std::string& name, const Hidden& hidden, const ClassEntry* from);
  // fails when `m`, reached through a dot after `through`, is a protected element
  void check_dot_access(const Instance* m, const std::string& through, Span at);
  // fails for a non-constant `comp` of the enclosing class `c` named by `name` (section 5.3.1)
  [[noreturn]] void check_enclosing_constant(const std::string& name, const ast::Component& comp,
                                             const ClassEntry* c, Span at);
  // fails when `inst`, an element of class `cls` named through the class, is no constant or is
  // protected (sections 5.3.2, 4.1)
  void check_class_member(const Instance* inst, const ClassEntry* cls, Span at);
  // fails when the modification `mod` applied from outside `cls` names a protected element
  void check_protected_modifiers(
      const ModEntry& mod, const ClassEntry* cls,
      const std::vector<std::pair<const ast::Component*, const ClassEntry*>>& comps);
  std::map<const ClassEntry*, std::set<const ClassEntry*>> bases_of_;  // sees(): the closure
  // the restrictions of the specialised classes (Modelica 3.6, section 4.6), once per class
  void check_class_restrictions(const ClassEntry* cls);
  std::set<const ClassEntry*> restrictions_checked_;
  // the kinds of class a class may extend (section 7.1.3)
  void check_base_kind(const ClassEntry* cls, const ClassEntry* base, Span at);

  // ---- instantiation
  void instantiate_members(Instance& inst, const ClassEntry* cls, const ModEntry& mod, int depth);
  void collect_elements(const ClassEntry* cls, Instance& inst,
                        std::vector<std::pair<const ast::Component*, const ClassEntry*>>& comps,
                        ModEntry& effective, int depth);
  // `decl_scope`: where c's own modification and dimensions are evaluated (the parent when null);
  // `carried`: modifications below c's own (those a redeclaration keeps, section 7.3.1).
  std::unique_ptr<Instance> make_component(Instance& parent, const ast::Component& c,
                                           const ClassEntry* owner, const ModEntry& mod, int depth,
                                           Instance* decl_scope = nullptr,
                                           const ModEntry& carried = ModEntry{});
  std::unique_ptr<Instance> make_typed(Instance* parent, const std::string& path,
                                       const ast::Component& c, const ClassEntry* type,
                                       const std::string& builtin, const ModEntry& mod,
                                       std::vector<int> dims, size_t dim_pos, VarRole role,
                                       bool flow, bool connector, int depth);
  ModEntry mod_from_ast(const ast::Modification* m, Instance* scope, const ClassEntry* scope_cls);
  ModEntry pick_element(const ModEntry& m, int index, bool last_dim);
  std::vector<int> eval_dims(const std::vector<ast::ExprPtr>& dims, Scope s);
  // ---- redeclare, final, inner/outer (Modularity.cpp)
  // The member (and the instance it owns, if any) that declaration `c` gives `parent`.
  std::pair<Instance*, std::unique_ptr<Instance>> make_element(
      Instance& parent, const ast::Component& c, const ClassEntry* owner, ModEntry mod,
      const std::pair<const ast::Component*, const ClassEntry*>* replaced, int depth);
  // Fails unless class or type `now` (named in `now_owner`) has every public element of `was`.
  void check_compatible(const std::string& was, const ClassEntry* was_owner, Span was_span,
                        const std::string& now, const ClassEntry* now_owner, Span now_span,
                        DiagKind kind, const std::string& what);
  std::vector<std::pair<const ast::Component*, const ClassEntry*>> public_elements(
      const ClassEntry* cls);
  // ---- conditional components (Conditional.cpp)
  bool condition_holds(const ast::Component& c, Instance& parent);
  static const ast::Component* removed_member(const Instance* inst, const std::string& name);
  // Fails when `found` (the member `name` of `owner`, or null) is a conditional component: an
  // expression may not use it, present or removed.
  void check_conditional_use(const Instance* owner, const Instance* found, const std::string& name,
                             Span use);

  // ---- types and checking (Types.cpp)
  // The dimensions of a component, a `:` taken from its binding (`Real a[:] = {1, 2, 3}`).
  std::vector<int> component_dims(const ast::Component& c, Instance& parent,
                                  const ClassEntry* owner, const ModEntry& m);
  // Reports an array whose binding has another size than the declared one.
  void check_array_binding(const Instance& inst);
  // Reports a value (binding, start, modifier) whose type the declaration of `var` does not take.
  void check_value_type(size_t var, const Value& v, Span at, const std::string& what);
  void check_condition(const Value& c, Span at, const char* what);
  void check_equation_types(const Value& l, const Value& r, const ast::Equation& eq);
  void check_connect_types(const FlatVar& a, const FlatVar& b, const ast::Equation& eq);
  void check_numeric_argument(const std::string& fn, const Value& v, Span at);
  // Enumerations (Types.cpp): the type of a variable; a literal `E.a` or the type `E` as the
  // array of its literals; relations of enumeration values.
  const ClassEntry* enumeration_of(size_t var) const { return scalars_[var]->enumeration; }
  Value enumeration_value(const ClassEntry* e, const ast::Expr& ref, size_t part);
  void check_enumeration_operands(const std::string& op, const Value& a, const Value& b, Span span);
  // Strings (Types.cpp): the value of a String parameter or constant; String(x, ...) of a value
  // known at compile time; the text of an expression that must be a String known at compile
  // time (for messages: assert, terminate), reporting an error and throwing BuildError otherwise.
  Value string_instance_value(Instance* inst, Span span);
  [[gnu::noinline]] Value string_call(const ast::Expr& e, Scope s);
  std::string compile_time_string(const ast::Expr& e, Scope s);
  std::set<const Instance*> strings_in_progress_, strings_failed_;

  // ---- evaluation
  // eval recurses once per operator of an expression (up to kMaxExprDepth = 1000 deep), so its
  // frame must stay small: the cases with many locals are functions of their own that are never
  // inlined into it (inlined, they made a frame of 8.6 KB under ASan, and 1,000 of them overflow
  // an 8 MB stack: found by fuzz_flatten).
  Value eval(const ast::Expr& e, Scope s);
  [[gnu::noinline]] Value eval_ref(const ast::Expr& e, Scope s);
  [[gnu::noinline]] Value eval_call(const ast::Expr& e, Scope s);
  std::vector<Value> iterator_ranges(const ast::Expr& e, Scope s);
  std::vector<int> iterate(const ast::Expr& e, Scope s,
                           const std::function<void(const Value&)>& each);
  [[gnu::noinline]] Value eval_comprehension(const ast::Expr& e, Scope s);
  [[gnu::noinline]] Value eval_reduction(const ast::Expr& e, Scope s);
  [[gnu::noinline]] Value eval_compound(const ast::Expr& e, Scope s);  // if, arrays, ranges
  [[gnu::noinline]] Value eval_operator(const ast::Expr& e, Scope s);  // unary and binary
  // ---- user-defined functions, inlined: their algorithm is executed symbolically
  const ClassEntry* user_function(const ast::Expr& call, Scope s);
  std::vector<Value> call_function(const ast::Expr& call, Scope s, const ClassEntry* fn);
  // The argument of each of `names` (null: not given) in a call, positional ones first, then by
  // name (Functions.cpp); `what` names one ("input", "member") and `too_many` is the message for
  // too many positional arguments. Shared by functions and record constructors.
  std::vector<const ast::Expr*> match_arguments(const ast::Expr& call,
                                                const std::vector<std::string>& names,
                                                const std::string& callee, const char* what,
                                                const std::string& too_many);
  void exec(const ast::StatementList& list, FunctionFrame& f, const Iterators* iters);
  void exec_statement(const ast::Statement& st, FunctionFrame& f, const Iterators* iters);
  void exec_if(const ast::Statement& st, size_t branch, FunctionFrame& f, const Iterators* iters);
  void assign(const ast::Expr& target, Value v, FunctionFrame& f, const Iterators* iters);
  void check_outputs_assigned(const FunctionFrame& f, Span where, const std::string& when);
  // the scope in which the statements of `f` evaluate, and a value read there (current values)
  Scope scope_of(FunctionFrame& f, const Iterators* iters) {
    return f.model ? Scope{f.model, iters, nullptr} : Scope{nullptr, iters, &f};
  }
  Value read(const ast::Expr& e, FunctionFrame& f, const Iterators* iters);
  Value current(Value v, const FunctionFrame& f);
  Expr inactive(const FunctionFrame& f);
  // ---- algorithm sections of models (Algorithms.cpp; docs/language.md, "Algorithms")
  void add_algorithms(const ast::ClassDef& def, Instance& inst, bool initial);
  void add_algorithm_section(const ast::StatementList& list, size_t begin, size_t end, Span span,
                             Instance& inst, bool initial);
  void assigned_variables(const ast::StatementList& list, size_t begin, size_t end, Instance& inst,
                          std::vector<std::pair<uint32_t, Span>>& out);
  void assign_model(const ast::Expr& target, Value v, FunctionFrame& f, const Iterators* iters);
  void finish_algorithms();
  // assert(condition, message, level) as an equation (f null) or a statement: decided while
  // compiling; `conditional`: on a path that depends on a varying condition
  void add_assert(const ast::Expr& call, Scope s, FunctionFrame* f, const Iterators* iters,
                  bool conditional);
  std::string assert_message(const ast::Expr& e);
  // `for i loop` without a range (Modelica 3.6, 11.2.2.2): 1:n from the arrays that the body
  // (equations or statements) indexes with i
  Value implicit_range(const ast::ForIndex& ix, const ast::EquationList* eqs,
                       const ast::StatementList* sts, Scope s);
  [[gnu::noinline]] Value eval_binary(const std::string& op, const Value& a, const Value& b,
                                      Span span);
  Value instance_value(Instance* inst, Span span);
  Value eval_mod_value(const ModEntry& m);
  // The value of an array's modifier, evaluated once for all its elements (array_mod_values_),
  // and the part of it an element picks (ModEntry::pick; a scalar applies to every element).
  const Value& shared_mod_value(const ModEntry& m);
  Value pick_part(Value v, const ModEntry& m);
  Expr scalar_of(const Value& v, Span span, const char* what);
  double structural(Expr e, Span span, const std::string& what);
  long structural_int(const Value& v, Span span, const std::string& what);
  // Fails unless an array value of `count` elements is within FlattenOptions::max_instances.
  void check_elements(double count, Span span) {
    if (!(count <= static_cast<double>(options_.max_instances)))
      fail(DiagKind::bad_subscript, span,
           {fmt::format("an array of more than {} elements", options_.max_instances)});
  }
  Expr resolve_parameters(Expr e, Span span, const std::string& what);
  Expr binding_of(size_t var, Span use);
  Expr resolved_binding(size_t var, Span use);
  // Reports a parameter whose value is not finite or outside its min/max (throws BuildError).
  void check_parameter_value(size_t var);
  // Reports a start value that depends on a variable.
  void check_start_value(size_t var);
  void report_unused_overrides();
  // Reports the names of `given` (--set or --start) that named nothing of `role` as `kind`.
  void report_unused(const std::map<std::string, double>& given,
                     const std::map<std::string, bool>& used, VarRole role, DiagKind kind);
  std::string suggestion(const std::string& name, const std::vector<std::string>& candidates);
  void help_did_you_mean(const std::string& name, const std::vector<std::string>& candidates);
  Value apply_subscripts(const Value& v, const std::vector<ast::ExprPtr>& subs, Scope s, Span span,
                         const std::string& name);

  // ---- equations
  void elaborate(Instance& inst);
  void elaborate_scalar(Instance& inst);
  void add_equations(const ast::EquationList& eqs, Scope s, const std::string& origin);
  void add_equation(const ast::Equation& eq, Scope s, const std::string& origin);
  void add_when(const ast::Equation& eq, Scope s, const std::string& origin);
  bool add_switched_if(const ast::Equation& eq, Scope s, const std::string& origin);
  bool varies_in_time(Expr e) const;
  void add_reinit(const ast::Equation& eq, Scope s);
  void add_assignment(const ast::Equation& eq, Scope s);
  bool add_when_if(const ast::Equation& eq, Scope s, const std::vector<Expr>& conditions,
                   const std::string& origin);
  uint32_t pre_symbol_of(uint32_t var);
  Expr sample_trigger(Expr start, Expr interval, Span span);
  Expr event_floor(Expr u, Scope s, Span span, bool truncate = false);
  uint32_t hidden_discrete(const std::string& name, Span span);
  void finish_discrete();
  void add_connect(const ast::Equation& eq, Scope s);
  void add_initial_equations(const ClassEntry* cls, Instance& inst);
  // null when the reference names a removed conditional component
  Instance* resolve_connector(const ast::Expr& ref, Scope s, bool& outside);
  void connect_pair(Instance* a, bool a_out, Instance* b, bool b_out, const ast::Equation& eq);
  void generate_connection_equations(Instance& root);
  void assign_equation_groups();
  std::string source_text(Span span) const;

  [[noreturn]] void fail(DiagKind k, Span span, std::vector<std::string> args = {}) {
    diags_.report(k, span, std::move(args));
    throw BuildError{};
  }

  ClassLoader& loader_;
  const SourceManager& sources_;
  sym::Context& cx_;
  DerivativeTable& ders_;
  const FlattenOptions& options_;
  DiagnosticEngine& diags_;

  FlatModel flat_;
  std::vector<std::unique_ptr<ClassEntry>> entries_;
  std::map<const ast::ClassDef*, const ClassEntry*> entry_of_;
  // classes whose extends clauses are being looked up: their inherited classes are not searched
  // (an extends clause must not influence the lookup of any extends clause of its class; without
  // this rule `extends A; extends B;` with B unknown looked B up through A, which looked A up
  // through B, without end)
  std::vector<const ClassEntry*> resolving_bases_;
  const ClassEntry* lookup_base(const ast::Extends& ext, const ClassEntry* cls);
  std::vector<Instance*> scalars_;  // by var index
  // the values of modifiers of arrays, by (expression, scope) (eval_mod_value)
  std::map<std::pair<const ast::Expr*, Instance*>, Value> array_mod_values_;
  size_t instances_ = 0;   // made so far, at most options_.max_instances
  size_t iterations_ = 0;  // bodies of comprehensions and reductions evaluated so far
  // The iterations still to come of the loops (comprehensions, reductions, for-statements of
  // functions) around the current point, multiplied: a nest whose sizes multiply beyond the limit
  // is refused when it is entered, not after 2*10^7 evaluations (35 s; issue 36).
  double pending_iterations_ = 1.0;
  // Puts pending_iterations_ back as it was when a loop ends (also when it fails).
  struct PendingGuard {
    double& slot;
    double saved = slot;
    ~PendingGuard() { slot = saved; }
  };
  // Refuses a loop of `count` iterations here whose projected work exceeds the limit.
  void check_projected_work(double count, Span span, const char* what);
  // Inside the body of a when-equation: the branch being filled (reinit, pre allowed).
  FlatWhenBranch* when_body_ = nullptr;
  // While the condition of a when-equation is evaluated (initial(), terminal() allowed).
  bool when_condition_ = false;
  // ---- discrete variables (docs/language.md, "Discrete variables"), checked by finish_discrete
  // the when-equation (index into flat_.whens) and the span of the first assignment of a variable
  std::unordered_map<uint32_t, std::pair<size_t, Span>> assigned_in_when_;
  // a variable that is the left side `x = ...` of a continuous equation: its first such equation
  std::unordered_map<uint32_t, Span> continuous_lhs_;
  // pre(x), edge(x), change(x) as used: the variable, the operator, where, inside a when or not
  struct PreUse {
    uint32_t var;
    std::string op;
    Span span;
    bool in_when;
  };
  std::vector<PreUse> pre_uses_;
  std::unordered_map<uint32_t, uint32_t> pre_symbol_;  // variable -> the symbol of pre(x)
  // sample(start, interval) as used: (start, interval) -> its trigger; the hidden when-equations
  // (of sample and floor), added to flat_.whens by finish_discrete
  std::map<std::pair<uint32_t, uint32_t>, Expr> sample_trigger_;
  // floor(u) (truncation of u) of a u that varies in time, by (u, truncate): its value
  std::map<std::pair<uint32_t, bool>, Expr> event_floor_;
  int no_event_depth_ = 0;  // inside noEvent(...) or smooth(p, ...)
  std::vector<FlatWhen> hidden_whens_;
  // Inside an `initial equation` section: its equations go to FlatModel::initial_equations.
  bool initial_section_ = false;
  // lazy binding evaluation state per var: 0 not yet, 1 in progress, 2 done, 3 failed
  std::vector<uint8_t> binding_state_;
  std::vector<uint8_t> resolved_state_;  // resolved_binding: 0 not yet, 1 in progress, 2 done
  std::vector<Expr> resolved_;
  std::map<std::string, bool> overrides_used_;
  std::map<std::string, bool> start_overrides_used_;

  // connection sets: elements are (var, outside?)
  struct Element {
    int var;
    bool outside;
    bool operator<(const Element& o) const {
      return var != o.var ? var < o.var : outside < o.outside;
    }
  };
  std::map<Element, int> element_id_;
  std::vector<int> uf_parent_;
  std::vector<Element> elements_;
  std::vector<Span> element_span_;
  int element(int var, bool outside, Span span) {
    auto [it, inserted] = element_id_.emplace(Element{var, outside}, (int)elements_.size());
    if (inserted) {
      elements_.push_back(Element{var, outside});
      uf_parent_.push_back(it->second);
      element_span_.push_back(span);
    }
    return it->second;
  }
  int find(int x) {
    while (uf_parent_[x] != x) x = uf_parent_[x] = uf_parent_[uf_parent_[x]];
    return x;
  }
  std::vector<std::unique_ptr<Instance>> package_instances_;
  std::vector<const ClassEntry*> call_stack_;     // the functions being inlined, outermost first
  std::set<const ClassEntry*> failed_functions_;  // an error in the body was reported
  // the variables computed by algorithm sections: symbol -> where the section assigns it
  std::unordered_map<uint32_t, Span> algorithm_assigned_;
};

inline constexpr int kMaxDepth = 64;

// The parts of a dotted name `A.'b.c'.D`: a '.' inside a quoted identifier does not split.
inline std::vector<std::string> split_name(const std::string& dotted) {
  std::vector<std::string> parts(1);
  bool quoted = false;
  for (size_t i = 0; i < dotted.size(); ++i) {
    const char c = dotted[i];
    if (quoted && c == '\\' && i + 1 < dotted.size()) {
      parts.back() += c;
      parts.back() += dotted[++i];
      continue;
    }
    if (c == '\'') quoted = !quoted;
    if (c == '.' && !quoted)
      parts.emplace_back();
    else
      parts.back() += c;
  }
  return parts;
}

inline std::vector<std::string> member_names(const Instance* inst) {
  std::vector<std::string> r;
  if (inst)
    for (const auto& [n, m] : inst->members) r.push_back(n);
  return r;
}

inline const std::vector<std::string>& function_names() {
  static const std::vector<std::string> names = {
      "sin",    "cos",      "tan",     "asin",     "acos",         "atan",  "atan2",
      "sinh",   "cosh",     "tanh",    "exp",      "log",          "log10", "sqrt",
      "abs",    "sign",     "min",     "max",      "der",          "size",  "ndims",
      "zeros",  "ones",     "fill",    "identity", "diagonal",     "diag",  "transpose",
      "sum",    "product",  "cross",   "skew",     "outerProduct", "norm",  "scalar",
      "vector", "linspace", "noEvent", "smooth",   "homotopy",     "hypot", "pre"};
  return names;
}

}  // namespace mbs::flattening
