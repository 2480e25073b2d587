// Flattening of a model: instance tree, modifications, extends, arrays, equations and connect.
//
// Two phases. Instantiation walks the class tree and creates an Instance for every component and
// a FlatVar (with its own symbol) for every scalar; array sizes are evaluated on the way.
// Elaboration then evaluates bindings, attributes and equations in the scope of the instance they
// belong to, and turns connection sets into equations. Parameter bindings are evaluated lazily so
// that a parameter may be used before it is declared, with cycle detection.
#include "compiler/flatten/Flatten.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "compiler/syntax/Parser.h"
#include "runtime/io/InputFile.h"
#include "runtime/io/Suggest.h"

namespace mbs {

// ------------------------------------------------------------------------------------------------
// ClassLoader

ClassLoader::ClassLoader(SourceManager& sources, DiagnosticEngine& diags,
                         std::vector<std::string> path)
    : sources_(sources), diags_(diags), path_(std::move(path)) {}
ClassLoader::~ClassLoader() = default;

void ClassLoader::add_file(std::unique_ptr<ast::File> file) {
  for (const auto& c : file->classes) top_.emplace(c->name, c.get());
  files_.push_back(std::move(file));
}

const ast::ClassDef* ClassLoader::find_top_level(const std::string& name, Span use) {
  if (auto it = top_.find(name); it != top_.end()) return it->second;
  if (tried_.count(name)) return nullptr;
  tried_[name] = true;
  for (const auto& dir : path_) {
    std::filesystem::path p = std::filesystem::path(dir) / (name + ".mbs");
    std::error_code ec;
    const bool found = std::filesystem::is_regular_file(p, ec);
    probes_.push_back({p.string(), found});
    if (!found) continue;
    std::string why;
    std::optional<std::string> text =
        rt::read_input_file(p.string(), rt::kSourceFileLimit, "library file", why);
    if (!text) {
      diags_.report(DiagKind::library_parse_failed, use, {p.string()});
      diags_.help("it could not be read: " + why);
      failed_[name] = true;
      return nullptr;
    }
    uint32_t id = sources_.add_file(p.string(), std::move(*text));
    size_t before = diags_.error_count();
    auto file = parse_file(sources_, id, diags_);
    if (!file || diags_.error_count() != before) {
      diags_.report(DiagKind::library_parse_failed, use, {p.string()});
      failed_[name] = true;
      return nullptr;
    }
    add_file(std::move(file));
    if (auto it = top_.find(name); it != top_.end()) return it->second;
  }
  return nullptr;
}

const ast::ClassDef* select_model(const ast::File& file, const std::string& name) {
  const ast::ClassDef* last = nullptr;
  for (const auto& c : file.classes) {
    if (!name.empty()) {
      if (c->name == name) return c.get();
      continue;
    }
    if (c->kind == ast::ClassKind::Model || c->kind == ast::ClassKind::Block) last = c.get();
  }
  return last;
}

namespace {

using sym::Expr;

// ------------------------------------------------------------------------------------------------
// Values: scalars and arrays of symbolic expressions.

struct Value {
  std::vector<int> shape;  // empty: scalar
  std::vector<Expr> elems;
  ScalarType type = ScalarType::Real;
  bool is_string = false;
  std::string str;

