// A clean stop on Ctrl-C: the SIGINT handler only sets a flag; integrators check it once per
// step and end the run with status Interrupted after writing the last accepted point, so the
// result file is closed with complete rows. A second Ctrl-C terminates at once (default action).
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

}  // namespace mbs::rt
