// stx/core/signals.h — SIGINT/SIGTERM during training: the handler only records the signal;
// the trainer finishes the current step, writes a checkpoint and exits cleanly.
#pragma once

namespace stx {

// Installs the handlers (idempotent). A second SIGINT while stopping restores the default
// action, so a stuck run can still be killed from the terminal.
void install_stop_handlers();
// The signal received since install (0: none).
int stop_signal();

}  // namespace stx
