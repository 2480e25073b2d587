// The Context: node arena, unique table (hash-consing) and the simplifying constructors.
//
// Canonical forms maintained by the constructors (every node in a Context satisfies them):
//   Add(c?, t1, ..., tn)  n >= 1, n + (c present) >= 2. The constant c, when present, is first and
//                         nonzero. Each term ti is a non-constant, non-Add node; writing a term as
//                         coefficient * rest (rest = the term itself when it carries no constant
//                         coefficient), the rests are pairwise distinct and sorted by node id.
//   Mul(c?, f1, ..., fn)  n >= 1, n + (c present) >= 2. The coefficient c, when present, is first
//                         and neither 0 nor 1. Each factor is a non-constant, non-Mul node; writing
//                         a factor as base^exponent (exponent 1 unless it is a Pow), the bases are
//                         pairwise distinct. Factors are sorted by node id. A product of a single
//                         Add with a coefficient is distributed (2*(x + y) = 2*x + 2*y), so that
//                         negation of a sum is a sum and a - a cancels term by term.
//   Pow(b, e)             e is not the constant 0 or 1, b is not the constant 1, not both
//                         constant. When e is an integer constant, b is neither a Pow nor a Mul
//                         ((x^a)^n = x^(a*n), (c*x*y)^n = c^n*x^n*y^n are applied).
#include "compiler/symbolic/Expr.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "compiler/symbolic/ExprInternal.h"

namespace mbs::sym {

using detail::internal_error;
using detail::is_integer;
using detail::SmallVec;

std::string_view op_name(Op op) {
  switch (op) {
#define MBS_X(name, arity) \
  case Op::name:           \
    return #name;
    MBS_SYM_OPS(MBS_X)
#undef MBS_X
  }
  return "?";
}

int op_arity(Op op) {
  switch (op) {
#define MBS_X(name, arity) \
  case Op::name:           \
    return arity;
    MBS_SYM_OPS(MBS_X)
#undef MBS_X
  }
  return 0;
}

namespace {

uint64_t bits_of(double v) {
  return std::bit_cast<uint64_t>(v);
}

// Bump allocator for nodes and their child arrays. Nodes are trivially destructible, so blocks
// are released without running destructors.
class Arena {
 public:
  void* allocate(size_t bytes) {
    bytes = (bytes + 7) & ~size_t{7};
    if (bytes > left_) {
      size_t size = std::max(kBlockSize, bytes);
      blocks_.push_back(std::make_unique_for_overwrite<std::byte[]>(size));
      next_ = blocks_.back().get();
      left_ = size;
    }
    void* p = next_;
    next_ += bytes;
    left_ -= bytes;
    return p;
  }

 private:
  static constexpr size_t kBlockSize = size_t{1} << 16;
  std::vector<std::unique_ptr<std::byte[]>> blocks_;
  std::byte* next_ = nullptr;
  size_t left_ = 0;
};

// A term of a sum as coefficient * rest, a factor of a product as base ^ exponent.
struct Term {
  double coef;
  Expr rest;
};
struct Factor {
  Expr base;
  Expr exponent;
  Expr node;  // the factor as given: base, or Pow(base, exponent)
};

}  // namespace

struct Context::Impl {
  Arena arena;
  // Unique table: open addressing with linear probing, load factor <= 3/4. Each slot keeps the
  // upper half of the node's hash (the lower bits chose the slot) next to its id, so that probing
  // past other nodes touches no node memory; 8 bytes a slot (a hash and a pointer, 16 bytes, made
  // the table of the 1.1 million nodes of a model of 10^5 equations 67 MB; a load factor of 1/2
  // made it 4 M slots, 33.5 MB, where 3/4 gives 2 M: the tags keep the longer probes cheap).
  struct Slot {
    uint32_t tag = 0;  // hash >> 32
    uint32_t id1 = 0;  // the node's id + 1; 0: empty
  };
  std::vector<Slot> table = std::vector<Slot>(1024);
  // the nodes by id, in blocks (no vector of a million pointers copied as it grows)
  static constexpr uint32_t kBlockBits = 12;
  std::vector<std::unique_ptr<Node*[]>> by_id;
  size_t count = 0;
  size_t derivative_steps = 0;
  std::vector<std::string> symbol_names;
  std::vector<Expr> symbol_nodes;
  Expr zero = nullptr;
  Expr one = nullptr;
  Expr minus_one = nullptr;

