// The multibody lowering pass: FlatModel with built-in mechanics elements -> FlatModel with their
// equations of motion, loop-closure constraints, force laws and sensor outputs as ordinary
// equations (docs/mechanics.md, "How a mechanism becomes equations").
//
//  1. graph   frames joined by connect() are one node; joints and rigid offsets are edges
//  2. tree    a spanning tree rooted at the World (rigid edges first, then joints in declaration
//             order; joints marked `cut = true` and every edge that would close a cycle are cut)
//  3. paths   every node's pose is the product of the step transforms along its path from the
//             world; velocities and accelerations follow by the product rule, each step's
//             derivative through its constant generator (axis)
//  4. loads   bodies, force elements, efforts and springs of joints, reactions of cut joints
//  5. EOM     Newton-Euler balances accumulated from the leaves to the root, projected on each
//             joint coordinate's partial velocities (Kane's equations): M(q) q'' + h + G^T l = Q
//  6. closure each cut joint constrains the relative transform of its two frames; the residual
//             rows are differentiated symbolically by the DAE pass
//  7. assembly the coordinates are solved from the closure equations at the start (Newton), the
//             velocities made consistent, and closure rows that are redundant at the assembled
//             configuration are removed (rank test), with a warning naming them
#pragma once

#include <iosfwd>

#include "compiler/diag/Diagnostics.h"
#include "compiler/flatten/FlatModel.h"
#include "compiler/symbolic/Expr.h"

namespace mbs {

struct MechOptions {
  // Trees deeper than this keep each body's twist, acceleration and wrench as unknowns of the
  // DAE (recursive form, kernels linear in the number of bodies); shallower ones are condensed
  // by the DAE pass's elimination into M(q) q'' + h = Q. -1: choose automatically.
  int recursive_depth = -1;
  // Add outputs <joint>.reaction_f[3] and .reaction_t[3] for every joint: the wrench frame_a's
  // side exerts on frame_b's side (reaction plus effort), about frame_b's origin, frame_a axes.
  bool reactions = false;
  // For inverse dynamics: keep closure rows that are redundant (their multipliers then have a
  // nullspace that the uniqueness analysis finds), keep the efforts of prescribed joints as
  // unknowns, and add the reaction outputs.
  bool inverse_dynamics = false;
  // The start assembly makes the velocities that are not fixed consistent (minimum-norm change);
  // false leaves them to the compiler's mass-weighted projection
  // (CompileOptions::project_start_velocities).
  bool assemble_velocities = true;
  // The shapes of the animation (FlatModel::shapes, compiler/mech/Shapes.h) and the poses of
  // their frames as outputs of role ShapePose.
  bool animation = false;
};

// Lowers the elements of flat.mech_elements. Returns false when errors were reported. When
// `emit` is given, prints the graph, the tree, the loops and the assembly result to it.
bool lower_mechanics(FlatModel& flat, sym::Context& cx, DerivativeTable& ders,
                     const MechOptions& options, DiagnosticEngine& diags, std::ostream* emit);

}  // namespace mbs
