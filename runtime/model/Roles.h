// What an equation or an output of a compiled model is for, as the runtime needs to know it:
// written by the compiler's passes (compiler/mech for a mechanism), carried through the DAE into
// rt::CompiledModel, so that no part of the runtime recognises rows or outputs by their text.
#pragma once

#include <cstdint>

namespace mbs::rt {

enum class EquationRole : uint8_t {
  Model,           // an equation of the user's model, or one the compiler derived from it
  Motion,          // a mechanism's equation of motion along one tree coordinate
  Closure,         // a closure row of a cut joint (CompiledModel::eq_subject: the joint)
  Trajectory,      // q = <q>_trajectory: a prescribed coordinate driven at run time (eq_subject: q,
                   // eq_param_slot: the parameter)
  UnitQuaternion,  // Q.Q - 1 = 0 of a Spherical or FreeMotion joint in its quaternion form
};

// How an equation's row is scaled in the Newton matrix of an implicit solver. A position-level
// constraint (depends on q but not on qd, qdd, yd) has a row of size O(h^2); a velocity-level one
// O(h). Scaling those rows by 1/(beta' h^2) and 1/(gamma' h) keeps the Newton matrix O(1).
enum class EquationLevel : uint8_t { Dynamic, Velocity, Position, Algebraic };

enum class OutputRole : uint8_t {
  Variable,                  // a model variable
  JointWrench,               // <joint>.reaction_f[k] / reaction_t[k]
  SensorWrench,              // a CutForceTorque sensor's f[k] / t[k]
  ClosureCheck,              // a redundant closure row's residual (inverse dynamics)
  ClosureCheckVelocity,      // its first time derivative
  ClosureCheckAcceleration,  // its second time derivative
  ShapePose,                 // a frame's pose for the animation (CompiledModel::shape_frames)
};

}  // namespace mbs::rt
