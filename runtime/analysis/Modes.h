// Eigenmodes of a linearised (constrained) second-order system.
//
// With the linearised dynamic rows  M dqdd + D dqd + K dq + B dz = 0  and the position-level
// constraint rows  G dq = 0  (see Linearize.h), the motion is restricted to dq = N xi with N an
// orthonormal basis of null(G), and the multipliers are eliminated by projecting the dynamic rows
// with L, an orthonormal basis of the left null space of B (L^T B = 0):
//
//   Mr xi'' + Dr xi' + Kr xi = 0,   Mr = L^T M N, Dr = L^T D N, Kr = L^T K N.
//
// Both bases come from an SVD; a singular value counts as nonzero if it exceeds
// max(rows, cols) * eps * (largest singular value) (the usual numerical rank). The quadratic
// eigenproblem (lambda^2 Mr + lambda Dr + Kr) xi = 0 is solved in companion form: with Mr
// invertible as the standard eigenproblem of [0 I; -Mr^-1 Kr  -Mr^-1 Dr], otherwise as the
// generalized problem ([0 I; -Kr -Dr], [I 0; 0 Mr]) whose infinite eigenvalues are dropped.
//
// A Mode is one eigenvalue lambda with Im(lambda) >= 0: a complex-conjugate pair is reported once
// (by its member with positive imaginary part), a real eigenvalue by itself.
//   frequency_hz  = |Im lambda| / (2 pi): the damped natural frequency (0 for real eigenvalues);
//                   the undamped one is |lambda| / (2 pi), printed by format_modes too
//   damping_ratio = -Re lambda / |lambda|  (NaN for lambda = 0, a rigid-body mode)
// Modes are sorted by frequency_hz, then by |lambda|.
//
// Not handled (an error message instead): ODE1 coordinates (n_y > 0), velocity-level
// constraints, algebraic variables that are not Lagrange multipliers (an Algebraic-level
// equation), and projections that are not square (rank(B) != rank(G)).
#pragma once

#include <complex>
#include <string>
#include <vector>

#include "runtime/analysis/Linearize.h"

namespace mbs::rt {

struct Mode {
  std::complex<double> lambda;
  double frequency_hz = 0.0;
  double damping_ratio = 0.0;
};

// The modes of `s`; on error an empty vector and *error set (if not null) to the reason.
std::vector<Mode> eigenmodes(const LinearSystem& s, std::string* error);

// A table with one line per mode: number, Re and Im of lambda, damped and undamped frequency in
// Hz, damping ratio.
std::string format_modes(const std::vector<Mode>& modes);

}  // namespace mbs::rt
