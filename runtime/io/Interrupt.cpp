#include "runtime/io/Interrupt.h"

#include <signal.h>

#include <mutex>

namespace mbs::rt {

std::atomic<bool> g_interrupt_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free);

namespace {
std::atomic<bool> g_handler_stays{false};
static_assert(std::atomic<bool>::is_always_lock_free);

void on_sigint(int) {
  g_interrupt_requested.store(true, std::memory_order_relaxed);
  // a second Ctrl-C ends the process, unless a REPL runs it
  if (!g_handler_stays.load(std::memory_order_relaxed)) signal(SIGINT, SIG_DFL);
}

void install() {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking read returns EINTR
  sigaction(SIGINT, &sa, nullptr);
}
}  // namespace

void install_interrupt_handler() {
  install();
}

void install_repl_interrupt_handler() {
  g_handler_stays.store(true, std::memory_order_relaxed);
  install();
}

namespace {
std::mutex g_scope_mutex;
int g_scope_depth = 0;                 // InterruptScopes alive
struct sigaction g_scope_previous {};  // the action before the first of them
}  // namespace

InterruptScope::InterruptScope() {
  std::lock_guard lock(g_scope_mutex);
  if (g_scope_depth++ == 0) {
    sigaction(SIGINT, nullptr, &g_scope_previous);
    clear_interrupt();
    install();
  }
}

InterruptScope::~InterruptScope() {
  std::lock_guard lock(g_scope_mutex);
  if (--g_scope_depth == 0) {
    sigaction(SIGINT, &g_scope_previous, nullptr);
    clear_interrupt();
  }
}

}  // namespace mbs::rt
