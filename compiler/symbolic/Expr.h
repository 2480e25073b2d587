// Hash-consed symbolic expression DAG.
//
// Every expression is an immutable Node owned by a Context. Nodes are unique up to structure:
// building the same expression twice yields the same pointer, so structural equality is pointer
// equality and common subexpressions are shared across every kernel built from one Context.
// Simplification happens on construction (constant folding, flattening of sums and products,
// collection of like terms, neutral and absorbing elements), never as a separate pass.
//
// Symbols are numbered 0..n-1 within a Context. Kernels receive one `const double* v` array and
// read symbol i from v[i]; the compiler decides what each symbol means (a coordinate, a velocity, a
// parameter, time, a solver coefficient).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace mbs::sym {

// The node kinds, listed once. X(name, arity) with arity -1 for n-ary. Cancelled(x) is 1 where x
// is finite and non-zero and NaN elsewhere: what remains of a factor that simplification cancelled
// (x/x, x^2 * x^-1), still evaluated, so that a division by zero is not hidden
// (docs/diagnostics.md, "Simplification").
#define MBS_SYM_OPS(X)                                  \
  X(Const, 0)                                           \
  X(Symbol, 0)                                          \
  X(Add, -1)                                            \
  X(Mul, -1)                                            \
  X(Pow, 2)                                             \
  X(Sin, 1)                                             \
  X(Cos, 1)                                             \
  X(Tan, 1)                                             \
  X(Asin, 1)                                            \
  X(Acos, 1)                                            \
  X(Atan, 1)                                            \
  X(Atan2, 2)                                           \
  X(Sinh, 1)                                            \
  X(Cosh, 1)                                            \
  X(Tanh, 1)                                            \
  X(Exp, 1)                                             \
  X(Log, 1)                                             \
  X(Log10, 1)                                           \
  X(Sqrt, 1)                                            \
  X(Abs, 1)                                             \
  X(Sign, 1)                                            \
  X(Floor, 1) /* the largest integer <= the argument */ \
  X(Min, 2)                                             \
  X(Max, 2)                                             \
  X(Select, 3) /* Select(c, a, b) = c != 0 ? a : b */   \
  X(Lt, 2)                                              \
  X(Le, 2)                                              \
  X(Gt, 2)                                              \
  X(Ge, 2)                                              \
  X(Eq, 2)                                              \
  X(Ne, 2)                                              \
  X(And, 2)                                             \
  X(Or, 2)                                              \
  X(Not, 1)                                             \
  X(Cancelled, 1) /* a factor simplification cancelled */

enum class Op : uint8_t {
#define MBS_X(name, arity) name,
  MBS_SYM_OPS(MBS_X)
#undef MBS_X
};

// Printable name of an op ("Add", "Sin", ...).
std::string_view op_name(Op op);
// Fixed arity of an op, or -1 for the n-ary Add and Mul.
int op_arity(Op op);

// A node is 32 bytes, its nargs children right after it in the Context's arena (no pointer to
// them: 8 bytes a node, 8.8 MB of the 1.1 million nodes of a model of 10^5 equations).
struct Node {
  Op op;
  uint32_t id;      // creation order within the Context; children always have smaller ids
  uint32_t nargs;   // number of children
  uint32_t symbol;  // Symbol: its index; otherwise 0
  double value;     // Const: its value; otherwise 0
  size_t hash;      // structural hash

  // the nargs children, owned by the Context
  const Node* const* args() const { return reinterpret_cast<const Node* const*>(this + 1); }
  std::span<const Node* const> children() const { return {args(), nargs}; }
  const Node* arg(size_t i) const { return args()[i]; }
  bool is_const() const { return op == Op::Const; }
  bool is_const(double v) const { return op == Op::Const && value == v; }
  bool is_symbol() const { return op == Op::Symbol; }
};
static_assert(sizeof(Node) == 32 && alignof(Node) == alignof(const Node*),
              "the children follow a node in the arena");

using Expr = const Node*;

// Owns all nodes. Not thread-safe; one Context per compilation.
class Context {
 public:
  Context();
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Symbols ---------------------------------------------------------------------------------
  // Creates a new symbol with a (not necessarily unique) display name; returns its index.
  uint32_t new_symbol(std::string name);
  uint32_t symbol_count() const;
  const std::string& symbol_name(uint32_t index) const;
  Expr symbol(uint32_t index);

  // Leaves ---------------------------------------------------------------------------------
  Expr num(double v);
  Expr zero() const;  // num(0.0) and num(1.0), without a look-up
  Expr one() const;

  // Arithmetic (simplifying) ---------------------------------------------------------------
  Expr add(Expr a, Expr b);
  Expr add(std::span<const Expr> terms);
  Expr add(std::initializer_list<Expr> terms) {
    return add(std::span(terms.begin(), terms.size()));
  }
  Expr sub(Expr a, Expr b);
  Expr neg(Expr a);
  Expr mul(Expr a, Expr b);
  Expr mul(std::span<const Expr> factors);
  Expr mul(std::initializer_list<Expr> factors) {
    return mul(std::span(factors.begin(), factors.size()));
  }
  Expr div(Expr a, Expr b);
  Expr pow(Expr base, Expr exponent);

