// The mutable buffers of one run on a CompiledModel (Pinocchio's Data to the model's Model).
//
// One Workspace per run or thread: the model stays immutable and shareable, everything a solver
// writes lives here. All buffers are sized once, at construction, from the model; solvers index
// them and never resize them, so nothing allocates inside a step. Integrators keep their
// method-specific state (Newmark history, Runge-Kutta stages) next to their Workspace, also sized
// once at creation.
#pragma once

#include <cstddef>
#include <vector>

#include "runtime/model/CompiledModel.h"

namespace mbs::rt {

struct Workspace {
  std::vector<double> v;              // the symbol vector every kernel reads; starts as model.v0
  std::vector<double> residual;       // n_eq: F(v), or the init residual
  std::vector<double> newton_values;  // newton_matrix.nnz(): values of the Newton matrix
  std::vector<double> init_values;    // init_matrix.nnz(): values of the init matrix
  std::vector<double> x;              // n_eq unknowns [qdd | yd | z] of the current iterate
  std::vector<double> dx;             // n_eq Newton update
  std::vector<double> outputs;        // outputs.n_out values for result files

  Workspace() = default;
  explicit Workspace(const CompiledModel& m)
      : v(m.v0),
        residual(static_cast<size_t>(m.n_eq()), 0.0),
        newton_values(static_cast<size_t>(m.newton_matrix.nnz()), 0.0),
        init_values(static_cast<size_t>(m.init_matrix.nnz()), 0.0),
        x(static_cast<size_t>(m.n_eq()), 0.0),
        dx(static_cast<size_t>(m.n_eq()), 0.0),
        outputs(static_cast<size_t>(m.outputs.n_out > 0 ? m.outputs.n_out : 0), 0.0) {}
};

}  // namespace mbs::rt
