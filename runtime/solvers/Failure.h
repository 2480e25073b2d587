// Why a solver stopped: one table of failure kinds with their messages and hints, and the
// failure record a run leaves behind. Every record carries t and h and, where the failure can be
// traced, the model equation and unknown involved with their .mbs source.
#pragma once

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>

#include "runtime/model/CompiledModel.h"

namespace mbs::rt {

// X(kind, summary, hint)
#define MBS_SOLVER_FAILURES(X)                                                                   \
  X(NonFiniteResidual, "a residual is not finite (NaN or Inf)",                                  \
    "look in that equation for a division by zero or a sqrt, log, pow or asin of an argument "   \
    "outside its domain; if it only happens for large steps, a smaller --step avoids it")        \
  X(NonFiniteJacobian, "an entry of the Newton matrix is not finite (NaN or Inf)",               \
    "a derivative of that equation is not finite there, e.g. sqrt(x) at x = 0 or abs at a kink") \
  X(SingularMatrix, "the Newton matrix is singular",                                             \
    "the equations do not determine that unknown at this point: a redundant or conflicting "     \
    "constraint, a zero mass or inertia, or a mechanism in a singular position")                 \
  X(NewtonDiverged, "the Newton iteration diverged",                                             \
    "the step may be too large for the dynamics (try a smaller --step), or the state is far "    \
    "from a solution (check that the initial positions satisfy the constraints)")                \
  X(NewtonMaxIterations, "the Newton iteration did not converge within --newton-max-iter steps", \
    "try a smaller --step, looser --rtol/--atol or a larger --newton-max-iter")                  \
  X(ErrorTestFailed, "the local error estimate stays above the tolerance at the smallest step",  \
    "the solution changes faster than --h-min allows at this tolerance: loosen --rtol/--atol, "  \
    "lower --h-min, or use an implicit solver if the model is stiff")                            \
  X(KernelFatal, "a model function reported a fatal error",                                      \
    "this is not recoverable by a smaller step; the message of the model function explains it")

enum class FailureKind : uint8_t {
#define MBS_X(kind, summary, hint) kind,
  MBS_SOLVER_FAILURES(MBS_X)
#undef MBS_X
};

std::string_view failure_kind_name(FailureKind kind);  // "NewtonDiverged"
std::string_view failure_summary(FailureKind kind);
std::string_view failure_hint(FailureKind kind);

enum class FailurePhase : uint8_t { InitialValues, Step };

struct FailureRecord {
  FailureKind kind = FailureKind::NewtonDiverged;
  FailurePhase phase = FailurePhase::Step;
  std::string_view solver;  // "gen-alpha", "rk4"
  double t = 0.0;           // start of the failed step
  double h = 0.0;           // the last step size tried (0 for initial values)
  double h_min = 0.0;       // the smallest step allowed
  int32_t halvings = 0;     // h = options.h / 2^halvings (about: the last step may be shorter)
  int32_t kernel_status = 0;
  // The equation with the largest (scaled) residual at the last iterate, -1 if none.
  int32_t equation = -1;
  double residual = std::numeric_limits<double>::quiet_NaN();
  // The unknown with the largest Newton update relative to its tolerance, -1 if none. Index in
  // [qdd | yd | z] order; reported by the name of q, y or z.
  int32_t unknown = -1;
  double update = std::numeric_limits<double>::quiet_NaN();  // |update| / tolerance
  std::string message;  // the rendered message (error:, note:, help: lines)
};

// "error: ..." with notes naming the equation and the unknown and their sources, and a help line.
std::string render_failure(const FailureRecord& f, const CompiledModel& model);
// The `note:` lines every solver's message shares: a fatal kernel status, the equation with the
// largest residual and the unknown with the largest update, with their source lines.
std::string render_failure_notes(const FailureRecord& f, const CompiledModel& model);

// Name and source of unknown i in [qdd | yd | z] order: the coordinate q, y or z it belongs to.
std::string unknown_name(const CompiledModel& model, int32_t i);
std::string unknown_source(const CompiledModel& model, int32_t i);
// "file:line:col: text" of equation i, or "equation i" when the model has no source for it.
std::string equation_text(const CompiledModel& model, int32_t i);

// Thrown by make_integrator and check_model when the model or the options cannot be run; the
// message says what is wrong (and, for models, which size or slot).
struct SolverSetupError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace mbs::rt
