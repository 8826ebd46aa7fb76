// stx/train/schedule.h — learning-rate schedules (step counts from 1):
//   inverse-sqrt (fairseq): lr·step/warmup during warm-up, then lr·sqrt(warmup/step);
//     without warm-up lr/sqrt(step)
//   cosine: linear warm-up, then lr·½(1 + cos(π·(step−warmup)/(max_steps−warmup)))
//   constant: linear warm-up (if any), then lr
#pragma once
#include <cstdint>

#include "stx/config/config.h"

namespace stx {

struct Schedule {
  ScheduleKind kind = ScheduleKind::InverseSqrt;
  double lr = 5e-4;
  int64_t warmup = 0;
  int64_t max_steps = 1;
  // Learning rate for update number `step` (1-based).
  double at(int64_t step) const;
};

}  // namespace stx