  size_t size() const { return elems.size(); }
  bool scalar() const { return shape.empty() && !is_string; }
  static Value of(Expr e, ScalarType t = ScalarType::Real) {
    Value v;
    v.elems.push_back(e);
    v.type = t;
    return v;
  }
};

std::string shape_str(const std::vector<int>& s) {
  if (s.empty()) return "scalar";
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

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

struct ModEntry {
  const ast::Expr* value = nullptr;
  Instance* scope = nullptr;  // the instance in which `value` is evaluated
  std::vector<int> pick;      // element of an array value meant for this (array element) instance
  std::map<std::string, ModEntry> sub;
  Span span;
  bool each = false;
};
using ModMap = std::map<std::string, ModEntry>;

// outer takes precedence over inner
ModEntry merge(const ModEntry& outer, const ModEntry& inner) {
  ModEntry r = inner;
  if (outer.value) {
    r.value = outer.value;
    r.scope = outer.scope;
    r.pick = outer.pick;
    r.span = outer.span;
    r.each = outer.each;
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
  std::string path;
  std::string type_name;
  const ClassEntry* cls = nullptr;  // Composite
  ScalarType scalar_type = ScalarType::Real;
  int var = -1;                                  // Scalar: index into FlatModel::vars
  std::vector<int> dims;                         // Array
  std::vector<std::unique_ptr<Instance>> elems;  // Array elements / Composite members (owned)
  std::vector<std::pair<std::string, Instance*>> members;  // Composite
  Instance* parent = nullptr;
  bool is_connector = false;
  std::string mbs_element;  // Composite: the multibody element kind of its class (or a base)
  VarRole role = VarRole::Variable;
  bool flow = false;
  Span span;
  // Scalar: attribute modifications and binding (evaluated during elaboration)
  ModEntry mod;
  // Composite: the classes whose equations belong to this instance (the class and its bases)
  std::vector<const ClassEntry*> equation_classes;

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
  Scope with(const Iterators* it) const { return Scope{inst, it, frame}; }
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
    std::vector<int> dims;   // declared shape; -1 for `:` (taken from the first value)
    Value value;             // meaningful when has_value
    bool has_value = false;  // assigned on some path
    bool defined = false;    // assigned on every path that has not returned
  };
  std::map<std::string, Local> locals;
  Expr returned;
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

  // ---- instantiation
  void instantiate_members(Instance& inst, const ClassEntry* cls, const ModEntry& mod, int depth);
  void collect_elements(const ClassEntry* cls, Instance& inst,
                        std::vector<std::pair<const ast::Component*, const ClassEntry*>>& comps,
                        ModEntry& effective, int depth);
  std::unique_ptr<Instance> make_component(Instance& parent, const ast::Component& c,
                                           const ClassEntry* owner, const ModEntry& mod, int depth);
  std::unique_ptr<Instance> make_typed(Instance* parent, const std::string& path,
                                       const ast::Component& c, const ClassEntry* type,
                                       const std::string& builtin, const ModEntry& mod,
                                       std::vector<int> dims, size_t dim_pos, VarRole role,
                                       bool flow, bool connector, int depth);
  ModEntry mod_from_ast(const ast::Modification* m, Instance* scope);
  ModEntry pick_element(const ModEntry& m, int index, bool last_dim);
  std::vector<int> eval_dims(const std::vector<ast::ExprPtr>& dims, Scope s);

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
  void exec(const ast::StatementList& list, FunctionFrame& f, const Iterators* iters);
  void exec_statement(const ast::Statement& st, FunctionFrame& f, const Iterators* iters);
  void exec_if(const ast::Statement& st, size_t branch, FunctionFrame& f, const Iterators* iters);
  void assign(const ast::Expr& target, Value v, FunctionFrame& f, const Iterators* iters);
  void check_outputs_assigned(const FunctionFrame& f, Span where, const std::string& when);
  [[gnu::noinline]] Value eval_binary(const std::string& op, const Value& a, const Value& b,
                                      Span span);
  Value instance_value(Instance* inst, Span span);
  Value eval_mod_value(const ModEntry& m);
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
  void add_initial_equations(const ast::ClassDef& def, Instance& inst);
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
  std::set<const ast::ClassDef*> algorithm_reported_;  // classes whose algorithm was refused
};

constexpr int kMaxDepth = 64;

std::vector<std::string> member_names(const Instance* inst) {
  std::vector<std::string> r;
  if (inst)
    for (const auto& [n, m] : inst->members) r.push_back(n);
  return r;
}

const std::vector<std::string>& function_names() {
  static const std::vector<std::string> names = {
      "sin",    "cos",      "tan",     "asin",     "acos",         "atan",  "atan2",
      "sinh",   "cosh",     "tanh",    "exp",      "log",          "log10", "sqrt",
      "abs",    "sign",     "min",     "max",      "der",          "size",  "ndims",
      "zeros",  "ones",     "fill",    "identity", "diagonal",     "diag",  "transpose",
      "sum",    "product",  "cross",   "skew",     "outerProduct", "norm",  "scalar",
      "vector", "linspace", "noEvent", "smooth",   "homotopy",     "hypot", "pre"};
  return names;
}

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
  size_t start = 0;
  const ClassEntry* cur = nullptr;
  while (start <= dotted.size()) {
    size_t dot = dotted.find('.', start);
    std::string part =
        dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    cur = cur ? find_nested(cur, part) : lookup_first(part, from, use);
    if (!cur) return nullptr;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

// ------------------------------------------------------------------------------------------------
// Modifications

ModEntry Flattener::mod_from_ast(const ast::Modification* m, Instance* scope) {
  ModEntry r;
  if (!m) return r;
  r.span = m->span;
  if (m->value) {
    r.value = m->value.get();
    r.scope = scope;
  }
  for (const auto& a : m->args) {
    ModEntry sub = mod_from_ast(a.mod.get(), scope);
    sub.each = a.each;
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
    ModEntry ext_mod = mod_from_ast(ext.mod.get(), &inst);
    effective = merge(effective, ext_mod);
    collect_elements(base, inst, comps, effective, depth + 1);
  }
  for (const auto& c : cls->def->components) comps.emplace_back(&c, cls);
  inst.equation_classes.push_back(cls);
}

void Flattener::instantiate_members(Instance& inst, const ClassEntry* cls, const ModEntry& mod,
                                    int depth) {
  if (depth > kMaxDepth) fail(DiagKind::recursive_class, cls->def->span, {cls->full_name});
  std::vector<std::pair<const ast::Component*, const ClassEntry*>> comps;
  ModEntry inherited;  // modifications from extends clauses
  collect_elements(cls, inst, comps, inherited, depth);
  ModEntry effective = merge(mod, inherited);
  std::set<std::string> names;
  for (const auto& [c, owner] : comps) {
    if (!names.insert(c->name).second) fail(DiagKind::duplicate_element, c->span, {c->name});
  }
  for (const auto& [k, v] : effective.sub) {
    if (names.count(k)) continue;
    diags_.report(DiagKind::unknown_modifier, v.span.valid() ? v.span : inst.span,
                  {inst.path.empty() ? cls->def->name : inst.path, k});
    help_did_you_mean(k, std::vector<std::string>(names.begin(), names.end()));
    throw BuildError{};
  }
  for (const auto& [c, owner] : comps) {
    ModEntry m;
    if (auto it = effective.sub.find(c->name); it != effective.sub.end()) m = it->second;
    auto child = make_component(inst, *c, owner, m, depth + 1);
    inst.members.emplace_back(c->name, child.get());
    inst.elems.push_back(std::move(child));
  }
}

std::unique_ptr<Instance> Flattener::make_component(Instance& parent, const ast::Component& c,
                                                    const ClassEntry* owner, const ModEntry& mod,
                                                    int depth) {
  // declaration modification, evaluated in the parent's scope; outer `mod` overrides it
  ModEntry decl = mod_from_ast(c.mod.get(), &parent);
  ModEntry m = merge(mod, decl);
  std::vector<int> dims = eval_dims(c.type_dims, Scope{&parent, nullptr});
  auto more = eval_dims(c.dims, Scope{&parent, nullptr});
  dims.insert(dims.end(), more.begin(), more.end());
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
    if (!type->def->short_base.empty()) {
      type_mod = merge(type_mod, mod_from_ast(type->def->short_mod.get(), &parent));
      tn = type->def->short_base;
      continue;
    }
    break;
  }
  m = merge(m, type_mod);
  // an input of the model itself (not of one of its components): a known function of time
  if (c.causality == ast::Causality::Input && parent.parent == nullptr &&
      role == VarRole::Variable) {
    if (builtin != "Real")
      fail(DiagKind::input_not_real, c.span,
           {path, builtin.empty() ? "a component of type '" + c.type_name + "'" : "an " + builtin});
    role = VarRole::Input;
  }
  return make_typed(&parent, path, c, type, builtin, m, dims, 0, role, c.flow, connector, depth);
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
    inst->kind = Instance::Kind::Array;
    inst->dims.assign(dims.begin() + dim_pos, dims.end());
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
    if (builtin == "String") fail(DiagKind::unsupported, c.type_span, {"a String variable"});
    inst->kind = Instance::Kind::Scalar;
    inst->scalar_type = builtin == "Real"      ? ScalarType::Real
                        : builtin == "Integer" ? ScalarType::Integer
                                               : ScalarType::Boolean;
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
  for (const ClassEntry* e : inst->equation_classes)
    if (!e->def->mbs_element.empty()) {
      inst->mbs_element = e->def->mbs_element;
      break;
    }
  if (!inst->mbs_element.empty())
    flat_.mech_elements.push_back(MechElement{inst->mbs_element, path, c.type_name, c.span});
  if (mod.value) {
    // a record-valued binding `R r = R(...)` is not supported; a value for a model is an error
    fail(DiagKind::unsupported, mod.span.valid() ? mod.span : c.span,
         {"a value binding for component '" + path + "' of type '" + c.type_name + "'"});
  }
  return inst;
}

// ------------------------------------------------------------------------------------------------
// Evaluation

Expr Flattener::scalar_of(const Value& v, Span span, const char* what) {
  if (v.is_string || v.elems.size() != 1 || !v.shape.empty())
    fail(DiagKind::shape_mismatch, span,
         {fmt::format("{} must be a scalar, found {}", what,
                      v.is_string ? std::string("a string") : shape_str(v.shape))});
  return v.elems[0];
}

Expr Flattener::binding_of(size_t var, Span use) {
  FlatVar& fv = flat_.vars[var];
  if (binding_state_[var] == 2) return fv.binding;
  if (binding_state_[var] == 3) throw BuildError{};  // its error was reported
  if (binding_state_[var] == 1)
    fail(DiagKind::parameter_cycle, use.valid() ? use : fv.span, {fv.name});
  binding_state_[var] = 1;
  Instance* inst = scalars_[var];
  Expr b = nullptr;
  auto ov = options_.overrides.find(fv.name);
  ValueOrigin origin = ValueOrigin::None;
  Span value_span;
  if (ov != options_.overrides.end() &&
      (fv.role == VarRole::Parameter || fv.role == VarRole::Input)) {
    b = cx_.num(ov->second);
    overrides_used_[fv.name] = true;
    origin = ValueOrigin::Override;
  } else if (inst->mod.value) {
    try {
      Value v = eval_mod_value(inst->mod);
      b = scalar_of(v, inst->mod.span.valid() ? inst->mod.span : fv.span, "a binding");
    } catch (const BuildError&) {
      binding_state_[var] = 3;  // not "in progress": a later use is no cycle
      throw;
    }
    value_span = inst->mod.value->span.valid() ? inst->mod.value->span : fv.span;
    // a binding evaluated in the component that declares the parameter is its declaration's (or
    // an `extends` modifier's); one evaluated further out is a modifier of an enclosing component
    const Instance* owner = inst->parent;
    while (owner && owner->kind == Instance::Kind::Array) owner = owner->parent;
    origin = inst->mod.scope == owner ? ValueOrigin::Declaration : ValueOrigin::Modifier;
  }
  FlatVar& fvb = flat_.vars[var];  // eval may have added variables
  fvb.value_origin = origin;
  fvb.value_span = value_span;
  fvb.binding = b;
  binding_state_[var] = 2;
  return b;
}

Value Flattener::eval_mod_value(const ModEntry& m) {
  // The value of a modifier of an array is evaluated once and each element picks its part (it
  // was evaluated again for every element: start = {f(i) for i in 1:n} took O(n^2)).
  Value v;
  if (m.pick.empty()) {
    v = eval(*m.value, Scope{m.scope, nullptr});
  } else {
    const auto key = std::make_pair(m.value, m.scope);
    auto it = array_mod_values_.find(key);
    if (it == array_mod_values_.end())
      it = array_mod_values_.emplace(key, eval(*m.value, Scope{m.scope, nullptr})).first;
    v = it->second;
  }
  for (int idx : m.pick) {
    if (v.shape.empty()) break;  // a scalar applies to every element
    int n = v.shape[0];
    if (idx >= n)
      fail(DiagKind::shape_mismatch, m.value->span,
           {fmt::format("the value has {} elements but the array has more", n)});
    size_t stride = v.elems.size() / static_cast<size_t>(n);
    Value r;
    r.type = v.type;
    r.shape.assign(v.shape.begin() + 1, v.shape.end());
    r.elems.assign(v.elems.begin() + idx * stride, v.elems.begin() + (idx + 1) * stride);
    v = std::move(r);
  }
  return v;
}

Value Flattener::instance_value(Instance* inst, Span span) {
  if (inst->kind == Instance::Kind::Scalar) {
    FlatVar& fv = flat_.vars[inst->var];
    if (fv.role == VarRole::Constant) {
      Expr b = binding_of(inst->var, span);
      if (!b) fail(DiagKind::parameter_no_value, span, {fv.name});
      return Value::of(b, fv.type);
    }
    return Value::of(cx_.symbol(fv.symbol), fv.type);
  }
  if (inst->kind == Instance::Kind::Array) {
    Value r;
    r.shape.push_back(static_cast<int>(inst->elems.size()));
    bool first = true;
    for (auto& el : inst->elems) {
      Value e = instance_value(el.get(), span);
      if (first) {
        r.shape.insert(r.shape.end(), e.shape.begin(), e.shape.end());
        r.type = e.type;
        first = false;
      }
      r.elems.insert(r.elems.end(), e.elems.begin(), e.elems.end());
    }
    return r;
  }
  fail(DiagKind::not_a_value, span, {inst->path, inst->type_name});
}

Expr Flattener::resolved_binding(size_t var, Span use) {
  if (resolved_state_[var] == 2) return resolved_[var];
  const FlatVar& fv = flat_.vars[var];
  if (resolved_state_[var] == 1) fail(DiagKind::parameter_cycle, fv.span, {fv.name});
  resolved_state_[var] = 1;
  Expr b = binding_of(var, use);
  if (!b) {
    diags_.report(DiagKind::parameter_no_value, use.valid() ? use : fv.span, {fv.name});
    diags_.help("give it a value in the declaration, a modifier, or --set " + fv.name + "=VALUE");
    throw BuildError{};
  }
  std::unordered_map<uint32_t, Expr> repl;
  for (uint32_t s : sym::free_symbols(b)) {
    auto it = flat_.var_of_symbol.find(s);
    if (it == flat_.var_of_symbol.end() || flat_.vars[it->second].role == VarRole::Variable)
      continue;
    if (flat_.vars[it->second].role == VarRole::Input) {
      diags_.report(DiagKind::input_in_parameter, fv.value_span.valid() ? fv.value_span : fv.span,
                    {fmt::format("the value of {} '{}'",
                                 fv.role == VarRole::Constant ? "constant" : "parameter", fv.name),
                     flat_.vars[it->second].name});
      diags_.note(flat_.vars[it->second].span, "the input is declared here");
      diags_.help("make '" + flat_.vars[it->second].name +
                  "' a parameter, or the dependent quantity a variable (`Real " + fv.name +
                  " = ...`)");
      throw BuildError{};
    }
    repl[s] = resolved_binding(it->second, use);
  }
  resolved_[var] = sym::substitute(cx_, b, repl);
  resolved_state_[var] = 2;
  return resolved_[var];
}

void Flattener::check_parameter_value(size_t var) {
  const FlatVar& v = flat_.vars[var];
  if (v.type != ScalarType::Real) return;
  // the error points at the value; a value from --set points at the declaration and says so
  const bool from_cli = v.value_origin == ValueOrigin::Override;
  const Span at = !from_cli && v.value_span.valid() ? v.value_span : v.span;
  auto say_where = [&] {
    if (from_cli)
      diags_.note(Span{}, fmt::format("the value comes from the command line: --set {}={}", v.name,
                                      options_.overrides.at(v.name)));
    else if (v.value_origin == ValueOrigin::Modifier)
      diags_.note(v.span, fmt::format("'{}' is declared here", v.name));
  };
  if (!std::isfinite(v.value)) {
    diags_.report(DiagKind::parameter_not_finite, at,
                  {v.name, std::isnan(v.value) ? std::string("NaN") : fmt::format("{}", v.value)});
    say_where();
    diags_.help(
        "a parameter must be a finite number: look for a division by zero, or a sqrt, log or pow "
        "outside its domain, in the expressions it is computed from");
    throw BuildError{};
  }
  for (const bool lower : {true, false}) {
    const Expr bound_expr = lower ? v.min : v.max;
    if (!bound_expr) continue;
    const Span bound_span = lower ? v.min_span : v.max_span;
    const double bound = structural(bound_expr, bound_span, lower ? "'min'" : "'max'");
    if (lower ? v.value >= bound : v.value <= bound) continue;
    diags_.report(
        DiagKind::parameter_out_of_range, at,
        {v.name, fmt::format("{}", v.value), lower ? "min" : "max", fmt::format("{}", bound)});
    say_where();
    diags_.note(bound_span, fmt::format("the {} of '{}' is declared here",
                                        lower ? "minimum" : "maximum", v.name));
    throw BuildError{};
  }
}

void Flattener::check_start_value(size_t var) {
  const FlatVar& v = flat_.vars[var];
  if (v.role != VarRole::Variable || !v.start) return;
  for (uint32_t s : sym::free_symbols(v.start)) {
    auto it = flat_.var_of_symbol.find(s);
    if (it != flat_.var_of_symbol.end() && flat_.vars[it->second].role != VarRole::Variable)
      continue;
    const std::string n =
        it == flat_.var_of_symbol.end() ? cx_.symbol_name(s) : flat_.vars[it->second].name;
    fail(DiagKind::not_structural, v.start_span.valid() ? v.start_span : v.span,
         {"the start value of '" + v.name + "' (it depends on the variable '" + n + "')"});
  }
}

void Flattener::report_unused_overrides() {
  report_unused(options_.overrides, overrides_used_, VarRole::Parameter,
                DiagKind::unknown_override);
  report_unused(options_.start_overrides, start_overrides_used_, VarRole::Variable,
                DiagKind::unknown_start_override);
}

void Flattener::report_unused(const std::map<std::string, double>& given,
                              const std::map<std::string, bool>& used, VarRole role,
                              DiagKind kind) {
  for (const auto& [name, value] : given) {
    (void)value;
    if (used.count(name)) continue;
    const FlatVar* found = nullptr;
    std::vector<std::string> candidates;
    for (const auto& v : flat_.vars) {
      if (v.name == name) found = &v;
      // --set also names inputs
      if (v.role == role || (role == VarRole::Parameter && v.role == VarRole::Input))
        candidates.push_back(v.name);
    }
    if (found && found->role == role) continue;  // reported already, through an error path
    // a usage error: it points at the model the command line talks about
    diags_.report(kind, flat_.span, {name});
    if (!found) {
      // the rule of every "did you mean" of a name the user typed (one-letter names too)
      if (const std::string s = rt::meant_name(name, candidates); !s.empty())
        diags_.help("did you mean '" + s + "'?");
      continue;
    }
    const char* what = found->role == VarRole::Variable    ? "a variable"
                       : found->role == VarRole::Parameter ? "a parameter"
                       : found->role == VarRole::Input     ? "an input"
                                                           : "a constant";
    diags_.note(found->span, "'" + name + "' is " + what + ", declared here");
    if (found->role == VarRole::Variable)
      diags_.help("a variable's start value is set with --start " + name + "=VALUE");
    else if (found->role == VarRole::Parameter || found->role == VarRole::Input)
      diags_.help(std::string(found->role == VarRole::Input ? "an input" : "a parameter") +
                  " is set with --set " + name + "=VALUE");
  }
}

Expr Flattener::resolve_parameters(Expr e, Span span, const std::string& what) {
  std::unordered_map<uint32_t, Expr> repl;
  for (uint32_t s : sym::free_symbols(e)) {
    auto it = flat_.var_of_symbol.find(s);
    if (it == flat_.var_of_symbol.end() || flat_.vars[it->second].role == VarRole::Variable) {
      std::string n =
          it == flat_.var_of_symbol.end() ? cx_.symbol_name(s) : flat_.vars[it->second].name;
      fail(DiagKind::not_structural, span, {what + " (it depends on '" + n + "')"});
    }
    if (flat_.vars[it->second].role == VarRole::Input) {
      diags_.report(DiagKind::input_in_parameter, span, {what, flat_.vars[it->second].name});
      diags_.note(flat_.vars[it->second].span, "the input is declared here");
      diags_.help("the compiler needs this value as a number; use a parameter");
      throw BuildError{};
    }
    flat_.mark_compile_time(
        s, what + (span.valid()
                       ? fmt::format(" at {}:{}:{}", sources_.path(span.file), span.line, span.col)
                       : std::string()));
    repl[s] = resolved_binding(it->second, span);
  }
  return sym::substitute(cx_, e, repl);
}

double Flattener::structural(Expr e, Span span, const std::string& what) {
  Expr r = resolve_parameters(e, span, what);
  if (!r->is_const()) fail(DiagKind::not_structural, span, {what});
  return r->value;
}

long Flattener::structural_int(const Value& v, Span span, const std::string& what) {
  double d = structural(scalar_of(v, span, what.c_str()), span, what);
  if (d != std::floor(d) || std::fabs(d) > 1e12)
    fail(DiagKind::type_error, span, {what + " must be an integer, found " + fmt::format("{}", d)});
  return static_cast<long>(d);
}

Value Flattener::apply_subscripts(const Value& v, const std::vector<ast::ExprPtr>& subs, Scope s,
                                  Span span, const std::string& name) {
  if (subs.empty()) return v;
  if (subs.size() > v.shape.size())
    fail(DiagKind::bad_subscript, span,
         {fmt::format("'{}' has {} dimension(s) but {} subscript(s) are given", name,
                      v.shape.size(), subs.size())});
  // index lists per dimension
  std::vector<std::vector<int>> idx(v.shape.size());
  std::vector<bool> keep(v.shape.size(), true);
  for (size_t d = 0; d < v.shape.size(); ++d) {
    int n = v.shape[d];
    if (d >= subs.size() || subs[d]->kind == ast::ExprKind::Colon) {
      for (int i = 0; i < n; ++i) idx[d].push_back(i);
      continue;
    }
    Iterators end_it{s.iters, "end", Value::of(cx_.num(n), ScalarType::Integer)};
    Value sv = eval(*subs[d], s.with(&end_it));
    if (sv.shape.empty()) {
      long i = structural_int(sv, subs[d]->span, "a subscript");
      if (i < 1 || i > n)
        fail(DiagKind::index_out_of_range, subs[d]->span,
             {std::to_string(i), std::to_string(n), name});
      idx[d].push_back(static_cast<int>(i - 1));
      keep[d] = false;
    } else {
      for (Expr e : sv.elems) {
        double di = structural(e, subs[d]->span, "a subscript");
        long i = static_cast<long>(di);
        if (i < 1 || i > n)
          fail(DiagKind::index_out_of_range, subs[d]->span,
               {std::to_string(i), std::to_string(n), name});
        idx[d].push_back(static_cast<int>(i - 1));
      }
    }
  }
  Value r;
  r.type = v.type;
  for (size_t d = 0; d < idx.size(); ++d)
    if (keep[d]) r.shape.push_back(static_cast<int>(idx[d].size()));
  std::vector<size_t> stride(v.shape.size(), 1);
  for (size_t d = v.shape.size(); d-- > 1;) stride[d - 1] = stride[d] * v.shape[d];
  std::vector<size_t> pos(idx.size(), 0);
  while (true) {
    size_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d][pos[d]] * stride[d];
    r.elems.push_back(v.elems[off]);
    size_t d = idx.size();
    while (d > 0) {
      --d;
      if (++pos[d] < idx[d].size()) break;
      pos[d] = 0;
      if (d == 0) return r;
    }
    if (idx.empty()) return r;
  }
}

Value Flattener::eval_ref(const ast::Expr& e, Scope s) {
  const auto& parts = e.ref;
  const std::string& first = parts[0].name;
  Span span = e.span;
  // for-loop iterators
  if (s.iters) {
    if (const Value* it = s.iters->find(first)) {
      if (parts.size() > 1) fail(DiagKind::unknown_member, parts[1].span, {first, parts[1].name});
      return apply_subscripts(*it, parts[0].subscripts, s, span, first);
    }
  }
  // the inputs, outputs and protected variables of a function
  if (s.frame) {
    if (auto it = s.frame->locals.find(first); it != s.frame->locals.end()) {
      if (parts.size() > 1) fail(DiagKind::unknown_member, parts[1].span, {first, parts[1].name});
      if (!it->second.defined) {
        diags_.report(DiagKind::unassigned_use, parts[0].span, {first});
        diags_.note(it->second.decl->span, it->second.has_value
                                               ? "'" + first + "' is assigned on some paths only"
                                               : "'" + first + "' is declared here");
        throw BuildError{};
      }
      return apply_subscripts(it->second.value, parts[0].subscripts, s, span, first);
    }
  }
  // components, searching enclosing instances only for constants/parameters is not Modelica;
  // names resolve in the instance the expression belongs to.
  Instance* inst = s.inst ? s.inst->member(first) : nullptr;
  if (!inst && !s.frame && first == "time" && parts.size() == 1 && parts[0].subscripts.empty())
    return Value::of(cx_.symbol(flat_.time_symbol));
  if (!inst) {
    // a constant in a package: P.c
    const ClassEntry* from = s.frame ? s.frame->fn : s.inst && s.inst->cls ? s.inst->cls : nullptr;
    const ClassEntry* pkg = nullptr;
    size_t k = 0;
    if (parts.size() == 1) {
      // a constant of an enclosing class (lexical scope)
      for (const ClassEntry* c = from ? from->parent : nullptr; c && !pkg; c = c->parent)
        for (const auto& comp : c->def->components)
          if (comp.name == first) pkg = c;
    } else {
      pkg = lookup_first(first, from, span);
      k = 1;
      while (pkg && k + 1 < parts.size()) {
        const ClassEntry* n = find_nested(pkg, parts[k].name);
        if (!n) break;
        pkg = n;
        ++k;
      }
    }
    if (!pkg) {
      diags_.report(DiagKind::unknown_name, parts[0].span, {first});
      auto names = member_names(s.inst);
      if (s.frame)
        for (const auto& [n, l] : s.frame->locals) names.push_back(n);
      if (s.iters)
        for (const Iterators* it = s.iters; it; it = it->outer) names.push_back(it->name);
      help_did_you_mean(first, names);
      throw BuildError{};
    }
    // instantiate the package once as a composite holding its constants
    Instance* pinst = nullptr;
    for (auto& p : package_instances_)
      if (p->cls == pkg) pinst = p.get();
    if (!pinst) {
      auto p = std::make_unique<Instance>();
      p->kind = Instance::Kind::Composite;
      p->cls = pkg;
      p->path = pkg->full_name;
      p->role = VarRole::Constant;
      p->span = parts[0].span;
      instantiate_members(*p, pkg, ModEntry{}, 0);
      pinst = p.get();
      package_instances_.push_back(std::move(p));
    }
    inst = pinst->member(parts[k].name);
    if (!inst) fail(DiagKind::unknown_member, parts[k].span, {pkg->full_name, parts[k].name});
    // evaluate remaining parts against the package instance
    Instance* cur = pinst;
    Value val;
    bool have_val = false;
    for (size_t i = k; i < parts.size(); ++i) {
      Instance* m = cur->member(parts[i].name);
      if (!m) fail(DiagKind::unknown_member, parts[i].span, {cur->path, parts[i].name});
      cur = m;
      if (!parts[i].subscripts.empty() || i + 1 == parts.size()) {
        val = apply_subscripts(instance_value(cur, span), parts[i].subscripts, s, span, cur->path);
        have_val = true;
        if (i + 1 != parts.size())
          fail(DiagKind::unsupported, parts[i + 1].span,
               {"member access after a subscript of a package constant"});
      }
    }
    if (!have_val) val = instance_value(cur, span);
    return val;
  }
  // walk the parts through the instance tree
  Instance* cur = inst;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) {
      if (cur->kind != Instance::Kind::Composite)
        fail(DiagKind::unknown_member, parts[i].span, {cur->path, parts[i].name});
      Instance* m = cur->member(parts[i].name);
      if (!m) {
        diags_.report(DiagKind::unknown_member, parts[i].span, {cur->path, parts[i].name});
        help_did_you_mean(parts[i].name, member_names(cur));
        throw BuildError{};
      }
      cur = m;
    }
    const auto& subs = parts[i].subscripts;
    if (subs.empty()) continue;
    // scalar subscripts on an instance array select an element instance
    bool all_scalar = cur->kind == Instance::Kind::Array;
    std::vector<long> ids;
    if (all_scalar) {
      for (const auto& sx : subs) {
        if (sx->kind == ast::ExprKind::Colon) {
          all_scalar = false;
          break;
        }
        Iterators end_it{
            s.iters, "end",
            Value::of(cx_.num(cur->dims.size() > ids.size() ? cur->dims[ids.size()] : 0),
                      ScalarType::Integer)};
        Value v = eval(*sx, s.with(&end_it));
        if (!v.shape.empty()) {
          all_scalar = false;
          break;
        }
        ids.push_back(structural_int(v, sx->span, "a subscript"));
      }
    }
    if (all_scalar && ids.size() <= cur->dims.size()) {
      for (long id : ids) {
        if (cur->kind != Instance::Kind::Array) break;
        long n = static_cast<long>(cur->elems.size());
        if (id < 1 || id > n)
          fail(DiagKind::index_out_of_range, parts[i].span,
               {std::to_string(id), std::to_string(n), cur->path});
        cur = cur->elems[id - 1].get();
      }
      continue;
    }
    // slices: only on arrays of scalars and only as the last part
    if (i + 1 != parts.size())
      fail(DiagKind::unsupported, parts[i].span, {"a slice of an array of components"});
    return apply_subscripts(instance_value(cur, span), subs, s, span, cur->path);
  }
  return instance_value(cur, span);
}

