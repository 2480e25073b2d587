// Exact symbolic differentiation (forward mode over the DAG, memoised per symbol).
#include <cmath>
#include <numbers>
#include <vector>

#include "compiler/symbolic/Expr.h"
#include "compiler/symbolic/ExprInternal.h"

namespace mbs::sym {

namespace {

// Derivative of node `e` given the derivatives `d` of its children (d[i] for e->args()[i]).
Expr derivative(Context& cx, Expr e, const Expr* d) {
  Expr zero = cx.zero();
  auto all_zero = [&] {
    for (uint32_t i = 0; i < e->nargs; ++i) {
      if (d[i] != zero) return false;
    }
    return true;
  };
  if (e->nargs == 0 || all_zero()) return zero;
  Expr a = e->nargs > 0 ? e->args()[0] : nullptr;
  Expr b = e->nargs > 1 ? e->args()[1] : nullptr;
  Expr da = d[0];
  auto sq = [&](Expr x) { return cx.pow(x, cx.num(2.0)); };
  switch (e->op) {
    case Op::Const:
    case Op::Symbol:
      return zero;  // handled by the caller
    case Op::Add:
      return cx.add(std::span<const Expr>(d, e->nargs));
    case Op::Mul: {
      // Product rule: sum over factors i of f_i' * prod_{j != i} f_j.
      detail::SmallVec<Expr, 16> terms;
      detail::SmallVec<Expr, 16> factors;
      for (uint32_t i = 0; i < e->nargs; ++i) {
        if (d[i] == zero) continue;
        factors.clear();
        for (uint32_t j = 0; j < e->nargs; ++j) factors.push_back(j == i ? d[i] : e->args()[j]);
        terms.push_back(cx.mul(factors));
      }
      return cx.add(terms);
    }
    case Op::Pow: {
      Expr db = d[1];
      if (b->is_const()) {  // n*a^(n-1)*a'
        Expr factors[3] = {b, cx.pow(a, cx.num(b->value - 1.0)), da};
        return cx.mul(factors);
      }
      if (da == zero) {  // a^b*log(a)*b'
        Expr factors[3] = {e, cx.unary(Op::Log, a), db};
        return cx.mul(factors);
      }
      // a^b*(b'*log(a) + b*a'/a)
      Expr inner = cx.add(cx.mul(db, cx.unary(Op::Log, a)), cx.div(cx.mul(b, da), a));
      return cx.mul(e, inner);
    }
    case Op::Sin:
      return cx.mul(cx.unary(Op::Cos, a), da);
    case Op::Cos:
      return cx.neg(cx.mul(cx.unary(Op::Sin, a), da));
    case Op::Tan:
      return cx.mul(cx.add(cx.one(), sq(e)), da);
    case Op::Asin:
      return cx.div(da, cx.unary(Op::Sqrt, cx.sub(cx.one(), sq(a))));
    case Op::Acos:
      return cx.neg(cx.div(da, cx.unary(Op::Sqrt, cx.sub(cx.one(), sq(a)))));
    case Op::Atan:
      return cx.div(da, cx.add(cx.one(), sq(a)));
    case Op::Atan2: {  // atan2(y, x)' = (x*y' - y*x')/(x^2 + y^2)
      Expr db = d[1];
      Expr num = cx.sub(cx.mul(b, da), cx.mul(a, db));
      return cx.div(num, cx.add(sq(b), sq(a)));
    }
    case Op::Sinh:
      return cx.mul(cx.unary(Op::Cosh, a), da);
    case Op::Cosh:
      return cx.mul(cx.unary(Op::Sinh, a), da);
    case Op::Tanh:
      return cx.mul(cx.sub(cx.one(), sq(e)), da);
    case Op::Exp:
      return cx.mul(e, da);
    case Op::Log:
      return cx.div(da, a);
    case Op::Log10:
      return cx.div(da, cx.mul(cx.num(std::numbers::ln10), a));
    case Op::Sqrt:
      return cx.div(da, cx.mul(cx.num(2.0), e));
    case Op::Abs:
      return cx.mul(cx.unary(Op::Sign, a), da);
    case Op::Sign:
    case Op::Floor:      // piecewise constant
    case Op::Cancelled:  // 1 where it is defined
      return zero;
    case Op::Min:
      return cx.select(cx.binary(Op::Lt, a, b), da, d[1]);
    case Op::Max:
      return cx.select(cx.binary(Op::Gt, a, b), da, d[1]);
    case Op::Select:
      return cx.select(a, d[1], d[2]);
    case Op::Lt:
    case Op::Le:
    case Op::Gt:
    case Op::Ge:
    case Op::Eq:
    case Op::Ne:
    case Op::And:
    case Op::Or:
    case Op::Not:
      return zero;
  }
  detail::internal_error("derivative: unknown op");
}

}  // namespace

Differentiator::Differentiator(Context& cx, uint32_t symbol)
    : cx_(cx), symbol_(symbol), memo_(std::make_unique<detail::NodeMap<Expr>>(4)) {}
Differentiator::Differentiator(Differentiator&&) noexcept = default;
Differentiator::~Differentiator() = default;

Expr Differentiator::operator()(Expr e) {
  detail::NodeMap<Expr>& memo = *memo_;
  if (const Expr* known = memo.find(e)) return *known;
  const Expr root[1] = {e};
  const size_t known_before = memo.size();
  detail::post_order(
      root, [&](Expr n) { return memo.find(n) == nullptr; },
      [&](Expr n) {
        if (n->is_symbol()) {
          memo.insert(n, n->symbol == symbol_ ? cx_.one() : cx_.zero());
          return;
        }
        args_.resize(n->nargs);
        for (uint32_t i = 0; i < n->nargs; ++i) args_[i] = *memo.find(n->args()[i]);
        Expr d = derivative(cx_, n, args_.data());
        memo.insert(n, d);
      });
  cx_.count_derivative_steps(memo.size() - known_before);
  return *memo.find(e);
}

// (node, symbol) -> derivative, open addressing with linear probing, load factor <= 3/4 (1/2 made
// the memo of the kernels of the chain of 10^5, 600,000 derivatives, 2 M slots, 33.5 MB, and
// 50 MB while it grew: the peak of the kernels pass). The key is (id << 32 | symbol) + 1, so that
// 0 marks an empty slot.
struct MultiDifferentiator::Memo {
  struct Slot {
    uint64_t key = 0;
    Expr value = nullptr;
  };
  std::vector<Slot> slots = std::vector<Slot>(1024);
  size_t size = 0;

