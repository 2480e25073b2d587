// What an event does to a model, given the conditions before and after (docs/solvers.md,
// "Events"): which branch of each when-equation fires, and firing them on the symbol vector v --
// the reinits and discrete assignments (every value read before any is written), pre(x), and the
// event iteration until no condition rises. Where and when an event happens (locating it,
// restarting a method, the impulse of a constrained model) is the caller's business:
// rt::Integrator for every solver, the model-exchange FMU (runtime/fmi/Unit), whose importer
// locates the crossings from the event indicators.
//
// The conditions are the outputs of CompiledModel::events: n_crossings zero-crossing functions,
// then the condition of every branch (1.0 / 0.0).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/model/CompiledModel.h"

namespace mbs::rt {

// Iterations of one event before it counts as one that does not end.
inline constexpr int kMaxEventIterations = 100;

// The first branch of each when whose condition is false in `before` and true in `after`, in
// when order, into `fired` (cleared first).
void rising_branches(const CompiledModel& m, std::span<const double> before,
                     std::span<const double> after, std::vector<int32_t>& fired);

// The event at the start: the first branch of each when whose condition reads initial() and is
// true in `conditions` (evaluated with initial() = 1), into `fired` (cleared first).
void initial_branches(const CompiledModel& m, std::span<const double> conditions,
                      std::vector<int32_t>& fired);

struct EventOutcome {
  enum class Kind : uint8_t {
    Done,          // the iteration ended
    KernelFailed,  // a kernel returned `kernel_status`
    NotSettled,    // kMaxEventIterations iterations and `branch` still fires
  };
  Kind kind = Kind::Done;
  int32_t kernel_status = 0;
  bool reinit_kernel = false;  // KernelFailed: event_reinit (else events)
  int32_t branch = -1;
  int32_t iterations = 0;
};

// Fires the branches in `fired` at v, where `basis` holds the events kernel at v before any
// change: their reinits and assignments set v[reinit_slot[r]] = value / reinit_scale[r], all
// values computed before any is written; then the conditions are evaluated again with the new
// values while pre(x) still holds those before the iteration, the first branch of each when
// whose condition rose fires in turn, pre(x) takes the new values, and so on until no condition
// rises (at most kMaxEventIterations iterations). `after` and `reinit_values` are scratch;
// `fired` and `basis` change. A non-finite crossing value is no failure (it changes no sign); a
// fatal status of the events kernel or any non-zero one of event_reinit is.
EventOutcome apply_event(const CompiledModel& m, std::span<double> v, std::vector<int32_t>& fired,
                         std::vector<double>& basis, std::vector<double>& after,
                         std::vector<double>& reinit_values);

// The note and help lines of a NotSettled outcome (each ends with a newline), for the message.
std::string event_iteration_note(const CompiledModel& m, int32_t branch);
// What the note says, without "note: " and the newline (the integrators' message has its own
// headline and the help of FailureKind::EventNotSettled).
std::string event_iteration_cause(const CompiledModel& m, int32_t branch);

}  // namespace mbs::rt