Value Flattener::eval_binary(const std::string& op, const Value& a, const Value& b, Span span) {
  auto elementwise = [&](auto f, ScalarType t) -> Value {
    if (a.is_string || b.is_string)
      fail(DiagKind::type_error, span, {"strings cannot be used in arithmetic"});
    Value r;
    r.type = t;
    if (a.shape == b.shape) {
      r.shape = a.shape;
      for (size_t i = 0; i < a.size(); ++i) r.elems.push_back(f(a.elems[i], b.elems[i]));
    } else if (a.shape.empty()) {
      r.shape = b.shape;
      for (Expr e : b.elems) r.elems.push_back(f(a.elems[0], e));
    } else if (b.shape.empty()) {
      r.shape = a.shape;
      for (Expr e : a.elems) r.elems.push_back(f(e, b.elems[0]));
    } else {
      fail(DiagKind::shape_mismatch, span,
           {fmt::format("operands of '{}' have incompatible shapes {} and {}", op,
                        shape_str(a.shape), shape_str(b.shape))});
    }
    return r;
  };
  ScalarType num_t = (a.type == ScalarType::Integer && b.type == ScalarType::Integer)
                         ? ScalarType::Integer
                         : ScalarType::Real;
  auto& cx = cx_;
  if (op == "+" || op == ".+") {
    if (op == "+" && a.shape != b.shape && !(a.shape.empty() && b.shape.empty()))
      fail(DiagKind::shape_mismatch, span,
           {fmt::format("operands of '+' have different shapes {} and {} (use '.+' to add a "
                        "scalar to every element)",
                        shape_str(a.shape), shape_str(b.shape))});
    return elementwise([&](Expr x, Expr y) { return cx.add(x, y); }, num_t);
  }
  if (op == "-" || op == ".-") {
    if (op == "-" && a.shape != b.shape && !(a.shape.empty() && b.shape.empty()))
      fail(DiagKind::shape_mismatch, span,
           {fmt::format("operands of '-' have different shapes {} and {} (use '.-' to subtract a "
                        "scalar from every element)",
                        shape_str(a.shape), shape_str(b.shape))});
    return elementwise([&](Expr x, Expr y) { return cx.sub(x, y); }, num_t);
  }
  if (op == ".*") return elementwise([&](Expr x, Expr y) { return cx.mul(x, y); }, num_t);
  if (op == "./")
    return elementwise([&](Expr x, Expr y) { return cx.div(x, y); }, ScalarType::Real);
  if (op == ".^") return elementwise([&](Expr x, Expr y) { return cx.pow(x, y); }, num_t);
  if (op == "/") {
    if (!b.shape.empty())
      fail(DiagKind::shape_mismatch, span,
           {"the divisor of '/' must be a scalar (use './' for element-wise division)"});
    return elementwise([&](Expr x, Expr y) { return cx.div(x, y); }, ScalarType::Real);
  }
  if (op == "^") {
    if (!a.shape.empty() || !b.shape.empty())
      fail(DiagKind::shape_mismatch, span,
           {"'^' needs scalar operands (use '.^' for element-wise powers)"});
    return elementwise([&](Expr x, Expr y) { return cx.pow(x, y); }, num_t);
  }
  if (op == "*") {
    if (a.shape.empty() || b.shape.empty())
      return elementwise([&](Expr x, Expr y) { return cx.mul(x, y); }, num_t);
    auto dot = [&](const std::vector<Expr>& xs, const std::vector<Expr>& ys) {
      std::vector<Expr> t;
      for (size_t i = 0; i < xs.size(); ++i) t.push_back(cx.mul(xs[i], ys[i]));
      return cx.add(std::span<const Expr>(t));
    };
    Value r;
    r.type = num_t;
    if (a.shape.size() == 1 && b.shape.size() == 1) {
      if (a.shape[0] != b.shape[0])
        fail(DiagKind::shape_mismatch, span,
             {fmt::format("vectors of sizes {} and {} cannot be multiplied", a.shape[0],
                          b.shape[0])});
      r.elems.push_back(dot(a.elems, b.elems));
      return r;
    }
    if (a.shape.size() == 2 && b.shape.size() == 1) {
      int m = a.shape[0], n = a.shape[1];
      if (n != b.shape[0])
        fail(DiagKind::shape_mismatch, span,
             {fmt::format("a {}x{} matrix cannot multiply a vector of size {}", m, n, b.shape[0])});
      r.shape = {m};
      for (int i = 0; i < m; ++i) {
        std::vector<Expr> row(a.elems.begin() + i * n, a.elems.begin() + (i + 1) * n);
        r.elems.push_back(dot(row, b.elems));
      }
      return r;
    }
    if (a.shape.size() == 1 && b.shape.size() == 2) {
      int n = b.shape[0], p = b.shape[1];
      if (n != a.shape[0])
        fail(DiagKind::shape_mismatch, span,
             {fmt::format("a vector of size {} cannot multiply a {}x{} matrix", a.shape[0], n, p)});
      r.shape = {p};
      for (int j = 0; j < p; ++j) {
        std::vector<Expr> col;
        for (int i = 0; i < n; ++i) col.push_back(b.elems[i * p + j]);
        r.elems.push_back(dot(a.elems, col));
      }
      return r;
    }
    if (a.shape.size() == 2 && b.shape.size() == 2) {
      int m = a.shape[0], n = a.shape[1], p = b.shape[1];
      if (n != b.shape[0])
        fail(DiagKind::shape_mismatch, span,
             {fmt::format("matrices of shapes {}x{} and {}x{} cannot be multiplied", m, n,
                          b.shape[0], p)});
      r.shape = {m, p};
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < p; ++j) {
          std::vector<Expr> row(a.elems.begin() + i * n, a.elems.begin() + (i + 1) * n);
          std::vector<Expr> col;
          for (int k = 0; k < n; ++k) col.push_back(b.elems[k * p + j]);
          r.elems.push_back(dot(row, col));
        }
      return r;
    }
    fail(DiagKind::shape_mismatch, span,
         {fmt::format("'*' is not defined for shapes {} and {}", shape_str(a.shape),
                      shape_str(b.shape))});
  }
  static const std::map<std::string, sym::Op> rel = {
      {"<", sym::Op::Lt},  {"<=", sym::Op::Le}, {">", sym::Op::Gt},    {">=", sym::Op::Ge},
      {"==", sym::Op::Eq}, {"<>", sym::Op::Ne}, {"and", sym::Op::And}, {"or", sym::Op::Or}};
  if (auto it = rel.find(op); it != rel.end()) {
    sym::Op o = it->second;
    return elementwise([&](Expr x, Expr y) { return cx.binary(o, x, y); }, ScalarType::Boolean);
  }
  fail(DiagKind::unsupported, span, {"operator '" + op + "'"});
}

Value Flattener::eval(const ast::Expr& e, Scope s) {
  using K = ast::ExprKind;
  switch (e.kind) {
    case K::Ref:
      return eval_ref(e, s);
    case K::Call:
      return eval_call(e, s);
    case K::Unary:
    case K::Binary:
      return eval_operator(e, s);
    default:
      return eval_compound(e, s);
  }
}

Value Flattener::eval_operator(const ast::Expr& e, Scope s) {
  if (e.kind == ast::ExprKind::Binary) {
    Value a = eval(*e.args[0], s);
    Value b = eval(*e.args[1], s);
    return eval_binary(e.op, a, b, e.span);
  }
  Value a = eval(*e.args[0], s);
  if (a.is_string) fail(DiagKind::type_error, e.span, {"strings cannot be used in arithmetic"});
  if (e.op == "+") return a;
  for (auto& x : a.elems) x = e.op == "-" ? cx_.neg(x) : cx_.unary(sym::Op::Not, x);
  if (e.op == "not") a.type = ScalarType::Boolean;
  return a;
}

Value Flattener::eval_compound(const ast::Expr& e, Scope s) {
  using K = ast::ExprKind;
  switch (e.kind) {
    case K::Number:
      return Value::of(cx_.num(e.number), e.is_integer ? ScalarType::Integer : ScalarType::Real);
    case K::Bool:
      return Value::of(cx_.num(e.boolean ? 1.0 : 0.0), ScalarType::Boolean);
    case K::String: {
      Value v;
      v.is_string = true;
      v.str = e.text;
      return v;
    }
    case K::Ref:
    case K::Call:
    case K::Unary:
    case K::Binary:
      return eval(e, s);  // eval's own
    case K::Comprehension:
      return eval_comprehension(e, s);
    case K::Reduction:
      return eval_reduction(e, s);
    case K::If: {
      // if c1 then a1 elseif c2 then a2 else b   (args: c1, a1, c2, a2, ..., b)
      size_t n = e.args.size();
      Value result = eval(*e.args[n - 1], s);
      for (size_t i = n - 1; i >= 2; i -= 2) {
        Value c = eval(*e.args[i - 2], s);
        Expr ce = scalar_of(c, e.args[i - 2]->span, "an if condition");
        if (ce->is_const()) {
          if (ce->value != 0.0) result = eval(*e.args[i - 1], s);
          continue;
        }
        Value t = eval(*e.args[i - 1], s);
        if (t.shape != result.shape)
          fail(DiagKind::shape_mismatch, e.span,
               {"the branches of an if-expression have different shapes"});
        for (size_t k = 0; k < t.size(); ++k)
          result.elems[k] = cx_.select(ce, t.elems[k], result.elems[k]);
        if (t.type == ScalarType::Real) result.type = ScalarType::Real;
      }
      return result;
    }
    case K::Array: {
      Value r;
      r.type = ScalarType::Integer;
      if (e.args.empty()) {
        r.shape = std::vector<int>{0};
        return r;
      }
      std::vector<int> inner;
      for (size_t i = 0; i < e.args.size(); ++i) {
        Value v = eval(*e.args[i], s);
        if (v.is_string)
          fail(DiagKind::type_error, e.args[i]->span, {"arrays of strings are not supported"});
        if (i == 0)
          inner = v.shape;
        else if (v.shape != inner)
          fail(DiagKind::shape_mismatch, e.args[i]->span,
               {fmt::format("array elements have different shapes {} and {}", shape_str(inner),
                            shape_str(v.shape))});
        if (v.type == ScalarType::Real) r.type = ScalarType::Real;
        if (v.type == ScalarType::Boolean && i == 0) r.type = ScalarType::Boolean;
        r.elems.insert(r.elems.end(), v.elems.begin(), v.elems.end());
      }
      r.shape.push_back(static_cast<int>(e.args.size()));
      r.shape.insert(r.shape.end(), inner.begin(), inner.end());
      return r;
    }
    case K::Matrix: {
      // promote to 2-D, concatenate horizontally within rows and vertically across rows
      std::vector<Value> rows;
      for (const auto& row : e.rows) {
        Value acc;
        bool first = true;
        for (const auto& el : row) {
          Value v = eval(*el, s);
          if (v.shape.empty())
            v.shape = std::vector<int>{1, 1};
          else if (v.shape.size() == 1)
            v.shape = std::vector<int>{v.shape[0], 1};
          if (v.shape.size() != 2)
            fail(DiagKind::shape_mismatch, el->span,
                 {"matrix elements must be scalars, vectors or matrices"});
          if (first) {
            acc = v;
            first = false;
            continue;
          }
          if (v.shape[0] != acc.shape[0])
            fail(DiagKind::shape_mismatch, el->span,
                 {"elements of a matrix row have different numbers of rows"});
          Value c;
          c.type = (acc.type == ScalarType::Real || v.type == ScalarType::Real) ? ScalarType::Real
                                                                                : acc.type;
          int m = acc.shape[0], n1 = acc.shape[1], n2 = v.shape[1];
          c.shape = std::vector<int>{m, n1 + n2};
          for (int i = 0; i < m; ++i) {
            c.elems.insert(c.elems.end(), acc.elems.begin() + i * n1,
                           acc.elems.begin() + (i + 1) * n1);
            c.elems.insert(c.elems.end(), v.elems.begin() + i * n2, v.elems.begin() + (i + 1) * n2);
          }
          acc = std::move(c);
        }
        rows.push_back(std::move(acc));
      }
      Value r = rows[0];
      for (size_t i = 1; i < rows.size(); ++i) {
        if (rows[i].shape[1] != r.shape[1])
          fail(DiagKind::shape_mismatch, e.span,
               {"rows of a matrix have different numbers of columns"});
        r.shape[0] += rows[i].shape[0];
        r.elems.insert(r.elems.end(), rows[i].elems.begin(), rows[i].elems.end());
        if (rows[i].type == ScalarType::Real) r.type = ScalarType::Real;
      }
      return r;
    }
    case K::Range: {
      double a = structural(scalar_of(eval(*e.args[0], s), e.args[0]->span, "a range bound"),
                            e.span, "a range bound");
      double step = 1, b;
      if (e.args.size() == 3) {
        step = structural(scalar_of(eval(*e.args[1], s), e.args[1]->span, "a range step"), e.span,
                          "a range step");
        b = structural(scalar_of(eval(*e.args[2], s), e.args[2]->span, "a range bound"), e.span,
                       "a range bound");
      } else {
        b = structural(scalar_of(eval(*e.args[1], s), e.args[1]->span, "a range bound"), e.span,
                       "a range bound");
      }
      if (step == 0) fail(DiagKind::bad_subscript, e.span, {"the step of a range is zero"});
      double count = std::floor((b - a) / step + 1e-10) + 1;
      check_elements(count, e.span);
      Value r;
      r.type =
          (a == std::floor(a) && step == std::floor(step)) ? ScalarType::Integer : ScalarType::Real;
      for (long i = 0; i < static_cast<long>(count); ++i) r.elems.push_back(cx_.num(a + i * step));
      r.shape = std::vector<int>{static_cast<int>(r.elems.size())};
      return r;
    }
    case K::End:
      if (s.iters)
        if (const Value* v = s.iters->find("end")) return *v;
      [[fallthrough]];
    case K::Colon:
      fail(DiagKind::bad_subscript, e.span,
           {e.kind == K::Colon ? "':' is only allowed as a subscript"
                               : "'end' is only allowed inside subscripts"});
  }
  fail(DiagKind::unsupported, e.span, {"this expression"});
}

