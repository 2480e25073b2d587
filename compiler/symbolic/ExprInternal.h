// Internals shared by the .cpp files of the symbolic engine (not part of its API).
//
// - NodeMap: an open-addressing hash map keyed by node pointer, used by every graph walk so that a
//   DAG is visited as a DAG (each node once) without a heap allocation per node.
// - post_order: iterative depth-first walk (children before parents), safe for chains of any
//   depth (no recursion, so no stack overflow on a 100k-node chain).
// - apply_op: the numeric meaning of every op, shared by constant folding and the interpreter so
//   the two can never disagree. The code generator must implement exactly these semantics.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "compiler/symbolic/Expr.h"

namespace mbs::sym::detail {

// A compiler bug (as opposed to a user's mistake): callers violated an invariant of the API.
[[noreturn]] inline void internal_error(const std::string& what) {
  throw std::logic_error("internal error in mbs::sym: " + what);
}

inline uint64_t mix64(uint64_t x) {
  // MurmurHash3's finaliser: full avalanche, cheap.
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

// Open-addressing (linear probing) map from node to V. Keys are never erased; clear() resets.
template <class V>
class NodeMap {
 public:
  explicit NodeMap(size_t expected = 16) { rehash(capacity_for(expected)); }

  size_t size() const { return size_; }

  V* find(Expr key) {
    size_t i = slot(key);
    while (keys_[i] != nullptr) {
      if (keys_[i] == key) return &values_[i].v;
      i = (i + 1) & mask_;
    }
    return nullptr;
  }
  const V* find(Expr key) const { return const_cast<NodeMap*>(this)->find(key); }

  // Inserts (key, value) unless key is present. Returns the stored value and whether it was new.
  // Pointers to values stay valid until the next insertion of a new key.
  std::pair<V*, bool> insert(Expr key, V value) {
    size_t i = slot(key);
    while (keys_[i] != nullptr) {
      if (keys_[i] == key) return {&values_[i].v, false};
      i = (i + 1) & mask_;
    }
    if ((size_ + 1) * 2 > keys_.size()) {
      rehash(keys_.size() * 2);
      i = slot(key);
      while (keys_[i] != nullptr) i = (i + 1) & mask_;
    }
    keys_[i] = key;
    values_[i].v = std::move(value);
    ++size_;
    return {&values_[i].v, true};
  }

  V& operator[](Expr key) { return *insert(key, V{}).first; }

 private:
  static size_t capacity_for(size_t n) { return std::bit_ceil(std::max<size_t>(16, n * 2)); }
  size_t slot(Expr key) const { return mix64(key->hash ^ key->id) & mask_; }

  void rehash(size_t capacity) {
    std::vector<Expr> old_keys(capacity, nullptr);
    std::vector<Slot> old_values(capacity);
    old_keys.swap(keys_);
    old_values.swap(values_);
    mask_ = capacity - 1;
    size_ = 0;
    for (size_t i = 0; i < old_keys.size(); ++i) {
      if (old_keys[i] == nullptr) continue;
      size_t j = slot(old_keys[i]);
      while (keys_[j] != nullptr) j = (j + 1) & mask_;
      keys_[j] = old_keys[i];
      values_[j] = std::move(old_values[i]);
      ++size_;
    }
  }

  struct Slot {  // wrapper so that V = bool does not get std::vector<bool>
    V v{};
  };
  std::vector<Expr> keys_;
  std::vector<Slot> values_;
  size_t size_ = 0;
  size_t mask_ = 0;
};

// Visits every node reachable from `roots` once, children before parents. `enter(node)` is asked
// first: it returns false for a node that must not be visited (already seen or memoised) — the
// node then counts as a leaf and its children are not explored. `leave(node)` runs after all of
// the node's children have been left (or skipped).
template <class Enter, class Leave>
void post_order(std::span<const Expr> roots, Enter&& enter, Leave&& leave) {
  struct Frame {
    Expr node;
    uint32_t next;
  };
  std::vector<Frame> stack;
  for (Expr root : roots) {
    if (!enter(root)) continue;
    stack.push_back({root, 0});
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next < top.node->nargs) {
        Expr child = top.node->args()[top.next++];
        if (enter(child)) stack.push_back({child, 0});
      } else {
        Expr done = top.node;
        stack.pop_back();
        leave(done);
      }
    }
  }
}

inline bool is_integer(double v) {
  return std::isfinite(v) && v == std::trunc(v);
}

