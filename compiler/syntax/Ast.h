// Abstract syntax tree of a .mbs file: exactly what the user wrote, with a source span on every
// node. Built once by the parser and never rewritten in place; later passes read it.
#pragma once

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "compiler/diag/Diagnostics.h"

namespace mbs::ast {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;
struct Modification;
struct Component;

// One part of a component reference: `name[subscripts]`. A reference a.b[2].c has three parts.
struct RefPart {
  std::string name;
  std::vector<ExprPtr> subscripts;  // a subscript may be a Colon expression (`a[:, 1]`)
  Span span;
};

// One iterator `name in range` of a for-equation, an array comprehension or a reduction.
struct ForIndex {
  std::string name;
  Span span;
  ExprPtr range;  // usually a Range expression; may be any array expression
};

enum class ExprKind {
  Number,  // number, is_integer
  Bool,    // boolean
  String,  // text
  Ref,     // ref (a dotted component reference; `time` is Ref{"time"})
  Call,    // ref = function name (dotted), args = arguments; arg_names[i] is the name of a
           // named argument `name = value` ("" for a positional one); arg_names may be empty
  Unary,   // op in {"-", "+", "not"}, args[0]
  Binary,  // op in {"+","-","*","/","^",".+",".-",".*","./",".^","==","<>","<","<=",">",">=",
           //        "and","or"}, args[0] op args[1]
  If,      // args = cond0, then0, cond1, then1, ..., else   (elseif chains; odd size)
  Array,   // `{a, b, c}`: args = elements
  Matrix,  // `[a, b; c, d]`: rows
  Range,   // `start:stop` (args size 2) or `start:step:stop` (args size 3)
  Colon,   // a lone `:` inside subscripts
  End,     // `end` inside subscripts
  Comprehension,  // `{args[0] for iterators}`: Modelica's array constructor with iterators
  Reduction,      // `ref(args[0] for iterators)`: sum, product, min or max over the iterators
};

struct Expr {
  ExprKind kind;
  Span span;
  double number = 0.0;
  bool is_integer = false;  // Number literal written without '.', 'e' or 'E'
  bool boolean = false;
  std::string text;                        // String
  std::string op;                          // Unary, Binary
  std::vector<RefPart> ref;                // Ref, Call (function name)
  std::vector<ExprPtr> args;               // see ExprKind
  std::vector<std::string> arg_names;      // Call: names of named arguments (see ExprKind)
  std::vector<Span> arg_spans;             // Call with named arguments: each whole argument
  std::vector<std::vector<ExprPtr>> rows;  // Matrix
  std::vector<ForIndex> iterators;         // Comprehension, Reduction (as written, left first)
  ExprPtr filter;  // Comprehension, Reduction: `... for i in a if filter` (mbs extension); or null
};

// `name(args) = value` inside a modification. path is the dotted name being modified
// (usually one part: `start`, `k`, `x` in `x(start = 1)`).
struct ModArg {
  std::vector<std::string> path;
  std::unique_ptr<Modification> mod;  // never null
  bool each = false;
  bool final_ = false;
  Span span;
  // `redeclare C sub(...)` (path {"sub"}, mod empty): the new declaration (section 7.3)
  std::shared_ptr<const Component> redeclare;
};

// `(arg, arg, ...) = value`, either part optional.
struct Modification {
  std::vector<ModArg> args;
  ExprPtr value;  // may be null
  Span span;
};

enum class Variability { Continuous, Discrete, Parameter, Constant };
enum class Causality { None, Input, Output };

// One declared component: `parameter Real k[3](start = 1) = 2 "description";`
// A declaration `Real x, y;` yields two Components sharing the prefixes and type.
struct Component {
  std::string name;
  Span span;              // the component's name
  std::string type_name;  // dotted, as written: "Real", "Mechanics.Body"
  Span type_span;
  std::vector<ExprPtr> type_dims;  // `Real[3] x`
  std::vector<ExprPtr> dims;       // `Real x[3]`
  Variability variability = Variability::Continuous;
  Causality causality = Causality::None;
  bool flow = false;
  bool stream = false;
  std::unique_ptr<Modification> mod;  // may be null
  ExprPtr condition;                  // `A a if cond;` (Modelica 3.6, section 4.4.5), or null
  std::string description;
  bool is_protected = false;
  // element prefixes (sections 5.4, 7.2.6, 7.3)
  bool replaceable = false, redeclare = false, final_ = false, inner = false, outer = false;
  std::string constrainedby;  // `constrainedby P`: dotted, or empty
  Span constrainedby_span;
};

struct Extends {
  std::string base;  // dotted
  Span span;
  std::unique_ptr<Modification> mod;  // may be null
};

struct Import {
  std::string path;       // dotted, e.g. "Mechanics" for `import Mechanics.*;`
  bool wildcard = false;  // `import A.B.*;`
  std::string alias;      // `import M = A.B;`  -> alias "M", path "A.B"
  Span span;
};

struct Equation;
using EquationList = std::vector<Equation>;

enum class EquationKind { Simple, Connect, For, If, Outputs, When, Call };

struct Equation {
  EquationKind kind = EquationKind::Simple;
  Span span;  // the whole equation
  // Simple: lhs = rhs. Connect: lhs, rhs are Ref expressions. Outputs: (targets...) = rhs, a
  // Call; a null target drops that output.
  ExprPtr lhs, rhs;
  std::vector<ExprPtr> targets;
  // For: indices and body.
  std::vector<ForIndex> indices;
  EquationList body;
  // If: conditions[i] guards branches[i]; branches may have one more element (the else branch).
  // When: conditions[i] triggers branches[i] (`elsewhen` adds one of each). Call: `f(args);`,
  // rhs the Call expression.
  std::vector<ExprPtr> conditions;
  std::vector<EquationList> branches;
  std::string description;
};

// One statement of an algorithm section (of a function, or of a model: docs/language.md,
// "Algorithms").
struct Statement;
using StatementList = std::vector<Statement>;

enum class StatementKind { Assign, MultiAssign, If, For, While, Return, Break, Call };

struct Statement {
  StatementKind kind = StatementKind::Assign;
  Span span;  // the whole statement
  // Assign: target := value. MultiAssign: (targets...) := value (a Call); a null target drops
  // that output. Call: `f(args);`, value the Call expression.
  ExprPtr target, value;
  std::vector<ExprPtr> targets;
  // For: indices and body. While: conditions[0] and body.
  std::vector<ForIndex> indices;
  StatementList body;
  // If: conditions[i] guards branches[i]; branches may have one more element (the else branch).
  // When: conditions[i] triggers branches[i] (`elsewhen` adds one of each). Call: `f(args);`,
  // rhs the Call expression.
  std::vector<ExprPtr> conditions;
  std::vector<StatementList> branches;
};

// Class: the general class of Modelica (`class A ... end A;`), treated like a model.
enum class ClassKind { Model, Connector, Record, Block, Package, Type, Function, Class };

struct ClassDef {
  ClassKind kind = ClassKind::Model;
  std::string name;
  Span span;  // the name after `model`
  std::string description;
  std::vector<Import> imports;
  std::vector<Extends> extends;
  std::vector<Component> components;
  EquationList equations;
  EquationList initial_equations;                  // every `initial equation` section, in order
  std::vector<Span> initial_spans;                 // the `initial` keywords of those sections
  StatementList algorithm;                         // every `algorithm` section, in order
  std::vector<Span> algorithm_spans;               // the `algorithm` keywords
  std::vector<size_t> algorithm_starts;            // where each section starts in `algorithm`
  StatementList initial_algorithm;                 // every `initial algorithm` section, in order
  std::vector<Span> initial_algorithm_spans;       // their `initial` keywords
  std::vector<size_t> initial_algorithm_starts;    // where each starts in `initial_algorithm`
  std::vector<std::unique_ptr<ClassDef>> classes;  // nested classes (packages)
  // `type Length = Real(unit = "m");`  -> short_base "Real", short_mod its modification
  std::string short_base;
  std::unique_ptr<Modification> short_mod;
  std::vector<ExprPtr> short_dims;  // `type V = Real[3];`: the type's array dimensions
  // `type E = enumeration(a "first", b, c);`: is_enumeration, the literals in order (their values
  // are 1, 2, ...), their spans and descriptions; `enumeration(:)` sets enumeration_open.
  bool is_enumeration = false;
  bool enumeration_open = false;
  std::vector<std::string> enum_literals;
  std::vector<Span> enum_spans;
  std::vector<std::string> enum_descriptions;
  // `annotation(__mbs_element = "Revolute")`: a built-in multibody element or the frame
  // connector ("Frame"); empty for every other class.
  std::string mbs_element;
  // `annotation(experiment(StartTime = 0, StopTime = 5, Interval = 0.01, Tolerance = 1e-6))`
  // (Modelica 3.6, section 18.4): the values given, NaN for those not given or ignored.
  struct Experiment {
    double start_time = std::numeric_limits<double>::quiet_NaN();
    double stop_time = std::numeric_limits<double>::quiet_NaN();
    double interval = std::numeric_limits<double>::quiet_NaN();
    double tolerance = std::numeric_limits<double>::quiet_NaN();
  } experiment;
};

struct File {
  uint32_t file_id = 0;
  std::string within;  // `within A.B;` or empty
  std::vector<std::unique_ptr<ClassDef>> classes;
};

const char* class_kind_name(ClassKind k);

}  // namespace mbs::ast
