#include "runtime/io/Interrupt.h"

#include <signal.h>

namespace mbs::rt {

std::atomic<bool> g_interrupt_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free);

namespace {
void on_sigint(int) {
  g_interrupt_requested.store(true, std::memory_order_relaxed);
  signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process
}
}  // namespace

void install_interrupt_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sigaction(SIGINT, &sa, nullptr);
}

}  // namespace mbs::rt