Value Flattener::eval_call(const ast::Expr& e, Scope s) {
  std::string name = e.ref.back().name;
  std::string full;
  for (size_t i = 0; i < e.ref.size(); ++i) full += (i ? "." : "") + e.ref[i].name;
  auto nargs = e.args.size();
  auto need = [&](size_t lo, size_t hi) {
    if (nargs < lo || nargs > hi)
      fail(
          DiagKind::bad_call, e.span,
          {lo == hi ? fmt::format("'{}' takes {} argument(s), {} given", full, lo, nargs)
                    : fmt::format("'{}' takes {} to {} arguments, {} given", full, lo, hi, nargs)});
  };
  auto arg = [&](size_t i) { return eval(*e.args[i], s); };
  auto map1 = [&](Value v, auto f) {
    if (v.is_string) fail(DiagKind::type_error, e.span, {"'" + full + "' of a string"});
    for (auto& x : v.elems) x = f(x);
    v.type = ScalarType::Real;
    return v;
  };
  if (const ClassEntry* fn = user_function(e, s)) return call_function(e, s, fn).front();
  for (size_t i = 0; i < e.arg_names.size(); ++i) {
    if (e.arg_names[i].empty()) continue;
    diags_.report(DiagKind::unsupported, e.arg_spans[i],
                  {"the named argument '" + e.arg_names[i] + " = ...'"});
    diags_.help("only functions declared with 'function' take named arguments");
    throw BuildError{};
  }
  static const std::map<std::string, sym::Op> unary = {
      {"sin", sym::Op::Sin},   {"cos", sym::Op::Cos},   {"tan", sym::Op::Tan},
      {"asin", sym::Op::Asin}, {"acos", sym::Op::Acos}, {"atan", sym::Op::Atan},
      {"sinh", sym::Op::Sinh}, {"cosh", sym::Op::Cosh}, {"tanh", sym::Op::Tanh},
      {"exp", sym::Op::Exp},   {"log", sym::Op::Log},   {"log10", sym::Op::Log10},
      {"sqrt", sym::Op::Sqrt}, {"abs", sym::Op::Abs},   {"sign", sym::Op::Sign}};
  if (auto it = unary.find(name); it != unary.end()) {
    need(1, 1);
    sym::Op op = it->second;
    Value v = map1(arg(0), [&](Expr x) { return cx_.unary(op, x); });
    return v;
  }
  if (name == "der") {
    need(1, 1);
    if (s.frame) {
      diags_.report(DiagKind::der_in_function, e.ref.front().span, {s.frame->fn->full_name});
      diags_.help("a function maps its inputs to its outputs; pass the derivative as an input");
      throw BuildError{};
    }
    return map1(arg(0), [&](Expr x) {
      for (uint32_t sy : sym::free_symbols(x))
        if (auto it = flat_.var_of_symbol.find(sy);
            it != flat_.var_of_symbol.end() && flat_.vars[it->second].role == VarRole::Input) {
          diags_.report(DiagKind::input_differentiated, e.span, {flat_.vars[it->second].name});
          diags_.note(flat_.vars[it->second].span, "declared as an input of the model here");
          diags_.help(
              "an input is held constant over a step, so its time derivative is unknown; "
              "declare its derivative as an input of its own");
          throw BuildError{};
        }
      return ders_.total_derivative(x);
    });
  }
  if ((name == "initial" || name == "terminal") && e.ref.size() == 1) {
    // 1.0 at the event of the start (the end), 0.0 otherwise: only a when-condition can see it
    need(0, 0);
    if (!when_condition_ || s.frame) {
      diags_.report(DiagKind::unsupported, e.span,
                    {"the event operator " + name + "() outside the condition of a when-equation"});
      diags_.help(
          name == "initial"
              ? "write 'when initial() then ... end when;' for assignments at the start, or "
                "an 'initial equation' section (docs/language.md, \"Initial equations\")"
              : "write 'when terminal() then ... end when;' for assignments at the end");
      throw BuildError{};
    }
    int64_t& sy = name == "initial" ? flat_.initial_symbol : flat_.terminal_symbol;
    if (sy < 0) {
      sy = cx_.new_symbol(name + "()");
      ders_.set_constant(static_cast<uint32_t>(sy));
    }
    return Value::of(cx_.symbol(static_cast<uint32_t>(sy)));
  }
  if (name == "sample" && e.ref.size() == 1) {
    // sample(start, interval): true at the event of each instant start + i interval (i >= 0)
    need(2, 2);
    if (!when_condition_ || s.frame) {
      diags_.report(DiagKind::unsupported, e.span,
                    {"the event operator sample() outside the condition of a when-equation"});
      diags_.help("write 'when sample(start, interval) then ... end when;'");
      throw BuildError{};
    }
    Expr start = scalar_of(arg(0), e.args[0]->span, "the start of sample(start, interval)");
    Expr interval = scalar_of(arg(1), e.args[1]->span, "the interval of sample(start, interval)");
    for (size_t i = 0; i < 2; ++i)
      if (varies_in_time(i == 0 ? start : interval))
        fail(DiagKind::bad_call, e.args[i]->span,
             {fmt::format("the {} of sample(start, interval) must not change in time: '{}' does "
                          "(write an expression of parameters)",
                          i == 0 ? "start" : "interval", expr_to_string(*e.args[i]))});
    // The compiler needs the interval as a number (a parameter in it is used at compile time:
    // --set recompiles): one that is not positive never ticked, one below the time axis's
    // resolution ticked twice and then never (issue 36).
    const double T =
        structural(interval, e.args[1]->span, "the interval of sample(start, interval)");
    const double t0 = start->is_const() ? std::fabs(start->value) : 0.0;
    if (!(T > 0.0))
      fail(DiagKind::bad_call, e.args[1]->span,
           {fmt::format("the interval of sample(start, interval) must be positive, not {}", T)});
    const double resolution = 64 * std::numeric_limits<double>::epsilon() * std::max(1.0, t0);
    if (T < resolution)
      fail(DiagKind::bad_call, e.args[1]->span,
           {fmt::format("the interval of sample(start, interval), {:g}, is below the resolution "
                        "of the time axis ({:.3g} at t = {:g}): its instants cannot be told apart",
                        T, resolution, std::max(1.0, t0))});
    return Value::of(sample_trigger(start, cx_.num(T), e.span), ScalarType::Boolean);
  }
  if (name == "pre" || name == "edge" || name == "change") {
    // pre(x): x just before the event (of a continuous x: x itself inside a when, where every
    // value is taken before the event's changes); edge(b) = b and not pre(b); change(x) =
    // x <> pre(x). Which variables are discrete is known at the end (finish_discrete).
    need(1, 1);
    if (s.frame) {
      diags_.report(
          DiagKind::unsupported, e.ref.front().span,
          {"the event operator " + name + "() inside function '" + s.frame->fn->full_name + "'"});
      diags_.help("a function maps its inputs to its outputs; pass " + name + "(x) as an input");
      throw BuildError{};
    }
    Value x = arg(0);
    Value out = x;
    out.type = name == "pre" ? x.type : ScalarType::Boolean;
    for (size_t i = 0; i < x.size(); ++i) {
      const Expr xe = x.elems[i];
      const auto it =
          xe->is_symbol() ? flat_.var_of_symbol.find(xe->symbol) : flat_.var_of_symbol.end();
      const bool variable =
          it != flat_.var_of_symbol.end() && (flat_.vars[it->second].role == VarRole::Variable ||
                                              flat_.vars[it->second].role == VarRole::Discrete);
      if (!variable)
        fail(DiagKind::event_operator_argument, e.args[0]->span,
             {name,
              it == flat_.var_of_symbol.end()
                  ? "'" + expr_to_string(*e.args[0]) + "' is not a variable"
                  : "'" + flat_.vars[it->second].name + "' is a parameter, constant or input"});
      const uint32_t p = pre_symbol_of(xe->symbol);
      pre_uses_.push_back({xe->symbol, name, e.span, when_body_ != nullptr || when_condition_});
      const Expr pe = cx_.symbol(p);
      out.elems[i] = name == "pre"    ? pe
                     : name == "edge" ? cx_.binary(sym::Op::And, xe, cx_.unary(sym::Op::Not, pe))
                                      : cx_.binary(sym::Op::Ne, xe, pe);
    }
    return out;
  }
  if (name == "noEvent" || name == "smooth" || name == "homotopy") {
    // the switches inside do not stop the solvers, and floor() & co. inside are plain functions
    const auto quiet = [&](size_t i) {
      ++no_event_depth_;
      try {
        Value v = arg(i);
        --no_event_depth_;
        return v;
      } catch (...) {
        --no_event_depth_;
        throw;
      }
    };
    if (name == "smooth") {  // smooth(p, e): e is p times differentiable: no switch events
      need(2, 2);
      Value v = quiet(1);
      flat_.no_event.insert(flat_.no_event.end(), v.elems.begin(), v.elems.end());
      return v;
    }
    need(1, 2);
    Value v = name == "noEvent" ? quiet(0) : arg(0);
    if (name == "noEvent")
      flat_.no_event.insert(flat_.no_event.end(), v.elems.begin(), v.elems.end());
    return v;
  }
  if (name == "floor" || name == "ceil" || name == "integer") {
    // piecewise constant: where the argument varies in time, the value changes at events
    need(1, 1);
    Value v = arg(0);
    if (v.is_string) fail(DiagKind::type_error, e.span, {"'" + full + "' of a string"});
    for (Expr& x : v.elems)
      x = name == "ceil" ? cx_.neg(event_floor(cx_.neg(x), s, e.span)) : event_floor(x, s, e.span);
    v.type = name == "integer" ? ScalarType::Integer : ScalarType::Real;
    return v;
  }
  if (name == "div" || name == "mod" || name == "rem") {
    // div(x, y): x / y truncated toward zero; mod(x, y) = x - floor(x / y) y;
    // rem(x, y) = x - div(x, y) y (Modelica's definitions)
    need(2, 2);
    const Value a = arg(0), b = arg(1);
    Expr x = scalar_of(a, e.args[0]->span, ("an argument of " + name).c_str());
    Expr y = scalar_of(b, e.args[1]->span, ("an argument of " + name).c_str());
    Expr q = cx_.div(x, y);
    Expr d = name == "mod" ? nullptr : event_floor(q, s, e.span, true);
    const bool integers = a.type == ScalarType::Integer && b.type == ScalarType::Integer;
    const ScalarType type = integers ? ScalarType::Integer : ScalarType::Real;
    if (name == "div") return Value::of(d, type);
    if (name == "mod") return Value::of(cx_.sub(x, cx_.mul(event_floor(q, s, e.span), y)), type);
    return Value::of(cx_.sub(x, cx_.mul(d, y)), type);
  }
  if (name == "atan2") {
    need(2, 2);
    Expr y = scalar_of(arg(0), e.args[0]->span, "an argument of atan2");
    Expr x = scalar_of(arg(1), e.args[1]->span, "an argument of atan2");
    return Value::of(cx_.binary(sym::Op::Atan2, y, x));
  }
  if (name == "hypot") {
    // sqrt(x^2 + y^2): the DAG differentiates it exactly, d = (x dx + y dy)/hypot(x, y)
    need(2, 2);
    Expr x = scalar_of(arg(0), e.args[0]->span, "an argument of hypot");
    Expr y = scalar_of(arg(1), e.args[1]->span, "an argument of hypot");
    Expr two = cx_.num(2.0);
    return Value::of(cx_.unary(sym::Op::Sqrt, cx_.add(cx_.pow(x, two), cx_.pow(y, two))));
  }
  if (name == "min" || name == "max") {
    sym::Op op = name == "min" ? sym::Op::Min : sym::Op::Max;
    if (nargs == 2) {
      Expr a = scalar_of(arg(0), e.args[0]->span, "an argument of min/max");
      Expr b = scalar_of(arg(1), e.args[1]->span, "an argument of min/max");
      return Value::of(cx_.binary(op, a, b));
    }
    need(1, 1);
    Value v = arg(0);
    if (v.elems.empty()) fail(DiagKind::bad_call, e.span, {"'" + name + "' of an empty array"});
    Expr r = v.elems[0];
    for (size_t i = 1; i < v.size(); ++i) r = cx_.binary(op, r, v.elems[i]);
    return Value::of(r, v.type);
  }
  if (name == "size") {
    need(1, 2);
    Value v = arg(0);
    if (nargs == 2) {
      long d = structural_int(arg(1), e.args[1]->span, "the dimension of size()");
      if (d < 1 || d > static_cast<long>(v.shape.size()))
        fail(DiagKind::bad_call, e.span,
             {fmt::format("size(a, {}): a has {} dimension(s)", d, v.shape.size())});
      return Value::of(cx_.num(v.shape[d - 1]), ScalarType::Integer);
    }
    Value r;
    r.type = ScalarType::Integer;
    r.shape = {static_cast<int>(v.shape.size())};
    for (int n : v.shape) r.elems.push_back(cx_.num(n));
    return r;
  }
  if (name == "ndims") {
    need(1, 1);
    return Value::of(cx_.num(static_cast<double>(arg(0).shape.size())), ScalarType::Integer);
  }
  if (name == "zeros" || name == "ones" || name == "fill") {
    size_t first = name == "fill" ? 1 : 0;
    if (nargs < first + 1) need(first + 1, 8);
    Value r;
    Expr val = name == "zeros" ? cx_.num(0) : name == "ones" ? cx_.num(1) : nullptr;
    r.type = ScalarType::Integer;
    if (name == "fill") {
      Value f = arg(0);
      val = scalar_of(f, e.args[0]->span, "the fill value");
      r.type = f.type;
    }
    size_t count = 1;
    for (size_t i = first; i < nargs; ++i) {
      long n = structural_int(arg(i), e.args[i]->span, "an array size");
      if (n < 0) fail(DiagKind::bad_call, e.args[i]->span, {"negative array size"});
      check_elements(static_cast<double>(count) * static_cast<double>(n), e.span);
      r.shape.push_back(static_cast<int>(n));
      count *= static_cast<size_t>(n);
    }
    r.elems.assign(count, val);
    return r;
  }
  if (name == "identity") {
    need(1, 1);
    long n = structural_int(arg(0), e.args[0]->span, "the size of identity()");
    check_elements(static_cast<double>(n) * static_cast<double>(n), e.span);
    Value r;
    r.type = ScalarType::Integer;
    r.shape = {static_cast<int>(n), static_cast<int>(n)};
    for (long i = 0; i < n; ++i)
      for (long j = 0; j < n; ++j) r.elems.push_back(cx_.num(i == j ? 1 : 0));
    return r;
  }
  if (name == "diagonal" || name == "diag") {
    need(1, 1);
    Value v = arg(0);
    if (v.shape.size() != 1) fail(DiagKind::bad_call, e.span, {"'" + name + "' needs a vector"});
    int n = v.shape[0];
    Value r;
    r.type = v.type;
    r.shape = {n, n};
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) r.elems.push_back(i == j ? v.elems[i] : cx_.num(0));
    return r;
  }
  if (name == "transpose") {
    need(1, 1);
    Value v = arg(0);
    if (v.shape.size() != 2) fail(DiagKind::bad_call, e.span, {"'transpose' needs a matrix"});
    Value r;
    r.type = v.type;
    int m = v.shape[0], n = v.shape[1];
    r.shape = {n, m};
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) r.elems.push_back(v.elems[i * n + j]);
    return r;
  }
  if (name == "sum" || name == "product") {
    need(1, 1);
    Value v = arg(0);
    Expr r = name == "sum" ? cx_.add(std::span<const Expr>(v.elems))
                           : cx_.mul(std::span<const Expr>(v.elems));
    return Value::of(r, v.type);
  }
  if (name == "cross") {
    need(2, 2);
    Value a = arg(0), b = arg(1);
    if (a.shape != std::vector<int>{3} || b.shape != std::vector<int>{3})
      fail(DiagKind::bad_call, e.span, {"'cross' needs two vectors of size 3"});
    auto& x = a.elems;
    auto& y = b.elems;
    Value r;
    r.shape = {3};
    r.elems = {cx_.sub(cx_.mul(x[1], y[2]), cx_.mul(x[2], y[1])),
               cx_.sub(cx_.mul(x[2], y[0]), cx_.mul(x[0], y[2])),
               cx_.sub(cx_.mul(x[0], y[1]), cx_.mul(x[1], y[0]))};
    return r;
  }
  if (name == "skew") {
    need(1, 1);
    Value a = arg(0);
    if (a.shape != std::vector<int>{3})
      fail(DiagKind::bad_call, e.span, {"'skew' needs a vector of size 3"});
    auto& x = a.elems;
    Value r;
    r.shape = {3, 3};
    Expr z = cx_.num(0);
    r.elems = {z, cx_.neg(x[2]), x[1], x[2], z, cx_.neg(x[0]), cx_.neg(x[1]), x[0], z};
    return r;
  }
  if (name == "outerProduct") {
    need(2, 2);
    Value a = arg(0), b = arg(1);
    if (a.shape.size() != 1 || b.shape.size() != 1)
      fail(DiagKind::bad_call, e.span, {"'outerProduct' needs two vectors"});
    Value r;
    r.shape = {a.shape[0], b.shape[0]};
    for (Expr x : a.elems)
      for (Expr y : b.elems) r.elems.push_back(cx_.mul(x, y));
    return r;
  }
  if (name == "norm") {
    need(1, 1);
    Value a = arg(0);
    std::vector<Expr> sq;
    for (Expr x : a.elems) sq.push_back(cx_.mul(x, x));
    return Value::of(cx_.unary(sym::Op::Sqrt, cx_.add(std::span<const Expr>(sq))));
  }
  if (name == "scalar") {
    need(1, 1);
    Value a = arg(0);
    if (a.size() != 1)
      fail(DiagKind::bad_call, e.span, {"'scalar' needs an array with one element"});
    a.shape.clear();
    return a;
  }
  if (name == "vector") {
    need(1, 1);
    Value a = arg(0);
    a.shape = {static_cast<int>(a.size())};
    return a;
  }
  if (name == "linspace") {
    need(3, 3);
    double x1 = structural(scalar_of(arg(0), e.span, "linspace start"), e.span, "linspace start");
    double x2 = structural(scalar_of(arg(1), e.span, "linspace end"), e.span, "linspace end");
    long n = structural_int(arg(2), e.span, "linspace count");
    if (n < 2) fail(DiagKind::bad_call, e.span, {"linspace needs at least 2 points"});
    check_elements(static_cast<double>(n), e.span);
    Value r;
    r.shape = {static_cast<int>(n)};
    for (long i = 0; i < n; ++i) r.elems.push_back(cx_.num(x1 + (x2 - x1) * i / (n - 1)));
    return r;
  }
  diags_.report(DiagKind::unknown_function, e.ref.front().span, {full});
  help_did_you_mean(name, function_names());
  throw BuildError{};
}

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
  const ClassEntry* from = s.frame ? s.frame->fn : s.inst && s.inst->cls ? s.inst->cls : nullptr;
  const ClassEntry* c = lookup_class(full, from, call.ref.front().span);
  if (!c) return nullptr;
  if (c->def->kind != ast::ClassKind::Function) {
    diags_.report(
        DiagKind::bad_call, call.ref.front().span,
        {fmt::format("'{}' is a {}, not a function", full, ast::class_kind_name(c->def->kind))});
    diags_.note(c->def->span, fmt::format("'{}' is declared here", full));
    throw BuildError{};
  }
  return c;
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
  if (!def.extends.empty())
    fail(DiagKind::unsupported, def.extends.front().span, {"'extends' in a function"});
  if (!def.equations.empty())
    fail(DiagKind::unsupported, def.equations.front().span, {"an equation section in a function"});
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

  // match the arguments to the inputs: positional ones first, then by name
  std::vector<const ast::Expr*> given(inputs.size(), nullptr);
  size_t positional = 0;
  for (size_t i = 0; i < call.args.size(); ++i) {
    const bool named = i < call.arg_names.size() && !call.arg_names[i].empty();
    if (!named) {
      if (positional != i)
        fail(DiagKind::bad_call, call.args[i]->span,
             {"a positional argument cannot follow a named one"});
      if (i >= inputs.size())
        fail(DiagKind::bad_call, call.span,
             {fmt::format("function '{}' takes {} argument(s), {} given", fname, inputs.size(),
                          call.args.size())});
      given[i] = call.args[i].get();
      ++positional;
      continue;
    }
    const std::string& n = call.arg_names[i];
    size_t k = 0;
    while (k < inputs.size() && inputs[k]->name != n) ++k;
    if (k == inputs.size()) {
      diags_.report(DiagKind::unknown_argument, call.arg_spans[i], {fname, n});
      std::vector<std::string> names;
      for (const auto* in : inputs) names.push_back(in->name);
      help_did_you_mean(n, names);
      throw BuildError{};
    }
    if (given[k])
      fail(DiagKind::bad_call, call.arg_spans[i],
           {fmt::format("input '{}' of '{}' is given twice", n, fname)});
    given[k] = call.args[i].get();
  }
  std::vector<std::optional<Value>> args(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k)
    if (given[k]) args[k] = eval(*given[k], s);

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
  for (const auto& c : def.components) {
    FunctionFrame::Local l;
    l.decl = &c;
    if (c.type_name == "Real")
      l.type = ScalarType::Real;
    else if (c.type_name == "Integer")
      l.type = ScalarType::Integer;
    else if (c.type_name == "Boolean")
      l.type = ScalarType::Boolean;
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
    if (v.is_string || v.shape.size() != l.dims.size()) return false;
    for (size_t d = 0; d < l.dims.size(); ++d)
      if (l.dims[d] >= 0 && l.dims[d] != v.shape[d]) return false;
    if (l.type == ScalarType::Boolean) return v.type == ScalarType::Boolean;
    if (v.type == ScalarType::Boolean) return false;
    return l.type == ScalarType::Real || v.type == ScalarType::Integer;
  };
  auto declared = [&](const FunctionFrame::Local& l) {
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
      v = eval(*inputs[k]->mod->value, fs);
      where = inputs[k]->mod->value->span;
    } else {
      diags_.report(DiagKind::bad_call, call.span,
                    {fmt::format("input '{}' of '{}' has no value", inputs[k]->name, fname)});
      diags_.note(inputs[k]->span, "declared here without a default");
      throw BuildError{};
    }
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
      assign(target, eval(*c.mod->value, fs), frame, nullptr);
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

