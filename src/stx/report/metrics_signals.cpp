// stx/report/metrics_signals.cpp — see metrics_signals.h.
#include "stx/report/metrics_signals.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace stx::metrics {

namespace {

// min and max of every number under j (nested objects and arrays, in order; null skipped).
void extremes(const nlohmann::json& j, std::optional<double>& lo, std::optional<double>& hi) {
  if (j.is_number()) {
    const double x = j.get<double>();
    lo = lo ? std::min(*lo, x) : x;
    hi = hi ? std::max(*hi, x) : x;
  } else if (j.is_object() || j.is_array()) {
    for (auto& v : j) extremes(v, lo, hi);
  }
}

std::optional<double> max_under(const Record& r, const char* k) {
  std::optional<double> lo, hi;
  if (auto it = r.json.find(k); it != r.json.end()) extremes(*it, lo, hi);
  return hi;
}

}  // namespace

double to_bits(double nats) { return nats / std::log(2.0); }

double GradReach::log10_floored() const {
  return std::log10(std::max<double>(bottom, std::numeric_limits<float>::min()) / top);
}

std::optional<GradReach> grad_reach(const Record& r) {
  auto it = r.json.find(key::grad_norm_layer);
  if (it == r.json.end()) return std::nullopt;
  for (const char* stack : {kDecoder, kEncoder}) {
    auto s = it->find(stack);
    if (s == it->end() || s->empty()) continue;
    if (!s->front().is_number() || !s->back().is_number()) return std::nullopt;
    GradReach g{s->front().get<double>(), s->back().get<double>()};
    if (g.top > 0 && g.bottom >= 0) return g;
    return std::nullopt;
  }
  return std::nullopt;
}

namespace {
// The lowest and highest value of `field` over every layer of attn_entropy's stacks and kinds.
std::pair<std::optional<double>, std::optional<double>> entropy_extremes(const Record& r, const char* field) {
  std::optional<double> lo, hi;
  auto it = r.json.find(key::attn_entropy);
  if (it == r.json.end()) return {lo, hi};
  for (auto& kinds : *it)
    for (auto& fields : kinds)
      if (auto m = fields.find(field); m != fields.end()) extremes(*m, lo, hi);
  return {lo, hi};
}
}  // namespace

std::optional<Range> layer_entropy_range(const Record& r) {
  const auto [lo, hi] = entropy_extremes(r, kMean);
  if (!lo) return std::nullopt;
  return Range{*lo, *hi};
}

std::optional<double> lowest_head_entropy(const Record& r) { return entropy_extremes(r, kMinHead).first; }

std::optional<double> max_attn_logit(const Record& r) { return max_under(r, key::attn_max_logit); }

std::optional<double> max_ln_input(const Record& r) { return max_under(r, key::ln_input_norm); }

}  // namespace stx::metrics
