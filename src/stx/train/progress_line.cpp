// stx/train/progress_line.cpp — see progress_line.h.
#include "stx/train/progress_line.h"

#include <fmt/format.h>
#include <unistd.h>

#include <iostream>

namespace stx {

void ProgressLine::start(int64_t step) {
  t0_ = std::chrono::steady_clock::now();
  step0_ = step;
}

void ProgressLine::show(int64_t step, int64_t max_steps, double loss, double lr, double tokens_per_s,
                        bool force) const {
  static const bool tty = isatty(STDERR_FILENO);
  if (!tty && !force) return;
  const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  const double per = step > step0_ ? el / static_cast<double>(step - step0_) : 0;
  const auto eta = static_cast<int64_t>(per * static_cast<double>(max_steps - step));
  const auto line = fmt::format("step {}/{}  loss {:.4f}  lr {:.2e}  {:.0f} tok/s  ETA {}:{:02d}:{:02d}", step,
                                max_steps, loss, lr, tokens_per_s, eta / 3600, eta / 60 % 60, eta % 60);
  std::cerr << (tty ? "\r" + line + "   " : line + "\n") << std::flush;
}

}  // namespace stx
