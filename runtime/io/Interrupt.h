// A clean stop on Ctrl-C: the SIGINT handler only sets a flag; integrators check it once per
// step and end the run with status Interrupted after writing the last accepted point, so the
// result file is closed with complete rows. A second Ctrl-C terminates at once (default action),
// except in the REPL, where Ctrl-C never ends the process (install_repl_interrupt_handler).
#pragma once

#include <atomic>

namespace mbs::rt {

// Lock-free, so setting it from a signal handler is safe.
extern std::atomic<bool> g_interrupt_requested;

inline bool interrupt_requested() {
  return g_interrupt_requested.load(std::memory_order_relaxed);
}
inline void request_interrupt() {
  g_interrupt_requested.store(true, std::memory_order_relaxed);
}
inline void clear_interrupt() {
  g_interrupt_requested.store(false, std::memory_order_relaxed);
}

// Installs the SIGINT handler (idempotent). The first SIGINT sets the flag and restores the
// default action.
void install_interrupt_handler();

// The REPL's handler: every SIGINT sets the flag and the handler stays installed, also across
// later calls of install_interrupt_handler (the runs a REPL starts make them). Installed without
// SA_RESTART, so a SIGINT interrupts a blocking read (the line editor sees Ctrl-C at the prompt).
void install_repl_interrupt_handler();

// The interrupt handler for the length of one run in a host that has its own (the Python module:
// Python's SIGINT handler only marks the signal for the interpreter, which does not run while a
// run computes): installs install_interrupt_handler()'s handler with the flag cleared, and gives
// back the previous action and clears the flag again when it ends. Scopes may overlap (runs on
// several threads): the first one installs, the last one to end restores.
class InterruptScope {
 public:
  InterruptScope();
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
};

}  // namespace mbs::rt
