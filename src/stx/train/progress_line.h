// stx/train/progress_line.h — `stx train`'s progress on stderr: "step S/N  loss L  lr η
// tokens/s  ETA h:mm:ss", redrawn in place on a terminal; into a log only on logged steps.
#pragma once
#include <chrono>
#include <cstdint>

namespace stx {

class ProgressLine {
 public:
  // The clock and the step the ETA counts from (a resume starts there).
  void start(int64_t step);
  // `force`: a logged step (the only lines written when stderr is not a terminal).
  void show(int64_t step, int64_t max_steps, double loss, double lr, double tokens_per_s, bool force) const;

 private:
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  int64_t step0_ = 0;
};

}  // namespace stx
