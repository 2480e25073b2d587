// The classical fourth-order Runge-Kutta method is the rk44 tableau of the explicit Runge-Kutta
// family (SolverKind::Rk4 == SolverKind::Rk44); this header only forwards to it.
#pragma once

#include "runtime/solvers/Explicit.h"
