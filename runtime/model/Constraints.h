// The position-level constraints of a compiled model (the closure rows of a mechanism's loops,
// unit-quaternion rows, prescribed motions) and their symbolic derivatives, as the runtime sees
// them: for the rows i with eq_level[i] == Position,
//   g(q, t)            the residual                         (constraint_g)
//   G = dg/dq          the closure Jacobian, n_rows x n_q   (constraint_G)
//   dg/dt = G qd + g_t the velocity form                    (constraint_gd)
//   gamma              the acceleration bias: d2g/dt2 = G qdd + gamma   (constraint_gamma)
// (a model without those kernels is served from the rows of residual, jac_q, index2_residual and
// init_residual at qdd = 0)
// All four are JIT-compiled from the exact expressions; nothing here differentiates numerically.
// Inverse dynamics splits G's columns into active and passive coordinates.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/model/CompiledModel.h"

namespace mbs::rt {

class ConstraintKinematics {
 public:
  explicit ConstraintKinematics(const CompiledModel& model);

  // Equation indices of the position-level rows, in equation order.
  const std::vector<int32_t>& rows() const { return rows_; }
  int32_t n_rows() const { return static_cast<int32_t>(rows_.size()); }
  // The structure of G: per row, the coordinates it depends on (structural non-zeros).
  std::vector<std::vector<int32_t>> row_columns() const;

  // Each reads the symbol vector v (q, qd, qdd, t and parameters in their slots) and writes
  // n_rows values (jacobian: n_rows x n_q, row-major). Return: 0, or the kernel's status.
  int32_t position(const double* v, std::span<double> g);
  int32_t jacobian(const double* v, std::span<double> G);
  int32_t velocity(const double* v, std::span<double> gd);
  // gamma: evaluated with v's qdd slots treated as zero (v itself is not changed).
  int32_t bias(const double* v, std::span<double> gamma);

 private:
  const CompiledModel& m_;
  std::vector<int32_t> rows_;
  std::vector<int32_t> row_of_eq_;  // equation -> position in rows_, or -1
  bool own_ = false;                // the model's constraint_* kernels are used
  std::vector<double> f_, jac_, v_;
};

// Whether the model's equations are equations of motion with position-level constraints and
// their multipliers only: dynamic and position rows, no ODE1 states (the system of
// project_velocities_by_impulse is then square). The rows need not pair up one to one: the DAE
// pass may have eliminated a coordinate through a constraint (a slider-crank keeps one closure
// row and two multipliers), so that a dynamic row determines a multiplier.
bool impulse_form(const CompiledModel& m);

// Makes the velocities in v consistent with the position-level constraints by an impulse of the
// constraint forces: the equations of motion integrated over an instant give
//   M dqd + (dF/dz) Lambda = 0  (the dynamic rows; Lambda the impulse of the multipliers),
// and the velocity form of the constraints holds afterwards, G (qd + dqd) + g_t = 0. For a
// mechanism this is the mass-weighted projection of the velocities on the constraints. The
// coordinates in `keep` keep their velocities (each adds dqd_j = 0 with a multiplier of its own:
// the impulse of a force that holds it). Adds dqd to v's qd slots. Returns "" when done (also
// for a model without constraints), else why it could not be done (the model is not of
// impulse_form, a kernel failed, the system is singular). Used after a reinit at an event
// (Integrator) and for --project-start-velocities (the compiler).
std::string project_velocities_by_impulse(const CompiledModel& m, std::span<double> v,
                                          std::span<const int32_t> keep = {});

// Moves the coordinates in v onto the position-level constraints g(q, t) = 0 by Newton steps of
// the same system: dF/dqdd dq + dF/dz mu = 0, G dq = -g (for a mechanism the mass-weighted
// least change of the coordinates), the coordinates in `keep` held, until |g| <= 1e-13
// max(1, |q|), at most kProjectionIterations steps. Adds dq to v's q slots (the velocities are
// left to project_velocities_by_impulse, which must follow: G has changed). Returns "" or why
// it could not be done. Used after a reinit of coordinates at an event (Integrator).
inline constexpr int kProjectionIterations = 20;
std::string project_positions(const CompiledModel& m, std::span<double> v,
                              std::span<const int32_t> keep = {});

}  // namespace mbs::rt