void Flattener::exec(const ast::StatementList& list, FunctionFrame& f, const Iterators* iters) {
  for (const auto& st : list) {
    if (is_one(f.returned)) return;
    exec_statement(st, f, iters);
  }
}

void Flattener::exec_statement(const ast::Statement& st, FunctionFrame& f, const Iterators* iters) {
  Scope fs{nullptr, iters, &f};
  // unrolled loops multiply: bound the total work like comprehensions and reductions
  if (++iterations_ > 10 * options_.max_instances)
    fail(DiagKind::unsupported, st.span,
         {fmt::format("executing the statements of functions more than {} times in one model",
                      10 * options_.max_instances)});
  switch (st.kind) {
    case ast::StatementKind::Assign:
      assign(*st.target, eval(*st.value, fs), f, iters);
      return;
    case ast::StatementKind::MultiAssign: {
      const ClassEntry* fn =
          st.value->kind == ast::ExprKind::Call ? user_function(*st.value, fs) : nullptr;
      if (!fn)
        fail(DiagKind::bad_call, st.value->span,
             {"the right side of '(...) := ...' must be a call of a user-defined function"});
      std::vector<Value> outs = call_function(*st.value, fs, fn);
      if (st.targets.size() > outs.size())
        fail(DiagKind::bad_call, st.span,
             {fmt::format("function '{}' has {} output(s), {} are assigned", fn->full_name,
                          outs.size(), st.targets.size())});
      for (size_t i = 0; i < st.targets.size(); ++i)
        if (st.targets[i]) assign(*st.targets[i], std::move(outs[i]), f, iters);
      return;
    }
    case ast::StatementKind::Return:
      check_outputs_assigned(f, st.span, " when the function returns here");
      f.returned = cx_.one();
      return;
    case ast::StatementKind::If:
      exec_if(st, 0, f, iters);
      return;
    case ast::StatementKind::For: {
      std::function<void(size_t, const Iterators*)> loop = [&](size_t k, const Iterators* outer) {
        if (k == st.indices.size()) {
          exec(st.body, f, outer);
          return;
        }
        const auto& ix = st.indices[k];
        Value range = eval(*ix.range, Scope{nullptr, outer, &f});
        if (range.is_string || range.shape.size() != 1)
          fail(DiagKind::shape_mismatch, ix.range->span, {"a for-loop range must be a vector"});
        // unrolled loops multiply: refuse a nest whose sizes go beyond the limit at its start
        const auto count = static_cast<double>(range.elems.size());
        check_projected_work(count, st.span, "executing the statements of functions");
        const double outer_pending = pending_iterations_;
        const PendingGuard restore{pending_iterations_};
        double done = 0.0;
        for (Expr x : range.elems) {
          pending_iterations_ = outer_pending * (count - done);
          done += 1.0;
          if (is_one(f.returned)) return;
          x = cx_.num(structural(x, ix.range->span, "the range of loop index '" + ix.name + "'"));
          Iterators it{outer, ix.name, Value::of(x, range.type)};
          loop(k + 1, &it);
        }
      };
      loop(0, iters);
      return;
    }
    case ast::StatementKind::While: {
      const ast::Expr& cond = *st.conditions[0];
      for (int n = 0;; ++n) {
        if (is_one(f.returned)) return;
        Expr c = scalar_of(eval(cond, fs), cond.span, "a while condition");
        if (!c->is_const()) {
          diags_.report(DiagKind::not_structural, cond.span, {"the condition of a while loop"});
          diags_.help(
              "while loops are unrolled while compiling, so their condition may depend on "
              "constants, parameters and loop indices only");
          throw BuildError{};
        }
        if (c->value == 0.0) return;
        if (n == kMaxWhileIterations) {
          diags_.report(DiagKind::while_limit, st.span, {std::to_string(kMaxWhileIterations)});
          diags_.help(
              "a while loop is unrolled while compiling; does its condition ever become false?");
          throw BuildError{};
        }
        exec(st.body, f, iters);
      }
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
  Expr c = scalar_of(eval(ce, Scope{nullptr, iters, &f}), ce.span, "an if condition");
  if (c->is_const()) {
    if (c->value != 0.0)
      exec(st.branches[branch], f, iters);
    else
      exec_if(st, branch + 1, f, iters);
    return;
  }
  FunctionFrame saved = f;
  exec(st.branches[branch], f, iters);
  FunctionFrame taken = std::move(f);
  f = std::move(saved);
  exec_if(st, branch + 1, f, iters);
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
}

void Flattener::assign(const ast::Expr& target, Value v, FunctionFrame& f, const Iterators* iters) {
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
  if (parts.size() > 1) fail(DiagKind::unknown_member, parts[1].span, {name, parts[1].name});
  FunctionFrame::Local& l = it->second;
  if (l.decl->causality == ast::Causality::Input) {
    diags_.report(DiagKind::assign_to_input, target.span, {name, f.fn->full_name});
    diags_.note(l.decl->span, "declared as an input here");
    diags_.help("assign a copy: declare 'protected Real " + name + "2 = " + name + ";'");
    throw BuildError{};
  }
  if (v.is_string) fail(DiagKind::type_error, target.span, {"strings cannot be assigned"});
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
      slot = f.returned->is_const() ? v.elems[0] : cx_.select(f.returned, slot, v.elems[0]);
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
  // paths that have already returned keep the old value
  if (!f.returned->is_const() && l.has_value && l.value.shape == next.shape)
    for (size_t k = 0; k < next.elems.size(); ++k)
      next.elems[k] = cx_.select(f.returned, l.value.elems[k], next.elems[k]);
  l.value = std::move(next);
  l.has_value = true;
  l.defined = true;  // an element assignment leaves the other elements at 0
}

// ------------------------------------------------------------------------------------------------
// Elaboration

// The values of the iterators of a comprehension or a reduction, each a vector known at compile
// time (its parameters become compile-time), evaluated in the scope that encloses the expression.
std::vector<Value> Flattener::iterator_ranges(const ast::Expr& e, Scope s) {
  std::vector<Value> ranges;
  for (const auto& ix : e.iterators) {
    if (Instance* hidden = s.inst ? s.inst->member(ix.name) : nullptr) {
      diags_.report(DiagKind::iterator_shadows, ix.span, {ix.name});
      if (hidden->span.valid())
        diags_.note(hidden->span, fmt::format("'{}' is declared here", ix.name));
      diags_.help("rename the iterator");
      throw BuildError{};
    }
    if (!ix.range) fail(DiagKind::unsupported, ix.span, {"an iterator without a range"});
    Value r = eval(*ix.range, s);
    if (r.is_string || r.shape.size() != 1)
      fail(DiagKind::shape_mismatch, ix.range->span,
           {fmt::format("the range of iterator '{}' must be a vector, found {}", ix.name,
                        r.is_string ? std::string("a string") : shape_str(r.shape))});
    for (Expr& x : r.elems)
      x = cx_.num(structural(x, ix.range->span, "the range of iterator '" + ix.name + "'"));
    ranges.push_back(std::move(r));
  }
  return ranges;
}

void Flattener::check_projected_work(double count, Span span, const char* what) {
  const double limit = 10.0 * static_cast<double>(options_.max_instances);
  const double projected = static_cast<double>(iterations_) + count * pending_iterations_;
  if (projected > limit)
    fail(DiagKind::unsupported, span,
         {fmt::format("{} more than {} times in one model (this loop of {} iterations, within "
                      "loops of {} more, would make it {:.3g})",
                      what, 10 * options_.max_instances, count, pending_iterations_, projected)});
}

// Evaluates the body of `e` once for every combination of its iterators' values. Modelica
// expands `{b for i in A, j in B}` to `{{b for i in A} for j in B}`: the last iterator is the
// outermost loop, so the first one varies fastest. Returns the sizes of the ranges in that
// order (the last iterator's first): the leading dimensions of a comprehension.
std::vector<int> Flattener::iterate(const ast::Expr& e, Scope s,
                                    const std::function<void(const Value&)>& each) {
  if (e.filter && e.kind == ast::ExprKind::Comprehension && e.iterators.size() > 1) {
    // the rows would have different lengths
    diags_.report(DiagKind::unsupported, e.filter->span,
                  {"a filter in an array comprehension with several iterators"});
    diags_.help("nest the comprehensions: {{e for i in A if c} for j in B}");
    throw BuildError{};
  }
  std::vector<Value> ranges = iterator_ranges(e, s);
  double count = 1.0;
  for (const Value& r : ranges) count *= static_cast<double>(r.size());
  check_projected_work(count, e.span, "evaluating comprehensions and reductions");
  const double outer_pending = pending_iterations_;
  double done = 0.0;
  std::function<void(size_t, const Iterators*)> loop = [&](size_t k, const Iterators* outer) {
    if (k == 0) {
      pending_iterations_ = outer_pending * (count - done);  // this one and those still to come
      done += 1.0;
      // nested comprehensions and reductions multiply their ranges: bound the total work
      if (++iterations_ > 10 * options_.max_instances)
        fail(
            DiagKind::unsupported, e.span,
            {fmt::format("evaluating comprehensions and reductions more than {} times in one model",
                         10 * options_.max_instances)});
      if (e.filter) {
        Value c = eval(*e.filter, s.with(outer));
        if (structural(scalar_of(c, e.filter->span, "a filter"), e.filter->span,
                       "the filter of an iterator") == 0.0)
          return;
      }
      each(eval(*e.args[0], s.with(outer)));
      return;
    }
    const Value& range = ranges[k - 1];
    for (Expr x : range.elems) {
      Iterators it{outer, e.iterators[k - 1].name, Value::of(x, range.type)};
      loop(k - 1, &it);
    }
  };
  {
    const PendingGuard restore{pending_iterations_};
    loop(ranges.size(), s.iters);
  }
  std::vector<int> sizes;
  for (size_t k = ranges.size(); k-- > 0;) sizes.push_back(static_cast<int>(ranges[k].size()));
  return sizes;
}

Value Flattener::eval_comprehension(const ast::Expr& e, Scope s) {
  Value r;
  r.type = ScalarType::Integer;
  std::vector<int> inner;
  size_t count = 0;
  std::vector<int> sizes = iterate(e, s, [&](const Value& v) {
    if (v.is_string)
      fail(DiagKind::type_error, e.args[0]->span, {"arrays of strings are not supported"});
    if (count == 0) {
      inner = v.shape;
      if (v.type == ScalarType::Boolean) r.type = ScalarType::Boolean;
    } else if (v.shape != inner) {
      fail(DiagKind::shape_mismatch, e.args[0]->span,
           {fmt::format("the elements of the comprehension have different shapes {} and {}",
                        shape_str(inner), shape_str(v.shape))});
    }
    if (v.type == ScalarType::Real) r.type = ScalarType::Real;
    check_elements(static_cast<double>(r.elems.size() + v.size()), e.span);
    r.elems.insert(r.elems.end(), v.elems.begin(), v.elems.end());
    ++count;
  });
  r.shape = e.filter ? std::vector<int>{static_cast<int>(count)} : std::move(sizes);
  r.shape.insert(r.shape.end(), inner.begin(), inner.end());
  return r;
}

// sum, product, min or max of a scalar body over every combination of the iterators' values.
Value Flattener::eval_reduction(const ast::Expr& e, Scope s) {
  std::string name;
  for (size_t i = 0; i < e.ref.size(); ++i) name += (i ? "." : "") + e.ref[i].name;
  if (name != "sum" && name != "product" && name != "min" && name != "max") {
    diags_.report(DiagKind::unsupported, e.span, {"the reduction '" + name + "(... for ...)'"});
    diags_.help("the reductions over iterators are sum, product, min and max");
    throw BuildError{};
  }
  std::vector<Expr> terms;
  ScalarType type = ScalarType::Integer;
  iterate(e, s, [&](const Value& v) {
    if (!v.scalar())
      fail(DiagKind::reduction_not_scalar, e.args[0]->span,
           {name, v.is_string ? std::string("a string") : "shape " + shape_str(v.shape)});
    if (v.type != ScalarType::Integer) type = ScalarType::Real;
    terms.push_back(v.elems[0]);
  });
  if (name == "sum")
    return Value::of(terms.empty() ? cx_.num(0.0) : cx_.add(std::span<const Expr>(terms)), type);
  if (name == "product")
    return Value::of(terms.empty() ? cx_.num(1.0) : cx_.mul(std::span<const Expr>(terms)), type);
  if (terms.empty()) {
    diags_.report(DiagKind::empty_reduction, e.span, {name});
    diags_.help("'" + name +
                "' needs at least one value (a sum of nothing is 0, a product of nothing is 1)");
    throw BuildError{};
  }
  sym::Op op = name == "min" ? sym::Op::Min : sym::Op::Max;
  Expr r = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) r = cx_.binary(op, r, terms[i]);
  return Value::of(r, type);
}

std::string Flattener::source_text(Span span) const {
  if (!span.valid()) return {};
  std::string out;
  for (uint32_t l = span.line; l <= std::max(span.line, span.end_line); ++l) {
    std::string_view t = sources_.line_text(span.file, l);
    size_t from = l == span.line ? span.col - 1 : 0;
    size_t to = (l == span.end_line && span.end_col >= 1) ? span.end_col : t.size();
    if (from > t.size()) from = t.size();
    if (to > t.size()) to = t.size();
    if (to < from) to = from;
    if (!out.empty()) out += ' ';
    out += std::string(t.substr(from, to - from));
    if (l - span.line > 20) break;
  }
  // collapse whitespace runs
  std::string r;
  bool ws = false;
  for (char c : out) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ws = true;
      continue;
    }
    if (ws && !r.empty()) r += ' ';
    ws = false;
    r += c;
  }
  if (!r.empty() && r.back() == ';') r.pop_back();
  return r;
}