  // Functions and logic (simplifying: constant arguments fold) -------------------------------
  // Unary: Sin..Sign, Not. Binary: Atan2, Min, Max, Lt..Ne, And, Or.
  Expr unary(Op op, Expr a);
  Expr binary(Op op, Expr a, Expr b);
  Expr select(Expr cond, Expr if_true, Expr if_false);

  // Generic constructor used by substitution: rebuilds a node of `op` with new children,
  // simplifying as the specific constructors do. For Const/Symbol it is an internal error.
  Expr make(Op op, std::span<const Expr> args);

  size_t node_count() const;
  // Nodes differentiated so far (one per node and symbol a Differentiator had not memoised): a
  // deterministic measure of the differentiation work done in this Context, beside
  // node_count(), for the scaling tests.
  size_t derivative_steps() const;
  void count_derivative_steps(size_t n);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Exact derivative d e / d symbol. Memoised per call; simplifying.
Expr diff(Context& cx, Expr e, uint32_t symbol);

namespace detail {
template <class V>
class NodeMap;
}

// Memoised differentiator for many derivatives of many expressions w.r.t. one symbol.
class Differentiator {
 public:
  Differentiator(Context& cx, uint32_t symbol);
  Differentiator(Differentiator&&) noexcept;
  ~Differentiator();
  Expr operator()(Expr e);

 private:
  Context& cx_;
  uint32_t symbol_;
  // node -> its derivative (open addressing: no allocation per node, as in every graph walk)
  std::unique_ptr<detail::NodeMap<Expr>> memo_;
  std::vector<Expr> args_;  // the children's derivatives of the node being differentiated
};

// Memoised derivatives of many expressions by many symbols, in one open-addressing table keyed
// by (node, symbol) instead of a Differentiator (a hash map) per symbol: the kernels pass of a
// model of 10^5 equations differentiates by 2*10^5 symbols, and its Differentiators held about
// 100 MB. Leaves are not memoised (their derivative is read off), so the derivative steps this
// counts are the inner nodes differentiated (one per inner node and symbol).
class MultiDifferentiator {
 public:
  explicit MultiDifferentiator(Context& cx);
  MultiDifferentiator(const MultiDifferentiator&) = delete;
  MultiDifferentiator& operator=(const MultiDifferentiator&) = delete;
  ~MultiDifferentiator();
  Expr operator()(Expr e, uint32_t symbol);
  // Bytes held by the memo (its table), a deterministic measure for the scaling tests.
  size_t memo_bytes() const;

 private:
  struct Memo;
  Context& cx_;
  std::unique_ptr<Memo> memo_;
  std::vector<Expr> args_;
};

// Replaces symbols by expressions (a symbol absent from the map stays). Memoised, simplifying;
// returns the same node when nothing below it changed.
Expr substitute(Context& cx, Expr e, const std::unordered_map<uint32_t, Expr>& replacement);

// Memoised substitution for many expressions with one replacement map, which must not change
// while the Substituter is used (expressions that share nodes are walked once between them).
class Substituter {
 public:
  Substituter(Context& cx, const std::unordered_map<uint32_t, Expr>& replacement);
  Substituter(Substituter&&) noexcept;
  ~Substituter();
  Expr operator()(Expr e);

 private:
  Context& cx_;
  const std::unordered_map<uint32_t, Expr>& replacement_;
  std::unique_ptr<detail::NodeMap<Expr>> memo_;  // node -> its substitution
  std::vector<Expr> args_;
};

// Reference interpreter (for tests, parameters and start values; never on the hot path).
// Comparisons and logic yield 1.0 or 0.0; Select tests != 0.
double evaluate(Expr e, std::span<const double> symbol_values);
// Evaluates several roots sharing one memo table.
void evaluate(std::span<const Expr> roots, std::span<const double> symbol_values,
              std::span<double> out);

// True when `symbol` occurs in e.
bool depends_on(Expr e, uint32_t symbol);
// The symbols occurring in e, ascending.
std::vector<uint32_t> free_symbols(Expr e);

// All nodes reachable from the roots in topological order (children before parents), each once.
std::vector<Expr> topological_order(std::span<const Expr> roots);

// Human-readable infix form using the Context's symbol names, e.g. "m*der(x) + 2*x*lambda".
std::string to_string(const Context& cx, Expr e);

// Sparsity pattern of the Jacobian d f_i / d x_j for the given functions and symbols, as
// (row, col) pairs sorted by column, then row (compressed-column order). Entry (i, j) is present
// when x_j occurs structurally in f_i.
struct Pattern {
  int32_t rows = 0;
  int32_t cols = 0;
  std::vector<int32_t> row;  // size nnz
  std::vector<int32_t> col;  // size nnz
  size_t nnz() const { return row.size(); }
};
Pattern jacobian_pattern(std::span<const Expr> functions, std::span<const uint32_t> symbols);

// Values of the Jacobian entries in the order of `pattern` (symbolic, simplified).
std::vector<Expr> jacobian_values(Context& cx, std::span<const Expr> functions,
                                  std::span<const uint32_t> symbols, const Pattern& pattern);

}  // namespace mbs::sym
