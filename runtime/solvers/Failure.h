// Why a solver stopped: one table of failure kinds with their messages and hints, and the
// failure record a run leaves behind. Every record carries t and h and, where the failure can be
// traced, the model equation and unknown involved with their .mbs source.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
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
    "this is not recoverable by a smaller step; the message of the model function explains it")  \
  X(NonFiniteOutput, "a value written to the result is not finite (NaN or Inf)",                 \
    "the solved unknowns are finite there; look in the equation that defines the variable for "  \
    "a sqrt, log, pow or asin of an argument outside its domain or a division by zero (at the "  \
    "start time too); --nonfinite warn writes such values as nan/inf and goes on")               \
  X(Diverged, "the solution grows without bound",                                                \
    "the model may blow up (a finite-time singularity), or the method is unstable for it: an "   \
    "explicit method on a stiff model needs a far smaller --step or an implicit solver "         \
    "(--solver gen-alpha); check the parameters and start values; --divergence-limit sets the "  \
    "bound")                                                                                     \
  X(TooManyRejections, "too many rejected step attempts in one output interval",                 \
    "the step keeps failing and shrinking (a stiff model for an explicit method, a "             \
    "discontinuity, or tolerances the method cannot meet): use an implicit solver (--solver "    \
    "gen-alpha), a smaller --step, looser --rtol/--atol, or raise --max-rejections")             \
  X(StepCollapsed, "the step size collapsed",                                                    \
    "the step cannot shrink further: t + h can hardly be told from t; a singularity or a "       \
    "discontinuity at this time, or a model too stiff for the method: use an implicit solver, "  \
    "check the model near this time, or loosen --rtol/--atol")                                   \
  X(Chattering, "events follow each other without time advancing (chattering)",                  \
    "the model switches back and forth at one point in time (a bouncing ball coming to rest, a " \
    "stop without restitution): end the run before that time, change the model so that the "     \
    "switching stops (e.g. a state that stays at rest), or raise --chatter-limit")               \
  X(EventFailed, "the event could not be located",                                               \
    "a step to a point inside the last step failed while the event time was searched for; a "    \
    "smaller --step helps")                                                                      \
  X(EventNotSettled, "the event iteration did not end",                                          \
    "a condition that an assignment of its own branch (or of a branch it makes fire) turns "     \
    "true again never settles; compare with pre(x), e.g. 'when x > pre(x) then'; the step "      \
    "size plays no part in it")                                                                  \
  X(ReinitInconsistent, "the values after the event do not satisfy the constraints",             \
    "a reinit of a coordinate that a constraint determines must leave the others free to "       \
    "close the constraint: reinit fewer coordinates of the loop (the others follow), or values " \
    "that satisfy the constraints; the step size plays no part in it")

enum class FailureKind : uint8_t {
#define MBS_X(kind, summary, hint) kind,
  MBS_SOLVER_FAILURES(MBS_X)
#undef MBS_X
};

std::string_view failure_kind_name(FailureKind kind);  // "NewtonDiverged"
std::string_view failure_summary(FailureKind kind);
std::string_view failure_hint(FailureKind kind);

enum class FailurePhase : uint8_t { InitialValues, Step };

// What t and h of a failure are: time and time step (the integrators), or load factor and load
// step (the static solver).
enum class FailureAxis : uint8_t { Time, Load };

struct FailureRecord {
  FailureKind kind = FailureKind::NewtonDiverged;
  FailurePhase phase = FailurePhase::Step;
  std::string_view solver;  // "gen-alpha", "rk4"
  FailureAxis axis = FailureAxis::Time;
  double t = 0.0;        // start of the failed step
  double h = 0.0;        // the last step size tried (0 for initial values)
  double h_min = 0.0;    // the smallest step allowed
  int32_t halvings = 0;  // h = options.h / 2^halvings (about: the last step may be shorter)
  int32_t kernel_status = 0;
  // The equation with the largest (scaled) residual at the last iterate, -1 if none.
  int32_t equation = -1;
  double residual = std::numeric_limits<double>::quiet_NaN();
  // The unknown with the largest Newton update relative to its tolerance, -1 if none. Index in
  // [qdd | yd | z] order; reported by the name of q, y or z.
  int32_t unknown = -1;
  double update = std::numeric_limits<double>::quiet_NaN();  // |update| / tolerance
  // NonFiniteOutput: the output column (index in output_names) and its value; the number of
  // non-finite columns at that point. Diverged: the state component (index in [q | der(q) | y],
  // or -1) with its value and its start scale max(1, |initial state|).
  int32_t output = -1;
  int32_t state = -1;
  double value = std::numeric_limits<double>::quiet_NaN();
  double scale = std::numeric_limits<double>::quiet_NaN();
  int32_t count = 0;  // also Chattering: the events in the burst
  int32_t branch =
      -1;  // Chattering: the when-branch that fired last (CompiledModel::branch_source)
  // Diverged, TooManyRejections, StepCollapsed: the failure of the last attempt that came with it
  // (NewtonDiverged, NonFiniteResidual, ...), shown as a note; or the kind itself if none.
  FailureKind cause = FailureKind::NewtonDiverged;
  bool has_cause = false;
  std::string message;  // the rendered message (error:, note:, help: lines)
};

// "error: ..." with notes naming the equation and the unknown and their sources, and a help line.
std::string render_failure(const FailureRecord& f, const CompiledModel& model);
// The message of a failure at an event instant (EventNotSettled, ReinitInconsistent): "error:
// <solver>: <summary> at t = <t>", the given note lines, and the kind's help line. No step size:
// the step plays no part in these.
std::string render_event_failure(const FailureRecord& f, std::string_view notes);
// The help line's text of a failure of `solver`: the kind's hint, except that the advice to use
// an implicit solver is replaced for a run of an implicit one (gen-alpha, newmark, trapezoidal).
std::string failure_hint_for(FailureKind kind, std::string_view solver);
// The `note:` lines every solver's message shares: a fatal kernel status, the equation with the
// largest residual and the unknown with the largest update, with their source lines.
std::string render_failure_notes(const FailureRecord& f, const CompiledModel& model);

// A NonFiniteOutput record for the outputs at (t, h): the column reported is the first
// non-finite one defined by an explicit equation, else the first solved unknown, else the first
// alias (an alias only repeats a value that is wrong elsewhere); count = all non-finite columns.
// The message is rendered.
FailureRecord nonfinite_output_failure(const CompiledModel& model, std::span<const double> outputs,
                                       std::string_view solver, double t, double h,
                                       FailureAxis axis = FailureAxis::Time);
// The one-line warning of --nonfinite warn for such a record.
std::string nonfinite_output_warning(const FailureRecord& f, const CompiledModel& model);
// "'r' is defined by the equation f.mbs:5:3: r = sqrt(x - 1) (an explicit auxiliary the
// compiler eliminated)" or "'x' (declared at f.mbs:2:3) is a solved unknown".
std::string output_origin(const CompiledModel& model, int32_t output);
// Name of component j of the state [q | der(q) | y] ("der(x)" for a velocity).
std::string state_component_name(const CompiledModel& model, int32_t j);

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
