#include "runtime/solvers/Explicit.h"

#include <string>

#include "runtime/solvers/Rk4.h"

namespace mbs::rt {

std::unique_ptr<Integrator> make_explicit_integrator(std::shared_ptr<const CompiledModel> model,
                                                     const SolverOptions& options) {
  if (options.solver == SolverKind::Rk44) return std::make_unique<Rk4>(model, options);
  throw SolverSetupError(std::string("the solver '") + std::string(solver_name(options.solver)) +
                         "' is not available yet");
}

}  // namespace mbs::rt