  static size_t hash_of(Op op, uint32_t symbol, double value, std::span<const Expr> args) {
    uint64_t h = detail::mix64((uint64_t{static_cast<uint8_t>(op)} << 32) ^ symbol);
    h = detail::mix64(h ^ bits_of(value));
    for (Expr a : args) h = detail::mix64(h + a->hash);
    return static_cast<size_t>(h);
  }

  Node* node_of(uint32_t id) const {
    return by_id[id >> kBlockBits][id & ((uint32_t{1} << kBlockBits) - 1)];
  }

  void grow() {
    std::vector<Slot> bigger(table.size() * 2);
    size_t mask = bigger.size() - 1;
    for (const Slot& slot : table) {
      if (slot.id1 == 0) continue;
      size_t i = node_of(slot.id1 - 1)->hash & mask;
      while (bigger[i].id1 != 0) i = (i + 1) & mask;
      bigger[i] = slot;
    }
    table.swap(bigger);
  }

  // Returns the unique node with this structure, creating it if needed. No simplification: the
  // caller guarantees that the arguments are in canonical form.
  Expr intern(Op op, uint32_t symbol, double value, std::span<const Expr> args) {
    size_t h = hash_of(op, symbol, value, args);
    size_t mask = table.size() - 1;
    size_t i = h & mask;
    const auto tag = static_cast<uint32_t>(uint64_t{h} >> 32);
    uint64_t vbits = bits_of(value);
    for (; table[i].id1 != 0; i = (i + 1) & mask) {
      if (table[i].tag != tag) continue;
      const Node* n = node_of(table[i].id1 - 1);
      if (n->hash == h && n->op == op && n->nargs == args.size() && n->symbol == symbol &&
          bits_of(n->value) == vbits && std::equal(args.begin(), args.end(), n->args())) {
        return n;
      }
    }
    if (count >= UINT32_MAX - 1) internal_error("too many nodes in one Context");
    // the children right after the node (Node::args)
    void* mem = arena.allocate(sizeof(Node) + args.size() * sizeof(Expr));
    auto* child_array = reinterpret_cast<const Node**>(static_cast<std::byte*>(mem) + sizeof(Node));
    std::copy(args.begin(), args.end(), child_array);
    Node* n = new (mem) Node{
        op, static_cast<uint32_t>(count), static_cast<uint32_t>(args.size()), symbol, value, h};
    const auto id = static_cast<uint32_t>(count);
    if ((id >> kBlockBits) == by_id.size())
      by_id.push_back(std::make_unique_for_overwrite<Node*[]>(size_t{1} << kBlockBits));
    by_id[id >> kBlockBits][id & ((uint32_t{1} << kBlockBits) - 1)] = n;
    table[i] = {tag, id + 1};
    ++count;
    if (count * 4 > table.size() * 3) grow();
    return n;
  }

  Expr intern(Op op, std::span<const Expr> args) { return intern(op, 0, 0.0, args); }
  Expr num(double v) { return intern(Op::Const, 0, v, {}); }

  // Splits a (non-constant, non-Add) term into coefficient * rest.
  Term split_term(Expr t) {
    if (t->op == Op::Mul && t->args()[0]->is_const()) {
      Expr rest = t->nargs == 2 ? t->args()[1] : intern(Op::Mul, {t->args() + 1, t->nargs - 1});
      return {t->args()[0]->value, rest};
    }
    return {1.0, t};
  }

