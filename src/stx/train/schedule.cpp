#include "stx/train/schedule.h"

#include <algorithm>
#include <cmath>

namespace stx {

double Schedule::at(int64_t step) const {
  step = std::max<int64_t>(step, 1);
  const double s = static_cast<double>(step), w = static_cast<double>(warmup);
  if (warmup > 0 && step <= warmup) return lr * s / w;
  if (kind == ScheduleKind::InverseSqrt) return warmup > 0 ? lr * std::sqrt(w / s) : lr / std::sqrt(s);
  if (kind == ScheduleKind::Cosine) {
    const double span = std::max<double>(1.0, static_cast<double>(max_steps - warmup));
    const double t = std::min(1.0, (s - w) / span);
    return lr * 0.5 * (1 + std::cos(M_PI * t));
  }
  return lr;
}

}  // namespace stx
