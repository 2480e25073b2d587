// Initial assembly of a mechanism at compile time: the tree coordinates are solved from the
// position constraints for the given start values, the velocities made consistent with the
// differentiated constraints, and closure rows that are redundant at the assembled configuration
// are found by a rank test.
#pragma once

#include <string>
#include <vector>

#include "compiler/diag/Diagnostics.h"
#include "compiler/flatten/FlatModel.h"
#include "compiler/mech/Vec.h"
#include "compiler/symbolic/Expr.h"

namespace mbs::mech {

// One position-level constraint row of the mechanism.
struct ClosureRow {
  sym::Expr residual = nullptr;
  std::string joint;  // the cut joint (or quaternion joint) it belongs to
  std::string what;   // e.g. "position along x"
  Span span;
  V3 force{}, torque{};  // reaction direction on node_b per unit multiplier, frame of node_a
  int node_a = -1, node_b = -1;
  int loop = 0;            // 1-based loop number (0: not a loop row)
  bool user = false;       // a plain equation of the model (prescribed motion)
  int quaternion_of = -1;  // element index for the unit-quaternion row
  int quaternion_offset = 0;
  uint32_t multiplier = 0;  // its Lagrange multiplier (0: removed as redundant)
};

struct AssemblyCoord {
  uint32_t q = 0, dq = 0;      // coordinate and der(coordinate) symbols
  int var = -1, vel_var = -1;  // flat vars holding their start values
};

// Solves for the start values (written back to the FlatVars' `start`) and decides which rows
// are kept (keep[i] for rows[i]). `extra` rows (the model's own equations in the coordinates)
// must hold too but are never removed. Returns false when errors were reported.
bool assemble_mechanism(FlatModel& flat, sym::Context& cx, DerivativeTable& ders,
                        const std::vector<AssemblyCoord>& coords,
                        const std::vector<ClosureRow>& rows, const std::vector<ClosureRow>& extra,
                        DiagnosticEngine& diags, std::vector<bool>& keep,
                        bool remove_redundant = true, bool assemble_velocities = true);

}  // namespace mbs::mech
