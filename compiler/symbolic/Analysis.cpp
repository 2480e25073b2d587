// Graph walks over the DAG: topological order, dependence, substitution, Jacobian sparsity,
// evaluation. Each walk visits every reachable node once (linear in the DAG size).
#include <algorithm>
#include <string>
#include <vector>

#include "compiler/symbolic/Expr.h"
#include "compiler/symbolic/ExprInternal.h"

namespace mbs::sym {

using detail::NodeMap;
using detail::post_order;

std::vector<Expr> topological_order(std::span<const Expr> roots) {
  std::vector<Expr> order;
  NodeMap<bool> seen;
  post_order(
      roots, [&](Expr n) { return seen.insert(n, true).second; },
      [&](Expr n) { order.push_back(n); });
  return order;
}

bool depends_on(Expr e, uint32_t symbol) {
  // Explicit stack with early exit as soon as the symbol is found.
  NodeMap<bool> seen;
  std::vector<Expr> stack{e};
  seen.insert(e, true);
  while (!stack.empty()) {
    Expr n = stack.back();
    stack.pop_back();
    if (n->is_symbol() && n->symbol == symbol) return true;
    for (Expr c : n->children()) {
      if (seen.insert(c, true).second) stack.push_back(c);
    }
  }
  return false;
}

std::vector<uint32_t> free_symbols(Expr e) {
  std::vector<uint32_t> symbols;
  NodeMap<bool> seen;
  const Expr root[1] = {e};
  post_order(
      root, [&](Expr n) { return seen.insert(n, true).second; },
      [&](Expr n) {
        if (n->is_symbol()) symbols.push_back(n->symbol);
      });
  std::sort(symbols.begin(), symbols.end());
  return symbols;  // each symbol node is unique, so there are no duplicates
}

Substituter::Substituter(Context& cx, const std::unordered_map<uint32_t, Expr>& replacement)
    : cx_(cx), replacement_(replacement), memo_(std::make_unique<NodeMap<Expr>>()) {}
Substituter::Substituter(Substituter&&) noexcept = default;
Substituter::~Substituter() = default;

Expr Substituter::operator()(Expr e) {
  if (replacement_.empty()) return e;
  NodeMap<Expr>& memo = *memo_;
  if (const Expr* known = memo.find(e)) return *known;
  const Expr root[1] = {e};
  post_order(
      root, [&](Expr n) { return memo.find(n) == nullptr; },
      [&](Expr n) {
        Expr result = n;
        if (n->is_symbol()) {
          if (auto it = replacement_.find(n->symbol); it != replacement_.end()) result = it->second;
        } else if (n->nargs > 0) {
          args_.clear();
          bool changed = false;
          for (Expr c : n->children()) {
            Expr r = *memo.find(c);
            changed |= r != c;
            args_.push_back(r);
          }
          if (changed) result = cx_.make(n->op, args_);
        }
        memo.insert(n, result);
      });
  return *memo.find(e);
}

Expr substitute(Context& cx, Expr e, const std::unordered_map<uint32_t, Expr>& replacement) {
  return Substituter(cx, replacement)(e);
}

Pattern jacobian_pattern(std::span<const Expr> functions, std::span<const uint32_t> symbols) {
  Pattern p;
  p.rows = static_cast<int32_t>(functions.size());
  p.cols = static_cast<int32_t>(symbols.size());
  uint32_t max_symbol = 0;
  for (uint32_t s : symbols) max_symbol = std::max(max_symbol, s);
  std::vector<int32_t> column_of(symbols.empty() ? 0 : max_symbol + 1, -1);
  for (size_t j = 0; j < symbols.size(); ++j) {
    if (column_of[symbols[j]] >= 0) {
      detail::internal_error("jacobian_pattern: symbol " + std::to_string(symbols[j]) +
                             " is given twice (columns " + std::to_string(column_of[symbols[j]]) +
                             " and " + std::to_string(j) + ")");
    }
    column_of[symbols[j]] = static_cast<int32_t>(j);
  }

  // One walk per function; `stamp` marks the nodes seen in the current walk without clearing.
  NodeMap<uint32_t> stamp;
  std::vector<std::pair<int32_t, int32_t>> entries;  // (col, row), rows ascending
  std::vector<Expr> stack;
  for (size_t i = 0; i < functions.size(); ++i) {
    auto row = static_cast<int32_t>(i);
    auto mark = static_cast<uint32_t>(i + 1);
    auto visit = [&](Expr n) {
      auto [v, fresh] = stamp.insert(n, mark);
      if (!fresh && *v == mark) return false;
      *v = mark;
      return true;
    };
    stack.clear();
    if (visit(functions[i])) stack.push_back(functions[i]);
    while (!stack.empty()) {
      Expr n = stack.back();
      stack.pop_back();
      if (n->is_symbol()) {
        if (n->symbol < column_of.size() && column_of[n->symbol] >= 0) {
          entries.emplace_back(column_of[n->symbol], row);
        }
        continue;
      }
      for (Expr c : n->children()) {
        if (visit(c)) stack.push_back(c);
      }
    }
  }
  // Compressed-column order: stable sort by column keeps rows ascending within a column, but
  // entries of one row were found in walk order, so sort by (col, row) outright.
  std::sort(entries.begin(), entries.end());
  p.row.reserve(entries.size());
  p.col.reserve(entries.size());
  for (auto [c, r] : entries) {
    p.col.push_back(c);
    p.row.push_back(r);
  }
  return p;
}

double evaluate(Expr e, std::span<const double> symbol_values) {
  double out = 0.0;
  const Expr root[1] = {e};
  evaluate(root, symbol_values, {&out, 1});
  return out;
}

void evaluate(std::span<const Expr> roots, std::span<const double> symbol_values,
              std::span<double> out) {
  if (out.size() < roots.size()) {
    detail::internal_error("evaluate: " + std::to_string(roots.size()) + " roots but room for " +
                           std::to_string(out.size()) + " values");
  }
  NodeMap<double> value;
  std::vector<double> args;
  post_order(
      roots, [&](Expr n) { return value.find(n) == nullptr; },
      [&](Expr n) {
        double v;
        if (n->is_const()) {
          v = n->value;
        } else if (n->is_symbol()) {
          if (n->symbol >= symbol_values.size()) {
            detail::internal_error("evaluate: no value for symbol " + std::to_string(n->symbol) +
                                   " (" + std::to_string(symbol_values.size()) + " given)");
          }
          v = symbol_values[n->symbol];
        } else {
          args.resize(n->nargs);
          for (uint32_t i = 0; i < n->nargs; ++i) args[i] = *value.find(n->args()[i]);
          v = detail::apply_op(n->op, args.data(), n->nargs);
        }
        value.insert(n, v);
      });
  for (size_t i = 0; i < roots.size(); ++i) out[i] = *value.find(roots[i]);
}

}  // namespace mbs::sym
