// stx/train/divergence_guard.cpp — see divergence_guard.h.
#include "stx/train/divergence_guard.h"

#include <fmt/format.h>

#include <cmath>

namespace stx {

double DivergenceGuard::mean() const {
  double s = 0;
  for (double x : losses_) s += x;
  return s / static_cast<double>(losses_.size());
}

double DivergenceGuard::stddev() const {
  const double m = mean();
  double s = 0;
  for (double x : losses_) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(losses_.size() - 1));
}

DivergenceGuard::Verdict DivergenceGuard::check(double loss, double grad_norm) const {
  if (!std::isfinite(loss) || !std::isfinite(grad_norm)) return Verdict::NonFinite;
  if (zscore_ > 0 && static_cast<int64_t>(losses_.size()) >= std::max<int64_t>(2, window_ / 2)) {
    const double sd = std::max(stddev(), 1e-3 * std::abs(mean()) + 1e-12);
    if ((loss - mean()) / sd > zscore_) return Verdict::Spike;
  }
  return Verdict::Ok;
}

void DivergenceGuard::accept(double loss) {
  losses_.push_back(loss);
  while (static_cast<int64_t>(losses_.size()) > window_) losses_.pop_front();
}

std::string DivergenceGuard::describe(Verdict v, double loss, double grad_norm) const {
  if (v == Verdict::NonFinite) return fmt::format("non-finite loss {} or gradient norm {}", loss, grad_norm);
  if (v == Verdict::Spike)
    return fmt::format("loss spike: {:.4f} is {:.1f} standard deviations above the mean {:.4f} of the last {} steps",
                       loss, (loss - mean()) / std::max(stddev(), 1e-12), mean(), losses_.size());
  return "ok";
}

nlohmann::json DivergenceGuard::state() const {
  return nlohmann::json(std::vector<double>(losses_.begin(), losses_.end()));
}

void DivergenceGuard::load(const nlohmann::json& j) {
  losses_.clear();
  for (auto& x : j) losses_.push_back(x.get<double>());
}

}  // namespace stx
