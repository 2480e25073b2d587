// The initialization problem at t0: the start values declared `fixed = false` (free starts) are
// solved together with the initial equations, the constraints and the equations of motion, so
// that a model can start "at rest in static equilibrium" (der(der(q)) = 0) or "with the tip at
// this height" (docs/language.md, "Initial equations").
//
// Unknowns: the free starts (positions, velocities, first-order states) and every highest
// derivative and algebraic variable [qdd | yd | z]. Equations: the index-reduced system the
// solvers start from (SymbolicDae's init_residual rows), the position- and velocity-level
// constraints themselves and the velocity form of the position-level ones (those rows that
// contain a free start; the others stay checks of the fixed starts, reported by the driver as
// before), and the initial equations. On the expression interpreter, as the mechanism's start
// assembly (compiler/mech/Assembly.cpp): [qdd | yd | z] by Newton on the index-reduced rows,
// the free starts by reduced Gauss-Newton with minimum-norm steps (Initial.cpp), with a
// homotopy when that fails. The system may be over-determined but consistent (a constraint that
// the fixed starts already satisfy), and a free start that nothing determines keeps its start
// value, with a warning.
#pragma once

#include <vector>

#include "compiler/dae/Dae.h"
#include "compiler/diag/Diagnostics.h"
#include "compiler/flatten/FlatModel.h"
#include "compiler/symbolic/Expr.h"

namespace mbs {

// Whether the model has an initialization problem beyond its start values: initial equations
// or free starts.
bool has_initial_problem(const SymbolicDae& dae);

// The parameters the initial solve reads (its rows' free symbols that are parameters of `flat`):
// the solved start values are numbers of the compiled model, so these are compile-time.
void mark_initial_parameters(const SymbolicDae& dae, FlatModel& flat);

// Solves the initialization problem in `v` (the symbol vector: parameters, inputs and start
// values filled; the solution is written to the slots of the free starts, of [qdd | yd | z] and
// of der(q) and der(y)). `t0` is the start time, in v[dae.time_symbol]. Returns false after
// reporting initial_failed; warns initial_not_determined for free starts nothing determines.
bool solve_initial_problem(const SymbolicDae& dae, sym::Context& cx, std::vector<double>& v,
                           DiagnosticEngine& diags);

}  // namespace mbs
