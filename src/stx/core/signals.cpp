// stx/core/signals.cpp — see signals.h. Async-signal-safe: the handler writes one
// sig_atomic_t and, the second time, resets the disposition.
#include "stx/core/signals.h"

#include <csignal>

namespace stx {

namespace {
volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_stop(int sig) {
  if (g_signal != 0) std::signal(sig, SIG_DFL);  // second signal: let the next one kill us
  g_signal = sig;
}
}  // namespace

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int stop_signal() { return g_signal; }

}  // namespace stx
