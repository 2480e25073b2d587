// The explicit Runge-Kutta family (euler, midpoint, rk33, rk44, rk6, ode23, dopri5).
#pragma once

#include <memory>

#include "runtime/solvers/Integrator.h"

namespace mbs::rt {

// Creates the explicit integrator for options.solver (is_explicit(options.solver) must hold).
// Throws SolverSetupError when the model has algebraic equations the method cannot handle.
std::unique_ptr<Integrator> make_explicit_integrator(std::shared_ptr<const CompiledModel> model,
                                                     const SolverOptions& options);

}  // namespace mbs::rt