// Sign with NaN propagated and signed zeros kept: 1 for x > 0, -1 for x < 0, x otherwise.
inline double sign_of(double x) {
  return x > 0 ? 1.0 : (x < 0 ? -1.0 : x);
}

// The numeric meaning of an op applied to argument values. Add and Mul combine left to right.
inline double apply_op(Op op, const double* a, uint32_t n) {
  auto truth = [](double x) { return x != 0; };  // NaN counts as true (NaN != 0)
  auto boolean = [](bool b) { return b ? 1.0 : 0.0; };
  switch (op) {
    case Op::Const:
    case Op::Symbol:
      internal_error("apply_op on a leaf");
    case Op::Add: {
      double s = a[0];
      for (uint32_t i = 1; i < n; ++i) s += a[i];
      return s;
    }
    case Op::Mul: {
      double p = a[0];
      for (uint32_t i = 1; i < n; ++i) p *= a[i];
      return p;
    }
    case Op::Pow:
      return std::pow(a[0], a[1]);
    case Op::Sin:
      return std::sin(a[0]);
    case Op::Cos:
      return std::cos(a[0]);
    case Op::Tan:
      return std::tan(a[0]);
    case Op::Asin:
      return std::asin(a[0]);
    case Op::Acos:
      return std::acos(a[0]);
    case Op::Atan:
      return std::atan(a[0]);
    case Op::Atan2:
      return std::atan2(a[0], a[1]);
    case Op::Sinh:
      return std::sinh(a[0]);
    case Op::Cosh:
      return std::cosh(a[0]);
    case Op::Tanh:
      return std::tanh(a[0]);
    case Op::Exp:
      return std::exp(a[0]);
    case Op::Log:
      return std::log(a[0]);
    case Op::Log10:
      return std::log10(a[0]);
    case Op::Sqrt:
      return std::sqrt(a[0]);
    case Op::Abs:
      return std::fabs(a[0]);
    case Op::Sign:
      return sign_of(a[0]);
    case Op::Floor:
      return std::floor(a[0]);
    case Op::Min:
      return a[0] < a[1] ? a[0] : a[1];
    case Op::Max:
      return a[0] > a[1] ? a[0] : a[1];
    case Op::Select:
      return truth(a[0]) ? a[1] : a[2];
    case Op::Lt:
      return boolean(a[0] < a[1]);
    case Op::Le:
      return boolean(a[0] <= a[1]);
    case Op::Gt:
      return boolean(a[0] > a[1]);
    case Op::Ge:
      return boolean(a[0] >= a[1]);
    case Op::Eq:
      return boolean(a[0] == a[1]);
    case Op::Ne:
      return boolean(a[0] != a[1]);
    case Op::And:
      return boolean(truth(a[0]) && truth(a[1]));
    case Op::Or:
      return boolean(truth(a[0]) || truth(a[1]));
    case Op::Not:
      return boolean(!truth(a[0]));
    case Op::Cancelled:
      return std::isfinite(a[0]) && a[0] != 0.0 ? 1.0 : std::numeric_limits<double>::quiet_NaN();
  }
  internal_error("apply_op: unknown op");
}

// A vector with inline storage for the first N elements (trivially copyable T only). The
// simplifier builds small temporary lists on every construction; this keeps them off the heap.
template <class T, size_t N>
class SmallVec {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  SmallVec() = default;
  SmallVec(const SmallVec&) = delete;
  SmallVec& operator=(const SmallVec&) = delete;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return heap_.empty() ? inline_ : heap_.data(); }
  const T* data() const { return heap_.empty() ? inline_ : heap_.data(); }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T& back() { return data()[size_ - 1]; }
  void clear() { size_ = 0; }
  void resize(size_t n) {
    reserve(n);
    size_ = n;
  }
  void push_back(const T& v) {
    if (size_ == capacity()) reserve(size_ * 2);
    data()[size_++] = v;
  }
  operator std::span<const T>() const { return {data(), size_}; }

 private:
  size_t capacity() const { return heap_.empty() ? N : heap_.size(); }
  void reserve(size_t n) {
    if (n <= capacity()) return;
    std::vector<T> grown(std::max(n, 2 * N));
    std::memcpy(grown.data(), data(), size_ * sizeof(T));
    heap_.swap(grown);
  }

  T inline_[N];
  std::vector<T> heap_;
  size_t size_ = 0;
};

}  // namespace mbs::sym::detail