  static uint64_t key_of(Expr n, uint32_t symbol) { return ((uint64_t{n->id} << 32) | symbol) + 1; }
  Expr find(uint64_t key) const {
    const size_t mask = slots.size() - 1;
    for (size_t i = detail::mix64(key) & mask; slots[i].key != 0; i = (i + 1) & mask)
      if (slots[i].key == key) return slots[i].value;
    return nullptr;
  }
  void insert(uint64_t key, Expr value) {  // key is absent
    if ((size + 1) * 4 > slots.size() * 3) {
      std::vector<Slot> old(slots.size() * 2);
      old.swap(slots);
      for (const Slot& s : old)
        if (s.key != 0) place(s);
    }
    place({key, value});
    ++size;
  }
  void place(const Slot& s) {
    const size_t mask = slots.size() - 1;
    size_t i = detail::mix64(s.key) & mask;
    while (slots[i].key != 0) i = (i + 1) & mask;
    slots[i] = s;
  }
};

MultiDifferentiator::MultiDifferentiator(Context& cx) : cx_(cx), memo_(std::make_unique<Memo>()) {}
MultiDifferentiator::~MultiDifferentiator() = default;

size_t MultiDifferentiator::memo_bytes() const {
  return memo_->slots.capacity() * sizeof(Memo::Slot);
}

Expr MultiDifferentiator::operator()(Expr e, uint32_t symbol) {
  const auto leaf = [&](Expr n) {
    return n->is_symbol() && n->symbol == symbol ? cx_.one() : cx_.zero();
  };
  if (e->nargs == 0) return leaf(e);
  Memo& memo = *memo_;
  if (Expr known = memo.find(Memo::key_of(e, symbol))) return known;
  const Expr root[1] = {e};
  size_t steps = 0;
  detail::post_order(
      root, [&](Expr n) { return n->nargs > 0 && memo.find(Memo::key_of(n, symbol)) == nullptr; },
      [&](Expr n) {
        args_.resize(n->nargs);
        for (uint32_t i = 0; i < n->nargs; ++i) {
          const Expr a = n->args()[i];
          args_[i] = a->nargs == 0 ? leaf(a) : memo.find(Memo::key_of(a, symbol));
        }
        memo.insert(Memo::key_of(n, symbol), derivative(cx_, n, args_.data()));
        ++steps;
      });
  cx_.count_derivative_steps(steps);
  return memo.find(Memo::key_of(e, symbol));
}

Expr diff(Context& cx, Expr e, uint32_t symbol) {
  return Differentiator(cx, symbol)(e);
}

std::vector<Expr> jacobian_values(Context& cx, std::span<const Expr> functions,
                                  std::span<const uint32_t> symbols, const Pattern& pattern) {
  if (pattern.rows != static_cast<int32_t>(functions.size()) ||
      pattern.cols != static_cast<int32_t>(symbols.size())) {
    detail::internal_error("jacobian_values: pattern is " + std::to_string(pattern.rows) + "x" +
                           std::to_string(pattern.cols) + ", expected " +
                           std::to_string(functions.size()) + "x" + std::to_string(symbols.size()));
  }
  std::vector<Expr> values(pattern.nnz());
  // Entries are sorted by column: one memoised differentiator per column, shared by its rows.
  for (size_t k = 0; k < pattern.nnz();) {
    int32_t col = pattern.col[k];
    Differentiator d(cx, symbols[col]);
    for (; k < pattern.nnz() && pattern.col[k] == col; ++k)
      values[k] = d(functions[pattern.row[k]]);
  }
  return values;
}

}  // namespace mbs::sym
