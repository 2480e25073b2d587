#include "compiler/flatten/FlatModel.h"

#include <ostream>

namespace mbs {

uint32_t DerivativeTable::der(uint32_t s) {
  if (has_der(s)) return der_[s];
  uint32_t d = cx_.new_symbol("der(" + cx_.symbol_name(s) + ")");
  if (s >= der_.size()) der_.resize(s + 1, kNone);
  der_[s] = d;
  if (d >= inv_.size()) inv_.resize(d + 1, kNone);
  inv_[d] = s;
  return d;
}

int64_t DerivativeTable::integral_of(uint32_t s) const {
  return s < inv_.size() && inv_[s] != kNone ? static_cast<int64_t>(inv_[s]) : -1;
}

sym::Expr DerivativeTable::total_derivative(sym::Expr e) {
  std::vector<sym::Expr> terms;
  for (uint32_t s : sym::free_symbols(e)) {
    if (is_constant(s)) continue;
    sym::Expr d = sym::diff(cx_, e, s);
    if (d->is_const(0.0)) continue;
    if (static_cast<int64_t>(s) == time_) {
      terms.push_back(d);
      continue;
    }
    terms.push_back(cx_.mul(d, cx_.symbol(der(s))));
  }
  return cx_.add(std::span<const sym::Expr>(terms));
}

void append_without_indices(std::string_view path, std::string& out) {
  int depth = 0;
  for (char c : path) {
    if (c == ']') --depth;
    if (depth == 0) out.push_back(c);
    if (c == '[') ++depth;
  }
}

void print_flat_model(std::ostream& os, const sym::Context& cx, const FlatModel& m) {
  os << "flat model " << m.name << "\n";
  size_t nvar = 0, npar = 0, ninput = 0, ndiscrete = 0;
  for (const auto& v : m.vars)
    (v.role == VarRole::Variable   ? nvar
     : v.role == VarRole::Input    ? ninput
     : v.role == VarRole::Discrete ? ndiscrete
                                   : npar)++;
  os << "  " << nvar << " variables, " << npar << " parameters/constants, ";
  if (ninput > 0) os << ninput << " inputs, ";
  if (ndiscrete > 0) os << ndiscrete << " discrete, ";
  os << m.equations.size() << " equations\n";
  static const char* types[] = {"Real", "Integer", "Boolean"};
  for (const auto& v : m.vars) {
    os << "  "
       << (v.role == VarRole::Parameter  ? "parameter "
           : v.role == VarRole::Constant ? "constant "
           : v.role == VarRole::Input    ? "input "
           : v.role == VarRole::Discrete ? "discrete "
                                         : "")
       << (v.flow ? "flow " : "") << types[static_cast<int>(v.type)] << " " << v.name;
    if (v.binding) os << " = " << sym::to_string(cx, v.binding);
    if (v.start)
      os << " (start = " << sym::to_string(cx, v.start)
         << (v.fixed         ? ", fixed"
             : v.fixed_given ? ", free"
                             : "")
         << ")";
    if (!v.unit.empty()) os << " [" << v.unit << "]";
    if (v.span.valid()) os << "  @" << v.span.line << ":" << v.span.col;
    os << "\n";
  }
  os << "equations\n";
  for (const auto& e : m.equations) {
    os << "  0 = " << sym::to_string(cx, e.residual);
    if (e.span.valid()) os << "  @" << e.span.line << ":" << e.span.col;
    os << "\n";
  }
  if (!m.initial_equations.empty()) os << "initial equations\n";
  for (const auto& e : m.initial_equations) {
    os << "  0 = " << sym::to_string(cx, e.residual);
    if (e.span.valid()) os << "  @" << e.span.line << ":" << e.span.col;
    os << "\n";
  }
  for (const auto& w : m.whens) {
    for (size_t b = 0; b < w.branches.size(); ++b) {
      const auto& br = w.branches[b];
      os << (b == 0 ? "when " : "elsewhen ") << sym::to_string(cx, br.condition);
      if (b == 0 && w.span.valid()) os << "  @" << w.span.line << ":" << w.span.col;
      os << "\n";
      for (const auto& a : br.assigns)
        os << "  " << cx.symbol_name(a.var) << " := " << sym::to_string(cx, a.value) << "\n";
      for (const auto& r : br.reinits)
        os << "  reinit(" << cx.symbol_name(r.var) << ", " << sym::to_string(cx, r.value) << ")\n";
    }
  }
}

}  // namespace mbs