  // Rebuilds coefficient * rest (coef != 0) in the canonical form that mul() would produce.
  Expr join_term(double coef, Expr rest) {
    if (coef == 1.0) return rest;
    SmallVec<Expr, 8> args;
    args.push_back(num(coef));
    if (rest->op == Op::Mul) {
      for (Expr f : rest->children()) args.push_back(f);
    } else {
      args.push_back(rest);
    }
    return intern(Op::Mul, args);
  }
};

Context::Context() : impl_(std::make_unique<Impl>()) {
  impl_->zero = num(0.0);
  impl_->one = num(1.0);
  impl_->minus_one = num(-1.0);
}

Context::~Context() = default;

uint32_t Context::new_symbol(std::string name) {
  auto index = static_cast<uint32_t>(impl_->symbol_names.size());
  impl_->symbol_names.push_back(std::move(name));
  impl_->symbol_nodes.push_back(impl_->intern(Op::Symbol, index, 0.0, {}));
  return index;
}

uint32_t Context::symbol_count() const {
  return static_cast<uint32_t>(impl_->symbol_names.size());
}

const std::string& Context::symbol_name(uint32_t index) const {
  if (index >= impl_->symbol_names.size()) {
    internal_error("symbol index " + std::to_string(index) + " out of range (Context has " +
                   std::to_string(impl_->symbol_names.size()) + " symbols)");
  }
  return impl_->symbol_names[index];
}

Expr Context::symbol(uint32_t index) {
  if (index >= impl_->symbol_nodes.size()) {
    internal_error("symbol index " + std::to_string(index) + " out of range (Context has " +
                   std::to_string(impl_->symbol_nodes.size()) + " symbols)");
  }
  return impl_->symbol_nodes[index];
}

Expr Context::num(double v) {
  return impl_->num(v);
}

Expr Context::zero() const {
  return impl_->zero;
}

Expr Context::one() const {
  return impl_->one;
}

size_t Context::node_count() const {
  return impl_->count;
}

size_t Context::derivative_steps() const {
  return impl_->derivative_steps;
}

void Context::count_derivative_steps(size_t n) {
  impl_->derivative_steps += n;
}

// ---- sums ------------------------------------------------------------------------------------

Expr Context::add(Expr a, Expr b) {
  if (a->is_const(0.0)) return b;
  if (b->is_const(0.0)) return a;
  const Expr pair[2] = {a, b};
  return add(std::span<const Expr>(pair, 2));
}

Expr Context::add(std::span<const Expr> terms) {
  Impl& im = *impl_;
  double constant = 0.0;
  SmallVec<Term, 16> parts;
  auto push = [&](Expr t) {
    if (t->is_const()) {
      constant += t->value;
    } else {
      parts.push_back(im.split_term(t));
    }
  };
  for (Expr t : terms) {
    if (t->op == Op::Add) {
      for (Expr c : t->children()) push(c);
    } else {
      push(t);
    }
  }
  if (parts.empty()) return num(constant);
  if (parts.size() == 1 && constant == 0.0 && parts[0].coef == 1.0) return parts[0].rest;

  std::sort(parts.begin(), parts.end(),
            [](const Term& x, const Term& y) { return x.rest->id < y.rest->id; });
  size_t n = 0;  // merge equal rests, dropping zero coefficients
  for (size_t i = 0; i < parts.size();) {
    Term t = parts[i++];
    while (i < parts.size() && parts[i].rest == t.rest) t.coef += parts[i++].coef;
    if (t.coef != 0.0) parts[n++] = t;
  }
  parts.resize(n);

  SmallVec<Expr, 16> args;
  if (constant != 0.0) args.push_back(num(constant));
  for (const Term& t : parts) args.push_back(im.join_term(t.coef, t.rest));
  if (args.empty()) return zero();
  if (args.size() == 1) return args[0];
  return im.intern(Op::Add, args);
}

Expr Context::sub(Expr a, Expr b) {
  if (a == b) return zero();
  if (b->is_const(0.0)) return a;
  return add(a, neg(b));
}

Expr Context::neg(Expr a) {
  if (a->is_const()) return num(-a->value);
  return mul(impl_->minus_one, a);
}

// ---- products --------------------------------------------------------------------------------

Expr Context::mul(Expr a, Expr b) {
  if (a->is_const() && b->is_const()) return num(a->value * b->value);  // IEEE: 0 * inf is NaN
  if (a->is_const(0.0) || b->is_const(0.0)) return zero();  // 0 * x = 0 (docs/diagnostics.md)
  if (a->is_const(1.0)) return b;
  if (b->is_const(1.0)) return a;
  const Expr pair[2] = {a, b};
  return mul(std::span<const Expr>(pair, 2));
}

Expr Context::mul(std::span<const Expr> factors) {
  Impl& im = *impl_;
  double coef = 1.0;
  SmallVec<Factor, 16> parts;
  auto push = [&](Expr f) {
    if (f->is_const()) {
      coef *= f->value;
    } else if (f->op == Op::Pow) {
      parts.push_back({f->args()[0], f->args()[1], f});
    } else {
      parts.push_back({f, im.one, f});
    }
  };
  for (Expr f : factors) {
    if (f->op == Op::Mul) {
      for (Expr c : f->children()) push(c);
    } else {
      push(f);
    }
  }
  if (parts.empty() || std::isnan(coef)) return num(coef);  // IEEE: NaN * x, 0 * inf are NaN
  if (coef == 0.0) return zero();  // 0 * x = 0 for a symbolic x (docs/diagnostics.md)

  std::sort(parts.begin(), parts.end(),
            [](const Factor& x, const Factor& y) { return x.base->id < y.base->id; });
  // Merge equal bases by adding exponents. A base that occurs once keeps its original factor
  // node; a merged one is rebuilt with pow(), which may simplify it into something that needs
  // another round (a constant, a product, or a power of a different base). Powers of opposite
  // signs cancel a factor (x^2 * x^-1 = x, x * x^-1 = 1) that is NaN or infinite where x is 0,
  // inf or NaN: Cancelled(x) keeps it evaluated.
  SmallVec<Expr, 16> out;
  bool again = false;
  for (size_t i = 0; i < parts.size();) {
    Factor f = parts[i++];
    if (i == parts.size() || parts[i].base != f.base) {
      out.push_back(f.node);
      continue;
    }
    bool positive = f.exponent->is_const() && f.exponent->value > 0;
    bool negative = f.exponent->is_const() && f.exponent->value < 0;
    while (i < parts.size() && parts[i].base == f.base) {
      Expr e = parts[i++].exponent;
      positive = positive || (e->is_const() && e->value > 0);
      negative = negative || (e->is_const() && e->value < 0);
      f.exponent = f.exponent->is_const() && e->is_const() ? num(f.exponent->value + e->value)
                                                           : add(f.exponent, e);
    }
    if (positive && negative && f.base->op != Op::Cancelled) {
      out.push_back(unary(Op::Cancelled, f.base));
      again = true;  // Cancelled(x) may meet another Cancelled(x)
    }
    Expr p = pow(f.base, f.exponent);
    if (p->is_const()) {
      coef *= p->value;
    } else {
      if (p != f.base && !(p->op == Op::Pow && p->args()[0] == f.base)) again = true;
      out.push_back(p);
    }
  }
  if (again) {
    out.push_back(num(coef));
    return mul(std::span<const Expr>(out));
  }
  if (coef == 0.0) return zero();
  if (out.empty()) return num(coef);
  if (out.size() == 1) {
    if (coef == 1.0) return out[0];
    if (out[0]->op == Op::Add) {  // distribute c*(t1 + ... + tn)
      SmallVec<Expr, 16> terms;
      Expr c = num(coef);
      for (Expr t : out[0]->children()) terms.push_back(mul(c, t));
      return add(std::span<const Expr>(terms));
    }
  }
  std::sort(out.begin(), out.end(), [](Expr x, Expr y) { return x->id < y->id; });
  SmallVec<Expr, 16> args;
  if (coef != 1.0) args.push_back(num(coef));
  for (Expr f : out) args.push_back(f);
  return im.intern(Op::Mul, args);
}

Expr Context::div(Expr a, Expr b) {
  if (b->is_const()) {
    if (a->is_const()) return num(a->value / b->value);  // IEEE: 0/0 is NaN
    return mul(a, num(1.0 / b->value));
  }
  return mul(a, pow(b, impl_->minus_one));
}

Expr Context::pow(Expr base, Expr exponent) {
  Impl& im = *impl_;
  if (exponent->is_const()) {
    double n = exponent->value;
    if (base->is_const()) return num(n == -1.0 ? 1.0 / base->value : std::pow(base->value, n));
    if (n == 0.0) return im.one;  // x^0 = 1 for every x, as std::pow
    if (n == 1.0) return base;
    if (base->op == Op::Cancelled) return base;  // 1^n = 1, NaN^n = NaN
    if (is_integer(n)) {
      if (base->op == Op::Pow) return pow(base->args()[0], mul(base->args()[1], exponent));
      if (base->op == Op::Mul) {
        SmallVec<Expr, 16> factors;
        for (Expr f : base->children()) factors.push_back(pow(f, exponent));
        return mul(std::span<const Expr>(factors));
      }
    }
  }
  if (base->is_const(1.0)) return im.one;  // 1^x = 1 for every x, as std::pow
  const Expr args[2] = {base, exponent};
  return im.intern(Op::Pow, args);
}

// ---- functions and logic ---------------------------------------------------------------------

namespace {

bool is_unary(Op op) {
  return op_arity(op) == 1;
}
bool is_binary(Op op) {
  return op_arity(op) == 2 && op != Op::Pow;
}
bool is_commutative(Op op) {
  return op == Op::Eq || op == Op::Ne || op == Op::And || op == Op::Or;
}

}  // namespace

Expr Context::unary(Op op, Expr a) {
  if (!is_unary(op)) internal_error("unary() called with " + std::string(op_name(op)));
  if (a->is_const()) return num(detail::apply_op(op, &a->value, 1));
  if ((op == Op::Abs || op == Op::Sign || op == Op::Floor) && a->op == op) return a;  // idempotent
  if (op == Op::Cancelled && a->op == Op::Cancelled) return a;
  return impl_->intern(op, {&a, 1});
}

Expr Context::binary(Op op, Expr a, Expr b) {
  if (op == Op::Pow) return pow(a, b);
  if (!is_binary(op)) internal_error("binary() called with " + std::string(op_name(op)));
  if (a->is_const() && b->is_const()) {
    const double v[2] = {a->value, b->value};
    return num(detail::apply_op(op, v, 2));
  }
  switch (op) {
    case Op::Min:
    case Op::Max:
      if (a == b) return a;
      break;
    case Op::Lt:
    case Op::Gt:
      if (a == b) return zero();  // also right for NaN
      break;
    case Op::And:
    case Op::Or: {
      // A constant operand decides the result or reduces it to a truth test of the other one.
      Expr c = a->is_const() ? a : (b->is_const() ? b : nullptr);
      if (c != nullptr) {
        Expr other = c == a ? b : a;
        bool truth = c->value != 0;  // NaN is true
        if (op == Op::And && !truth) return zero();
        if (op == Op::Or && truth) return one();
        return binary(Op::Ne, other, zero());
      }
      break;
    }
    default:
      break;
  }
  if (is_commutative(op) && b->id < a->id) std::swap(a, b);
  const Expr args[2] = {a, b};
  return impl_->intern(op, args);
}

Expr Context::select(Expr cond, Expr if_true, Expr if_false) {
  if (cond->is_const()) return cond->value != 0 ? if_true : if_false;  // NaN is true
  if (if_true == if_false) return if_true;
  const Expr args[3] = {cond, if_true, if_false};
  return impl_->intern(Op::Select, args);
}

Expr Context::make(Op op, std::span<const Expr> args) {
  int arity = op_arity(op);
  if (op == Op::Const || op == Op::Symbol) internal_error("make() cannot build a leaf");
  if (arity >= 0 && args.size() != static_cast<size_t>(arity)) {
    internal_error("make(" + std::string(op_name(op)) + ") with " + std::to_string(args.size()) +
                   " arguments, expected " + std::to_string(arity));
  }
  switch (op) {
    case Op::Add:
      return add(args);
    case Op::Mul:
      return mul(args);
    case Op::Pow:
      return pow(args[0], args[1]);
    case Op::Select:
      return select(args[0], args[1], args[2]);
    default:
      return arity == 1 ? unary(op, args[0]) : binary(op, args[0], args[1]);
  }
}

}  // namespace mbs::sym
