// SymbolicDAE: the flat model sorted into what the solvers assume (seed 002, eq. (34)):
//   ODE2 coordinates q (their second derivative appears), ODE1 coordinates y (first derivative),
//   algebraic variables z (no derivative), equations F(qdd, yd, q, qd, y, z, t) = 0 linear in the
//   highest derivatives, one per unknown, proven structurally regular by a bipartite matching.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "compiler/diag/Diagnostics.h"
#include "compiler/flatten/FlatModel.h"
#include "compiler/symbolic/Expr.h"
#include "runtime/model/CompiledModel.h"

namespace mbs {

enum class UnknownKind : uint8_t { ODE2, ODE1, Algebraic };

struct DaeUnknown {
  std::string name;
  UnknownKind kind = UnknownKind::Algebraic;
  uint32_t symbol = 0;            // the variable itself
  uint32_t d1 = 0;                // der(x)        (ODE2, ODE1)
  uint32_t d2 = 0;                // der(der(x))   (ODE2)
  sym::Expr start = nullptr;      // initial value (or null: 0)
  sym::Expr start_der = nullptr;  // ODE2: initial velocity (or null: 0)
  // the start value is free (declared `fixed = false`, on the variable or on an alias of it):
  // solved at t0 with the initial equations and the constraints (compiler/dae/Initial.h)
  bool free_start = false;
  bool free_start_der = false;    // ODE2: the velocity's start (on der(x) or its alias)
  Span free_span, free_der_span;  // where they were declared free (the start value's modifier)
  bool fixed_start_der = false;   // ODE2: the velocity's start is declared fixed = true
  Span span;
};

// An `initial equation`: holds at the start only (FlatModel::initial_equations, resolved in the
// unknowns: q, der(q), der(der(q)), y, der(y), z, parameters, inputs and time).
struct DaeInitialEquation {
  sym::Expr residual;
  Span span;
  std::string text;
};

struct DaeEquation {
  sym::Expr residual;
  Span span;
  std::string text;
  rt::EquationLevel level = rt::EquationLevel::Dynamic;
  sym::Expr init_residual = nullptr;                // index-reduced form for initial accelerations
  sym::Expr velocity_residual = nullptr;            // position-level: its first time derivative
  rt::EquationRole role = rt::EquationRole::Model;  // FlatEquation's
  uint32_t group = 0;  // FlatEquation::group (0 for the equations the pass adds)
  int64_t param = -1;
  std::string subject;
};

struct DaeOutput {
  std::string name;
  sym::Expr value;
  rt::OutputRole role = rt::OutputRole::Variable;
  Span declared;                  // the variable's declaration
  int32_t eliminated = -1;        // its entry in SymbolicDae::eliminated, or -1 (a solved unknown)
  std::string unit, description;  // the variable's own declaration (an alias keeps its own)
  bool interface_output = false;  // declared `output` in the model itself (FlatVar::output)
};

struct Elimination {
  std::string name;
  sym::Expr value;
  std::string how;   // "alias", "derivative alias", "explicit"
  Span span;         // the equation used
  std::string text;  // that equation as written
};

// reinit(x, e) of a when-branch, x resolved to a state: the state's symbol (a q, der(q) or y)
// takes value / scale (x = scale * that symbol: an alias, possibly negated).
struct DaeReinit {
  uint32_t state = 0;
  double scale = 1.0;
  bool discrete = false;      // an assignment `x = e` of a discrete variable (state: x itself)
  sym::Expr value = nullptr;  // in the unknowns, eliminations substituted
  std::string name;           // x as written in the model
  Span span;
  std::string text;
};

struct DaeWhenBranch {
  sym::Expr condition = nullptr;  // in the unknowns, eliminations substituted (1.0 / 0.0)
  Span condition_span;
  std::string condition_text;
  std::vector<DaeReinit> reinits;
};

struct DaeWhen {
  std::vector<DaeWhenBranch> branches;
  Span span;
};

struct SymbolicDae {
  std::string name;
  uint32_t time_symbol = 0;
  std::vector<DaeUnknown> q, y, z;
  std::vector<DaeEquation> equations;  // n_q + n_y + n_z
  std::vector<Elimination> eliminated;
  std::vector<DaeOutput> outputs;                     // every model variable, declaration order
  std::vector<DaeWhen> whens;                         // FlatModel's, resolved
  std::vector<DaeInitialEquation> initial_equations;  // FlatModel's, resolved
  std::vector<sym::Expr> no_event;                    // FlatModel's, resolved
  std::vector<uint32_t> parameters;  // parameter symbols (values: FlatModel bindings)
  std::vector<uint32_t> discretes;   // discrete variables (values: FlatVar::value at the start)
  std::vector<std::pair<uint32_t, uint32_t>> pre_symbols;  // FlatModel's
  int64_t initial_symbol = -1, terminal_symbol = -1;       // FlatModel's
  BodyBalance body_balance;  // inverse dynamics: FlatModel's, eliminations substituted
};

// Builds the DAE: alias and explicit-auxiliary elimination, order reduction of derivatives above
// two, classification, linearity check, matching, equation levels and the index-reduced initial
// system. Returns nullopt when errors were reported. The flat model's equations are consumed:
// their texts and subjects move into the pass's own equations and they are emptied at its start
// (a model of 10^5 equations held them until the end of the pass, at its peak of memory); the
// rest of the flat model is only read.
std::optional<SymbolicDae> build_dae(FlatModel& flat, sym::Context& cx, DerivativeTable& ders,
                                     DiagnosticEngine& diags);

void print_dae(std::ostream& os, const sym::Context& cx, const SymbolicDae& dae);

// Maximum-cardinality bipartite matching (rows to columns). adjacency[r] lists the columns of
// row r. Returns match_of_row (column or -1). A perfect matching comes from hopcroft_karp; when
// there is none, the matching is the one of a greedy start and depth-first augmenting paths in
// row order (O(V E), but deterministic in what it leaves free, which the diagnostics name).
std::vector<int> bipartite_matching(const std::vector<std::vector<int>>& adjacency, int n_cols);

// A maximum matching by Hopcroft and Karp, O(E sqrt(V)); the same result format.
std::vector<int> hopcroft_karp(const std::vector<std::vector<int>>& adjacency, int n_cols);

}  // namespace mbs