void Flattener::elaborate_scalar(Instance& inst) {
  FlatVar& fv = flat_.vars[inst.var];
  const ModEntry& m = inst.mod;
  auto attr = [&](const char* name) -> const ModEntry* {
    auto it = m.sub.find(name);
    if (it == m.sub.end() || !it->second.value) return nullptr;
    return &it->second;
  };
  if (auto ov = options_.start_overrides.find(fv.name);
      ov != options_.start_overrides.end() &&
      (fv.role == VarRole::Variable || fv.role == VarRole::Discrete)) {
    // --start NAME=VALUE replaces the model's start value (its span stays for messages)
    const ModEntry* a = attr("start");
    flat_.vars[inst.var].start = cx_.num(ov->second);
    flat_.vars[inst.var].start_span = a ? a->value->span : fv.span;
    start_overrides_used_[fv.name] = true;
  } else if (const ModEntry* a = attr("start")) {
    Value v = eval_mod_value(*a);
    flat_.vars[inst.var].start = scalar_of(v, a->value->span, "a start value");
    flat_.vars[inst.var].start_span = a->value->span;
  }
  if (const ModEntry* a = attr("fixed")) {
    Value v = eval_mod_value(*a);
    double f = structural(scalar_of(v, a->value->span, "'fixed'"), a->value->span, "'fixed'");
    flat_.vars[inst.var].fixed = f != 0.0;
    flat_.vars[inst.var].fixed_given = true;
  }
  for (const char* bound : {"min", "max"}) {
    if (const ModEntry* a = attr(bound)) {
      Value v = eval_mod_value(*a);
      Expr e = scalar_of(v, a->value->span, bound[1] == 'i' ? "'min'" : "'max'");
      FlatVar& f = flat_.vars[inst.var];
      (bound[1] == 'i' ? f.min : f.max) = e;
      (bound[1] == 'i' ? f.min_span : f.max_span) = a->value->span;
    }
  }
  if (const ModEntry* a = attr("unit")) {
    Value v = eval_mod_value(*a);
    if (!v.is_string) fail(DiagKind::attribute_type, a->value->span, {"unit", "a string"});
    flat_.vars[inst.var].unit = v.str;
  }
  if (fv.role == VarRole::Discrete && m.value)
    fail(DiagKind::unsupported, m.value->span.valid() ? m.value->span : fv.span,
         {"a value binding for the discrete variable '" + fv.name +
          "' (it would never change); give it a start value, e.g. '(start = ...)'"});
  if (fv.role != VarRole::Variable) {
    binding_of(inst.var, fv.span);
    return;
  }
  if (m.value) {
    // declaration equation `Real v = expr;`
    Value v = eval_mod_value(m);
    Expr rhs = scalar_of(v, m.value->span, "the value of a scalar");
    FlatEquation eq;
    eq.residual = cx_.sub(cx_.symbol(flat_.vars[inst.var].symbol), rhs);
    eq.span = m.value->span.valid() ? m.value->span : fv.span;
    eq.text = flat_.vars[inst.var].name + " = " + source_text(m.value->span);
    eq.origin = inst.parent ? inst.parent->path : "";
    flat_.equations.push_back(std::move(eq));
  }
}

void Flattener::elaborate(Instance& inst) {
  switch (inst.kind) {
    case Instance::Kind::Scalar:
      try {
        elaborate_scalar(inst);
      } catch (const BuildError&) {
        if (diags_.error_limit_reached()) throw;
      }
      return;
    case Instance::Kind::Array:
      for (auto& el : inst.elems) elaborate(*el);
      return;
    case Instance::Kind::Composite:
      for (auto& el : inst.elems) elaborate(*el);
      for (const ClassEntry* c : inst.equation_classes) {
        add_equations(c->def->equations, Scope{&inst, nullptr}, inst.path);
        if (!c->def->initial_equations.empty()) add_initial_equations(*c->def, inst);
        if (!c->def->algorithm_spans.empty() && algorithm_reported_.insert(c->def).second) {
          diags_.report(DiagKind::unsupported, c->def->algorithm_spans.front(),
                        {fmt::format("an algorithm section in {} '{}'",
                                     ast::class_kind_name(c->def->kind), c->full_name)});
          diags_.help(
              "only functions have algorithm sections so far; write the statements as "
              "equations, or move them into a function");
        }
      }
      return;
  }
}

// `initial equation` sections (docs/language.md, "Initial equations"): flattened like equations,
// into FlatModel::initial_equations; the DAE pass and the initial solve (compiler/dae/Initial)
// take them from there.
void Flattener::add_initial_equations(const ast::ClassDef& def, Instance& inst) {
  struct Section {
    Flattener& f;
    std::vector<FlatEquation> model_equations;
    explicit Section(Flattener& fl) : f(fl) {
      model_equations.swap(f.flat_.equations);
      f.initial_section_ = true;
    }
    ~Section() {
      f.initial_section_ = false;
      model_equations.swap(f.flat_.equations);  // the initial ones are in model_equations now
      for (auto& e : model_equations) f.flat_.initial_equations.push_back(std::move(e));
    }
  } section(*this);
  add_equations(def.initial_equations, Scope{&inst, nullptr}, inst.path);
}

void Flattener::add_equations(const ast::EquationList& eqs, Scope s, const std::string& origin) {
  for (const auto& eq : eqs) {
    try {
      add_equation(eq, s, origin);
    } catch (const BuildError&) {
      if (diags_.error_limit_reached()) throw;
    }
  }
}

void Flattener::add_equation(const ast::Equation& eq, Scope s, const std::string& origin) {
  if (when_body_ && eq.kind != ast::EquationKind::Call && eq.kind != ast::EquationKind::For &&
      eq.kind != ast::EquationKind::If && eq.kind != ast::EquationKind::Simple) {
    if (eq.kind == ast::EquationKind::When) fail(DiagKind::when_nested, eq.span);
    diags_.report(DiagKind::when_equation_body, eq.span,
                  {eq.kind == ast::EquationKind::Connect ? "connect" : "an equation of outputs"});
    diags_.help(
        "a when-equation assigns discrete variables (x = e) and changes states with "
        "reinit(x, e); write connections and continuous equations outside it");
    throw BuildError{};
  }
  if (initial_section_ &&
      (eq.kind == ast::EquationKind::When || eq.kind == ast::EquationKind::Connect ||
       eq.kind == ast::EquationKind::Call)) {
    diags_.report(DiagKind::initial_equation_kind, eq.span,
                  {eq.kind == ast::EquationKind::When      ? "a when-equation"
                   : eq.kind == ast::EquationKind::Connect ? "connect"
                                                           : "a call equation"});
    diags_.help(
        "an initial equation relates values at the start (a = b, for, if); connections and "
        "events belong in the 'equation' section");
    throw BuildError{};
  }
  switch (eq.kind) {
    case ast::EquationKind::When:
      add_when(eq, s, origin);
      return;
    case ast::EquationKind::Call:
      add_reinit(eq, s);
      return;
    case ast::EquationKind::Simple: {
      if (when_body_) {
        add_assignment(eq, s);
        return;
      }
      Value l = eval(*eq.lhs, s);
      Value r = eval(*eq.rhs, s);
      if (l.is_string || r.is_string)
        fail(DiagKind::type_error, eq.span, {"an equation cannot relate strings"});
      if (l.shape != r.shape)
        fail(DiagKind::shape_mismatch, eq.span,
             {fmt::format("the two sides of the equation have shapes {} and {}", shape_str(l.shape),
                          shape_str(r.shape))});
      std::string text = source_text(eq.span);
      // the input an equation would define: `u = ...`, or `... = u` with no unknown on the left
      const auto input_of = [&](Expr e) -> const FlatVar* {
        if (!e->is_symbol()) return nullptr;
        auto it = flat_.var_of_symbol.find(e->symbol);
        return it != flat_.var_of_symbol.end() && flat_.vars[it->second].role == VarRole::Input
                   ? &flat_.vars[it->second]
                   : nullptr;
      };
      const auto known = [&](Expr e) {
        for (uint32_t sy : sym::free_symbols(e)) {
          auto it = flat_.var_of_symbol.find(sy);
          if (sy != flat_.time_symbol &&
              (it == flat_.var_of_symbol.end() || flat_.vars[it->second].role == VarRole::Variable))
            return false;
        }
        return true;
      };
      for (size_t i = 0; i < l.size(); ++i) {
        const FlatVar* defined = input_of(l.elems[i]);
        if (!defined && known(l.elems[i])) defined = input_of(r.elems[i]);
        if (defined) {
          diags_.report(DiagKind::input_defined, eq.span, {defined->name});
          diags_.note(defined->span, "declared as an input of the model here");
          diags_.help("an input is a known function of time that the caller sets (--set " +
                      defined->name +
                      "=VALUE, rt::Instance::set_input, an FMU's importer); to compute it, "
                      "declare it without `input`");
          throw BuildError{};
        }
        if (l.elems[i]->is_symbol() && !initial_section_)
          continuous_lhs_.emplace(l.elems[i]->symbol, eq.span);
        FlatEquation fe;
        fe.residual = cx_.sub(l.elems[i], r.elems[i]);
        fe.span = eq.span;
        fe.text = l.size() > 1 ? fmt::format("{}  (element {})", text, i + 1) : text;
        fe.origin = origin;
        flat_.equations.push_back(std::move(fe));
      }
      return;
    }
    case ast::EquationKind::Outputs: {
      // (a, b) = f(x): one equation per named place, target - output
      const ClassEntry* fn =
          eq.rhs->kind == ast::ExprKind::Call ? user_function(*eq.rhs, s) : nullptr;
      if (!fn)
        fail(DiagKind::bad_call, eq.rhs->span,
             {"the right side of '(...) = ...' must be a call of a user-defined function"});
      std::vector<Value> outs = call_function(*eq.rhs, s, fn);
      if (eq.targets.size() > outs.size())
        fail(DiagKind::bad_call, eq.span,
             {fmt::format("function '{}' has {} output(s), {} are given", fn->full_name,
                          outs.size(), eq.targets.size())});
      std::string text = source_text(eq.span);
      for (size_t k = 0; k < eq.targets.size(); ++k) {
        if (!eq.targets[k]) continue;
        Value l = eval(*eq.targets[k], s);
        const Value& r = outs[k];
        if (l.is_string || l.shape != r.shape)
          fail(DiagKind::shape_mismatch, eq.targets[k]->span,
               {fmt::format("'{}' has shape {}, output {} of '{}' has shape {}",
                            expr_to_string(*eq.targets[k]), shape_str(l.shape), k + 1,
                            fn->full_name, shape_str(r.shape))});
        for (size_t i = 0; i < l.size(); ++i) {
          FlatEquation fe;
          fe.residual = cx_.sub(l.elems[i], r.elems[i]);
          fe.span = eq.targets[k]->span;
          fe.text = l.size() > 1 ? fmt::format("{}  (output {}, element {})", text, k + 1, i + 1)
                                 : fmt::format("{}  (output {})", text, k + 1);
          fe.origin = origin;
          flat_.equations.push_back(std::move(fe));
        }
      }
      return;
    }
    case ast::EquationKind::Connect:
      add_connect(eq, s);
      return;
    case ast::EquationKind::For: {
      std::function<void(size_t, const Iterators*)> loop = [&](size_t k, const Iterators* outer) {
        if (k == eq.indices.size()) {
          add_equations(eq.body, s.with(outer), origin);
          return;
        }
        const auto& ix = eq.indices[k];
        if (!ix.range) fail(DiagKind::unsupported, ix.span, {"a for loop without a range"});
        Value range = eval(*ix.range, s.with(outer));
        if (range.shape.size() != 1)
          fail(DiagKind::shape_mismatch, ix.range->span, {"a for-loop range must be a vector"});
        for (Expr e : range.elems) {
          Iterators it{outer, ix.name, Value::of(e, range.type)};
          loop(k + 1, &it);
        }
      };
      loop(0, s.iters);
      return;
    }
    case ast::EquationKind::If: {
      if (add_switched_if(eq, s, origin)) return;
      for (size_t i = 0; i < eq.branches.size(); ++i) {
        if (i < eq.conditions.size()) {
          Value c = eval(*eq.conditions[i], s);
          double v = structural(scalar_of(c, eq.conditions[i]->span, "an if-equation condition"),
                                eq.conditions[i]->span, "the condition of an if-equation");
          if (v == 0.0) continue;
        }
        add_equations(eq.branches[i], s, origin);
        return;
      }
      return;
    }
  }
}

// ---- when-equations (docs/language.md, "Events")

// True when e depends on time, a variable, a derivative or an input (not only on parameters).
bool Flattener::varies_in_time(Expr e) const {
  for (uint32_t sy : sym::free_symbols(e)) {
    auto it = flat_.var_of_symbol.find(sy);
    if (sy == flat_.time_symbol || static_cast<int64_t>(sy) == flat_.initial_symbol ||
        static_cast<int64_t>(sy) == flat_.terminal_symbol || ders_.integral_of(sy) >= 0 ||
        (it != flat_.var_of_symbol.end() && flat_.vars[it->second].role != VarRole::Parameter &&
         flat_.vars[it->second].role != VarRole::Constant))
      return true;
  }
  return false;
}

namespace {

// A connect or when anywhere in the equations (not allowed under a condition that changes).
const ast::Equation* connect_or_when(const ast::EquationList& eqs) {
  for (const auto& e : eqs) {
    if (e.kind == ast::EquationKind::Connect || e.kind == ast::EquationKind::When) return &e;
    if (const ast::Equation* in = connect_or_when(e.body)) return in;
    for (const auto& b : e.branches)
      if (const ast::Equation* in = connect_or_when(b)) return in;
  }
  return nullptr;
}

}  // namespace

// An if-equation whose conditions change during the simulation (they depend on time or on
// variables): every branch must give as many equations, and there must be an else branch; the
// k-th equation is select(c1, r1_k, select(c2, r2_k, ... r_else_k)). The solvers stop at each
// change of a condition (docs/solvers.md, "Events"). Returns false for an if-equation whose
// conditions are all parameter expressions (chosen at compile time).
bool Flattener::add_switched_if(const ast::Equation& eq, Scope s, const std::string& origin) {
  std::vector<Expr> conditions;
  bool switched = false;
  for (const auto& c : eq.conditions) {
    conditions.push_back(scalar_of(eval(*c, s), c->span, "an if-equation condition"));
    switched |= varies_in_time(conditions.back());
  }
  if (!switched) return false;
  if (when_body_) return add_when_if(eq, s, conditions, origin);
  if (eq.branches.size() != eq.conditions.size() + 1) {
    diags_.report(DiagKind::if_equation_unbalanced, eq.span, {"it needs an else branch"});
    diags_.help("add 'else' with as many equations as the other branches");
    throw BuildError{};
  }
  for (const auto& b : eq.branches)
    if (const ast::Equation* bad = connect_or_when(b))
      fail(DiagKind::if_equation_unbalanced, bad->span,
           {"it cannot contain a connect or a when-equation"});
  std::vector<std::vector<FlatEquation>> branch_equations;
  for (const auto& b : eq.branches) {
    std::vector<FlatEquation> saved;
    saved.swap(flat_.equations);
    try {
      add_equations(b, s, origin);
    } catch (...) {
      saved.swap(flat_.equations);
      throw;
    }
    saved.swap(flat_.equations);
    branch_equations.push_back(std::move(saved));
    if (branch_equations.back().size() != branch_equations.front().size()) {
      diags_.report(DiagKind::if_equation_unbalanced, eq.span,
                    {fmt::format("each branch needs as many equations as the others; they have "
                                 "{} and {}",
                                 branch_equations.front().size(), branch_equations.back().size())});
      throw BuildError{};
    }
  }
  const std::string text = source_text(eq.span);
  const size_t n = branch_equations.front().size();
  for (size_t k = 0; k < n; ++k) {
    Expr r = branch_equations.back()[k].residual;
    for (size_t i = conditions.size(); i-- > 0;)
      r = cx_.select(conditions[i], branch_equations[i][k].residual, r);
    FlatEquation fe;
    fe.residual = r;
    fe.span = eq.span;
    fe.text = n > 1 ? fmt::format("{}  (equation {} of each branch)", text, k + 1) : text;
    fe.origin = origin;
    flat_.equations.push_back(std::move(fe));
  }
  return true;
}

void Flattener::add_when(const ast::Equation& eq, Scope s, const std::string& origin) {
  FlatWhen w;
  w.span = eq.span;
  w.origin = origin;
  for (size_t i = 0; i < eq.branches.size() && i < eq.conditions.size(); ++i) {
    const ast::Expr& ce = *eq.conditions[i];
    FlatWhenBranch b;
    when_condition_ = true;
    try {
      b.condition = scalar_of(eval(ce, s), ce.span, "a when-condition");
    } catch (...) {
      when_condition_ = false;
      throw;
    }
    when_condition_ = false;
    b.condition_span = ce.span;
    b.condition_text = source_text(ce.span);
    if (!varies_in_time(b.condition)) {
      diags_.report(DiagKind::when_condition_constant, ce.span);
      diags_.help("a when-condition is a relation of time or of variables, e.g. 'x < 0'");
      throw BuildError{};
    }
    when_body_ = &b;
    try {
      add_equations(eq.branches[i], s, origin);
    } catch (...) {
      when_body_ = nullptr;
      throw;
    }
    when_body_ = nullptr;
    w.branches.push_back(std::move(b));
  }
  flat_.whens.push_back(std::move(w));
}

void Flattener::add_reinit(const ast::Equation& eq, Scope s) {
  const ast::Expr& call = *eq.rhs;
  std::string name;
  for (const auto& part : call.ref) name += (name.empty() ? "" : ".") + part.name;
  if (name != "reinit") {
    diags_.report(DiagKind::call_equation, eq.span, {name});
    diags_.help("an equation has the form 'expression = expression;'");
    throw BuildError{};
  }
  if (!when_body_) {
    diags_.report(DiagKind::reinit_outside_when, eq.span);
    diags_.help(
        "reinit(x, e) sets the state x to e at an event: write it inside 'when c then ... "
        "end when;'");
    throw BuildError{};
  }
  const bool named = std::any_of(call.arg_names.begin(), call.arg_names.end(),
                                 [](const std::string& n) { return !n.empty(); });
  if (call.args.size() != 2 || named)
    fail(DiagKind::bad_call, call.span, {"reinit takes two arguments: reinit(x, e)"});
  const ast::Expr& target = *call.args[0];
  if (target.kind != ast::ExprKind::Ref)
    fail(DiagKind::reinit_target, target.span,
         {"'" + expr_to_string(target) + "' is an expression"});
  Value x = eval(target, s);
  Value value = eval(*call.args[1], s);
  if (x.is_string || value.is_string || x.shape != value.shape)
    fail(DiagKind::shape_mismatch, eq.span,
         {fmt::format("reinit of a value of shape {} by one of shape {}", shape_str(x.shape),
                      shape_str(value.shape))});
  const std::string text = source_text(eq.span);
  for (size_t i = 0; i < x.size(); ++i) {
    Expr e = x.elems[i];
    auto it = e->is_symbol() ? flat_.var_of_symbol.find(e->symbol) : flat_.var_of_symbol.end();
    if (it != flat_.var_of_symbol.end() && flat_.vars[it->second].role == VarRole::Discrete)
      fail(DiagKind::reinit_target, target.span,
           {"'" + flat_.vars[it->second].name +
            "' is a discrete variable: a when-equation assigns it with '" +
            flat_.vars[it->second].name + " = e'"});
    if (it == flat_.var_of_symbol.end() || flat_.vars[it->second].role != VarRole::Variable ||
        flat_.vars[it->second].type != ScalarType::Real)
      fail(DiagKind::reinit_target, target.span,
           {it == flat_.var_of_symbol.end()
                ? "'" + expr_to_string(target) + "' is not a variable"
                : "'" + flat_.vars[it->second].name + "' is a parameter, constant or input"});
    for (const FlatReinit& r : when_body_->reinits)
      if (r.var == e->symbol) fail(DiagKind::reinit_twice, eq.span, {flat_.vars[it->second].name});
    FlatReinit r;
    r.var = e->symbol;
    r.value = value.elems[i];
    r.span = eq.span;
    r.text = x.size() > 1 ? fmt::format("{}  (element {})", text, i + 1) : text;
    when_body_->reinits.push_back(std::move(r));
  }
}

// `x = e` inside a when-equation: x becomes a discrete variable that takes e at the event
// (finish_discrete checks the rest).
void Flattener::add_assignment(const ast::Equation& eq, Scope s) {
  const ast::Expr& target = *eq.lhs;
  if (target.kind != ast::ExprKind::Ref)
    fail(DiagKind::when_assign_target, target.span,
         {"'" + expr_to_string(target) + "' is an expression"});
  Value x = eval(target, s);
  Value value = eval(*eq.rhs, s);
  if (x.is_string || value.is_string || x.shape != value.shape)
    fail(DiagKind::shape_mismatch, eq.span,
         {fmt::format("the two sides of the equation have shapes {} and {}", shape_str(x.shape),
                      shape_str(value.shape))});
  const std::string text = source_text(eq.span);
  const size_t when_index = flat_.whens.size();  // the when being filled is pushed at its end
  for (size_t i = 0; i < x.size(); ++i) {
    const Expr e = x.elems[i];
    const auto it =
        e->is_symbol() ? flat_.var_of_symbol.find(e->symbol) : flat_.var_of_symbol.end();
    if (it == flat_.var_of_symbol.end() || (flat_.vars[it->second].role != VarRole::Variable &&
                                            flat_.vars[it->second].role != VarRole::Discrete))
      fail(DiagKind::when_assign_target, target.span,
           {it == flat_.var_of_symbol.end()
                ? "'" + expr_to_string(target) + "' is not a variable"
                : "'" + flat_.vars[it->second].name + "' is a parameter, constant or input"});
    const std::string& name = flat_.vars[it->second].name;
    for (const FlatReinit& a : when_body_->assigns)
      if (a.var == e->symbol)
        fail(DiagKind::when_assign_twice, eq.span, {name, "twice by the same branch"});
    if (auto [at, fresh] = assigned_in_when_.try_emplace(e->symbol, when_index, eq.span);
        !fresh && at->second.first != when_index) {
      diags_.report(DiagKind::when_assign_twice, eq.span, {name, "by two when-equations"});
      diags_.note(at->second.second, "first assigned here");
      diags_.help(
          "a discrete variable is assigned by one when-equation only; give it one when with "
          "'elsewhen' branches for the other conditions");
      throw BuildError{};
    }
    FlatReinit a;
    a.var = e->symbol;
    a.value = value.elems[i];
    a.span = eq.span;
    a.text = x.size() > 1 ? fmt::format("{}  (element {})", text, i + 1) : text;
    when_body_->assigns.push_back(std::move(a));
  }
}

// An if-equation inside a when-equation whose conditions are evaluated at the event: every
// variable that a branch assigns (reinitialises) takes select(c1, e1, select(c2, ...)), where a
// branch that does not assign it keeps its value (pre(x) of a discrete x, x of a state).
bool Flattener::add_when_if(const ast::Equation& eq, Scope s, const std::vector<Expr>& conditions,
                            const std::string& origin) {
  FlatWhenBranch* outer = when_body_;
  std::vector<FlatWhenBranch> parts(eq.branches.size());
  for (size_t i = 0; i < eq.branches.size(); ++i) {
    when_body_ = &parts[i];
    try {
      add_equations(eq.branches[i], s, origin);
    } catch (...) {
      when_body_ = outer;
      throw;
    }
  }
  when_body_ = outer;
  // the targets in order of first appearance, the assignments (reinits) of each branch by target
  const auto merge = [&](bool assigns) {
    std::vector<uint32_t> targets;
    std::vector<const FlatReinit*> first;
    for (const FlatWhenBranch& p : parts)
      for (const FlatReinit& r : assigns ? p.assigns : p.reinits)
        if (std::find(targets.begin(), targets.end(), r.var) == targets.end()) {
          targets.push_back(r.var);
          first.push_back(&r);
        }
    for (size_t t = 0; t < targets.size(); ++t) {
      const uint32_t x = targets[t];
      const auto value_in = [&](size_t b) -> Expr {
        if (b < parts.size())
          for (const FlatReinit& r : assigns ? parts[b].assigns : parts[b].reinits)
            if (r.var == x) return r.value;
        return assigns ? cx_.symbol(pre_symbol_of(x)) : cx_.symbol(x);
      };
      if (assigns) pre_uses_.push_back({x, "pre", first[t]->span, true});
      // no else branch: the value is kept when no condition holds
      Expr v = value_in(conditions.size());
      for (size_t i = conditions.size(); i-- > 0;) v = cx_.select(conditions[i], value_in(i), v);
      std::vector<FlatReinit>& into = assigns ? outer->assigns : outer->reinits;
      for (const FlatReinit& r : into)
        if (r.var == x)
          fail(assigns ? DiagKind::when_assign_twice : DiagKind::reinit_twice, first[t]->span,
               assigns ? std::vector<std::string>{cx_.symbol_name(x), "twice by the same branch"}
                       : std::vector<std::string>{cx_.symbol_name(x)});
      FlatReinit r = *first[t];
      r.value = v;
      r.span = eq.span;
      r.text = source_text(eq.span);
      into.push_back(std::move(r));
    }
  };
  merge(true);
  merge(false);
  return true;
}

uint32_t Flattener::pre_symbol_of(uint32_t var) {
  auto it = pre_symbol_.find(var);
  if (it != pre_symbol_.end()) return it->second;
  const uint32_t p = cx_.new_symbol("pre(" + cx_.symbol_name(var) + ")");
  ders_.set_constant(p);
  pre_symbol_.emplace(var, p);
  return p;
}

// A discrete Real that the compiler introduces (no result column, no name a model can write).
uint32_t Flattener::hidden_discrete(const std::string& name, Span span) {
  FlatVar fv;
  fv.name = name;
  fv.symbol = cx_.new_symbol(name);
  fv.role = VarRole::Discrete;
  fv.hidden = true;
  fv.span = span;
  ders_.set_constant(fv.symbol);
  flat_.var_of_symbol[fv.symbol] = flat_.vars.size();
  flat_.vars.push_back(std::move(fv));
  scalars_.push_back(nullptr);
  binding_state_.push_back(0);
  resolved_state_.push_back(0);
  resolved_.push_back(nullptr);
  return flat_.vars.back().symbol;
}

// sample(t0, T) is `change(n)` of a hidden counter n of the instants t0 + i T passed, kept by a
// hidden when-equation with k, the index of the next instant (docs/language.md, "Discrete
// variables"):
//   when initial() then      // the instants before the start are skipped; one at it fires
//     k = i0 + at;  n = pre(n) + at;      i0 = max(0, ceil((time - t0)/T - d)),
//   elsewhen time >= t0 + k T then        at = (t0 + i0 T <= time + d T), d = 1e-9
//     k = pre(k) + 1;  n = pre(n) + 1;
//   end when;
// Each instant is computed from t0 and T, so the instants do not drift over a long run.
Expr Flattener::sample_trigger(Expr start, Expr interval, Span span) {
  const auto key = std::make_pair(start->id, interval->id);
  if (auto it = sample_trigger_.find(key); it != sample_trigger_.end()) return it->second;
  const std::string base = fmt::format("$sample{}", sample_trigger_.size() + 1);
  const uint32_t k = hidden_discrete(base + ".next", span);
  const uint32_t n = hidden_discrete(base + ".count", span);
  const uint32_t pk = pre_symbol_of(k), pn = pre_symbol_of(n);
  pre_uses_.push_back({k, "pre", span, true});
  pre_uses_.push_back({n, "pre", span, true});
  if (flat_.initial_symbol < 0) {
    flat_.initial_symbol = cx_.new_symbol("initial()");
    ders_.set_constant(static_cast<uint32_t>(flat_.initial_symbol));
  }
  const Expr time = cx_.symbol(flat_.time_symbol);
  const Expr d = cx_.num(1e-9);
  const Expr x = cx_.sub(cx_.div(cx_.sub(time, start), interval), d);
  const Expr i0 =
      cx_.binary(sym::Op::Max, cx_.zero(), cx_.neg(cx_.unary(sym::Op::Floor, cx_.neg(x))));
  const Expr at = cx_.select(cx_.binary(sym::Op::Le, cx_.add(start, cx_.mul(i0, interval)),
                                        cx_.add(time, cx_.mul(d, interval))),
                             cx_.one(), cx_.zero());
  const std::string text = source_text(span);
  const auto assign = [&](uint32_t var, Expr value) {
    FlatReinit a;
    a.var = var;
    a.value = value;
    a.span = span;
    a.text = fmt::format("{} = ...  (counting the instants of {})", cx_.symbol_name(var), text);
    return a;
  };
  FlatWhen w;
  w.span = span;
  FlatWhenBranch b0;
  b0.condition = cx_.symbol(static_cast<uint32_t>(flat_.initial_symbol));
  b0.condition_span = span;
  b0.condition_text = "initial()  (the start of " + text + ")";
  b0.assigns = {assign(k, cx_.add(i0, at)), assign(n, cx_.add(cx_.symbol(pn), at))};
  FlatWhenBranch b1;
  b1.condition = cx_.binary(sym::Op::Ge, time, cx_.add(start, cx_.mul(cx_.symbol(k), interval)));
  b1.condition_span = span;
  b1.condition_text = text;
  b1.assigns = {assign(k, cx_.add(cx_.symbol(pk), cx_.one())),
                assign(n, cx_.add(cx_.symbol(pn), cx_.one()))};
  w.branches.push_back(std::move(b0));
  w.branches.push_back(std::move(b1));
  hidden_whens_.push_back(std::move(w));
  const Expr trigger = cx_.binary(sym::Op::Ne, cx_.symbol(n), cx_.symbol(pn));
  sample_trigger_.emplace(key, trigger);
  return trigger;
}

// floor(u). Where u is a parameter expression, inside a when-equation (evaluated at its event),
// an initial equation, a function, or noEvent(...), it is the plain function. Otherwise it is
// piecewise constant and changes at events, as in Modelica: a hidden discrete k holds it,
//   when initial() then k = floor(u);
//   elsewhen u >= k + 1 or u < k then k = floor(u);
//   end when;
// so every solver locates the instant u reaches the next integer (or falls below k) like any
// crossing, and no step integrates across the jump.
//
// With `truncate`, u truncated toward zero (div): the value select(u >= 0, floor(u), -floor(-u)),
// which stays k while u is in [k, k + 1) for k > 0, in (k - 1, k] for k < 0, in (-1, 1) for k = 0.
Expr Flattener::event_floor(Expr u, Scope s, Span span, bool truncate) {
  const auto plain = [&] {
    const Expr f = cx_.unary(sym::Op::Floor, u);
    if (!truncate) return f;
    return cx_.select(cx_.binary(sym::Op::Ge, u, cx_.zero()), f,
                      cx_.neg(cx_.unary(sym::Op::Floor, cx_.neg(u))));
  };
  if (u->is_const() || !varies_in_time(u) || no_event_depth_ > 0 || s.frame ||
      when_body_ != nullptr || when_condition_ || initial_section_)
    return plain();
  const auto key = std::make_pair(u->id, truncate);
  if (auto it = event_floor_.find(key); it != event_floor_.end()) return it->second;
  const uint32_t k = hidden_discrete(
      fmt::format("${}{}", truncate ? "div" : "floor", event_floor_.size() + 1), span);
  if (flat_.initial_symbol < 0) {
    flat_.initial_symbol = cx_.new_symbol("initial()");
    ders_.set_constant(static_cast<uint32_t>(flat_.initial_symbol));
  }
  const std::string text = source_text(span);
  const auto assign = [&] {
    FlatReinit a;
    a.var = k;
    a.value = plain();
    a.span = span;
    a.text = fmt::format("the value of {} at the event", text);
    return a;
  };
  const Expr kx = cx_.symbol(k);
  FlatWhen w;
  w.span = span;
  FlatWhenBranch b0;
  b0.condition = cx_.symbol(static_cast<uint32_t>(flat_.initial_symbol));
  b0.condition_span = span;
  b0.condition_text = "initial()  (the start of " + text + ")";
  b0.assigns = {assign()};
  FlatWhenBranch b1;
  const Expr up = cx_.binary(sym::Op::Ge, u, cx_.add(kx, cx_.one()));
  if (!truncate) {
    b1.condition = cx_.binary(sym::Op::Or, up, cx_.binary(sym::Op::Lt, u, kx));
  } else {
    const auto both = [&](sym::Op k_op, Expr u_rel) {
      return cx_.binary(sym::Op::And, cx_.binary(k_op, kx, cx_.zero()), u_rel);
    };
    const Expr down = cx_.binary(sym::Op::Le, u, cx_.sub(kx, cx_.one()));
    b1.condition = cx_.binary(
        sym::Op::Or, cx_.binary(sym::Op::Or, both(sym::Op::Ge, up), both(sym::Op::Le, down)),
        cx_.binary(sym::Op::Or, both(sym::Op::Gt, cx_.binary(sym::Op::Lt, u, kx)),
                   both(sym::Op::Lt, cx_.binary(sym::Op::Gt, u, kx))));
  }
  b1.condition_span = span;
  b1.condition_text = text + " reaching the next integer";
  b1.assigns = {assign()};
  w.branches.push_back(std::move(b0));
  w.branches.push_back(std::move(b1));
  hidden_whens_.push_back(std::move(w));
  event_floor_.emplace(key, kx);
  return kx;
}

// At the end of flattening: the variables assigned in when-equations become discrete; pre, edge
// and change are checked (of a continuous x, pre(x) inside a when is x); conditions that compare
// continuous values for equality are refused; each branch's assignments are ordered so that one
// that reads another's new value comes after it (a cycle is an algebraic loop), and the new values
// are substituted into the later assignments and the reinits of the branch.
void Flattener::finish_discrete() {
  for (FlatWhen& w : hidden_whens_) flat_.whens.push_back(std::move(w));
  hidden_whens_.clear();
  std::unordered_set<uint32_t> discrete;
  for (const FlatVar& v : flat_.vars)
    if (v.role == VarRole::Discrete) discrete.insert(v.symbol);
  std::vector<uint32_t> assigned;
  for (const auto& [sym, at] : assigned_in_when_) assigned.push_back(sym);
  std::sort(assigned.begin(), assigned.end());
  for (uint32_t sym : assigned) {
    FlatVar& v = flat_.vars[flat_.var_of_symbol.at(sym)];
    const Span at = assigned_in_when_.at(sym).second;
    if (ders_.has_der(sym)) {
      diags_.report(DiagKind::discrete_defined, at,
                    {v.name, " assigned in this when-equation",
                     "its derivative der(" + v.name + ") is zero, not an unknown"});
      diags_.help("integrate a continuous variable and change it at events with reinit(x, e)");
      throw BuildError{};
    }
    if (v.role == VarRole::Variable) {
      v.role = VarRole::Discrete;
      ders_.set_constant(sym);
    }
    discrete.insert(sym);
  }
  std::vector<std::pair<uint32_t, Span>> defined(continuous_lhs_.begin(), continuous_lhs_.end());
  std::sort(defined.begin(), defined.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [sym, span] : defined) {
    if (!discrete.count(sym)) continue;
    const FlatVar& v = flat_.vars[flat_.var_of_symbol.at(sym)];
    const auto at = assigned_in_when_.find(sym);
    diags_.report(
        DiagKind::discrete_defined, span,
        {v.name,
         at == assigned_in_when_.end() ? " declared discrete" : " assigned in a when-equation",
         "no continuous equation may define it"});
    diags_.note(at == assigned_in_when_.end() ? v.span : at->second.second,
                at == assigned_in_when_.end() ? "declared here" : "assigned here");
    diags_.help(
        "a discrete variable keeps its value between events; to compute a continuous value, use "
        "another variable");
    throw BuildError{};
  }
  // pre, edge and change
  std::unordered_map<uint32_t, Expr> pre_of_continuous;
  std::unordered_set<uint32_t> pre_listed;
  for (const PreUse& u : pre_uses_) {
    const uint32_t p = pre_symbol_.at(u.var);
    if (discrete.count(u.var)) {
      if (pre_listed.insert(u.var).second) flat_.pre_symbols.emplace_back(u.var, p);
      continue;
    }
    const std::string& name = flat_.vars[flat_.var_of_symbol.at(u.var)].name;
    if (u.op != "pre")
      fail(DiagKind::event_operator_argument, u.span,
           {u.op, "'" + name +
                      "' is continuous; edge and change take a discrete variable (assigned in a "
                      "when-equation, or declared discrete)"});
    if (!u.in_when) {
      diags_.report(DiagKind::pre_outside_when, u.span);
      diags_.help(
          "pre(x) of a continuous x is its value just before an event; it is used in a "
          "when-equation (pre of a discrete variable can be used anywhere)");
      throw BuildError{};
    }
    pre_of_continuous.emplace(p, cx_.symbol(u.var));
  }
  const auto continuous_symbol = [&](uint32_t sy) {
    if (sy == flat_.time_symbol || ders_.integral_of(sy) >= 0) return true;
    auto it = flat_.var_of_symbol.find(sy);
    return it != flat_.var_of_symbol.end() && (flat_.vars[it->second].role == VarRole::Variable ||
                                               flat_.vars[it->second].role == VarRole::Input);
  };
  for (FlatWhen& w : flat_.whens) {
    for (FlatWhenBranch& b : w.branches) {
      if (!pre_of_continuous.empty()) {
        b.condition = sym::substitute(cx_, b.condition, pre_of_continuous);
        for (FlatReinit& r : b.reinits) r.value = sym::substitute(cx_, r.value, pre_of_continuous);
        for (FlatReinit& a : b.assigns) a.value = sym::substitute(cx_, a.value, pre_of_continuous);
      }
      // equality of continuous values cannot be located (of discrete ones it is an event test)
      for (Expr n : sym::topological_order(std::span<const Expr>(&b.condition, 1))) {
        if (n->op != sym::Op::Eq && n->op != sym::Op::Ne) continue;
        bool continuous = false;
        for (uint32_t sy : sym::free_symbols(n)) continuous |= continuous_symbol(sy);
        if (!continuous) continue;
        diags_.report(DiagKind::when_condition_equality, b.condition_span, {b.condition_text});
        diags_.help("write the crossing as a relation, e.g. 'x >= 0' or 'x < 0'");
        throw BuildError{};
      }
      for (const FlatReinit& r : b.reinits)
        if (discrete.count(r.var))
          fail(DiagKind::reinit_target, r.span,
               {"'" + cx_.symbol_name(r.var) +
                "' is a discrete variable: a when-equation assigns it with '" +
                cx_.symbol_name(r.var) + " = e'"});
      // order: depth-first over "reads the new value of"
      const size_t n = b.assigns.size();
      std::unordered_map<uint32_t, size_t> index;
      for (size_t k = 0; k < n; ++k) index.emplace(b.assigns[k].var, k);
      std::vector<std::vector<size_t>> reads(n);
      for (size_t k = 0; k < n; ++k)
        for (uint32_t sy : sym::free_symbols(b.assigns[k].value))
          if (auto it = index.find(sy); it != index.end()) reads[k].push_back(it->second);
      std::vector<uint8_t> state(n, 0);  // 0 new, 1 on the path, 2 done
      std::vector<size_t> order, path;
      std::function<void(size_t)> visit = [&](size_t k) {
        if (state[k] == 2) return;
        if (state[k] == 1) {
          std::string cycle;
          auto from = std::find(path.begin(), path.end(), k);
          for (auto i = from; i != path.end(); ++i)
            cycle += cx_.symbol_name(b.assigns[*i].var) + " -> ";
          cycle += cx_.symbol_name(b.assigns[k].var);
          diags_.report(DiagKind::when_algebraic_loop, b.assigns[k].span,
                        {"each new value depends on the next: " + cycle});
          diags_.help(
              "inside a when-equation 'x' is the new value of x; write pre(x) for its value "
              "before the event, e.g. 'n = pre(n) + 1'");
          throw BuildError{};
        }
        state[k] = 1;
        path.push_back(k);
        for (size_t r : reads[k]) visit(r);
        path.pop_back();
        state[k] = 2;
        order.push_back(k);
      };
      for (size_t k = 0; k < n; ++k) visit(k);
      std::vector<FlatReinit> sorted;
      std::unordered_map<uint32_t, Expr> new_value;
      for (size_t k : order) {
        FlatReinit a = b.assigns[k];
        a.value = sym::substitute(cx_, a.value, new_value);
        new_value.emplace(a.var, a.value);
        sorted.push_back(std::move(a));
      }
      b.assigns = std::move(sorted);
      if (!new_value.empty())
        for (FlatReinit& r : b.reinits) r.value = sym::substitute(cx_, r.value, new_value);
    }
  }
}

Instance* Flattener::resolve_connector(const ast::Expr& ref, Scope s, bool& outside) {
  if (ref.kind != ast::ExprKind::Ref)
    fail(DiagKind::bad_connect, ref.span,
         {"the arguments of connect must be connector references"});
  Instance* cur = s.inst;
  outside = false;
  for (size_t i = 0; i < ref.ref.size(); ++i) {
    const auto& part = ref.ref[i];
    Instance* m = cur->kind == Instance::Kind::Composite ? cur->member(part.name) : nullptr;
    if (!m)
      fail(i == 0 ? DiagKind::unknown_name : DiagKind::unknown_member, part.span,
           i == 0 ? std::vector<std::string>{part.name}
                  : std::vector<std::string>{cur->path, part.name});
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
  const FlatVar& va = flat_.vars[a->var];
  const FlatVar& vb = flat_.vars[b->var];
  if (va.flow != vb.flow)
    fail(DiagKind::bad_connect, eq.span,
         {"cannot connect flow variable '" + (va.flow ? va.name : vb.name) +
          "' with potential variable '" + (va.flow ? vb.name : va.name) + "'"});
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
  if (a == b) fail(DiagKind::bad_connect, eq.span, {"a connector cannot be connected to itself"});
  bool a_frame = a->mbs_element == "Frame", b_frame = b->mbs_element == "Frame";
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

}  // namespace

std::optional<FlatModel> flatten(const ast::ClassDef& model, ClassLoader& loader,
                                 const SourceManager& sources, sym::Context& cx,
                                 DerivativeTable& ders, const FlattenOptions& options,
                                 DiagnosticEngine& diags) {
  Flattener f(loader, sources, cx, ders, options, diags);
  return f.run(model);
}

}  // namespace mbs
