// stx/collapse/collapse_reading.cpp — see collapse_reading.h.
#include "stx/collapse/collapse_reading.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "stx/report/metrics_signals.h"

namespace stx::collapse {

namespace {

// Calls f(stack, kind, layer, value) for every number of record[key][stack][kind][field][layer].
template <typename F>
void each_layer(const nlohmann::json& record, const char* key, const char* field, F f) {
  if (!record.contains(key) || !record[key].is_object()) return;
  for (auto& [stack, kinds] : record[key].items())
    for (auto& [kind, fields] : kinds.items()) {
      if (!fields.contains(field) || !fields[field].is_array()) continue;
      const auto& v = fields[field];
      for (size_t l = 0; l < v.size(); ++l)
        if (v[l].is_number()) f(stack, kind, l, v[l].template get<double>());
    }
}

}  // namespace

Reading read_collapse(const std::vector<metrics::Record>& records, const grid::RunResult& r, double threshold,
                      double spike_nats) {
  namespace key = metrics::key;
  Reading out;
  std::optional<double> best_loss;
  for (auto& rec : records) {
    if (!rec.training()) continue;
    const auto& j = rec.json;
    const int64_t step = rec.step;
    if (auto range = metrics::layer_entropy_range(rec)) {
      const std::optional<double> h = range->lo;
      if (!out.first_entropy) out.first_entropy = h;
      out.last_entropy = h;
      if (!out.min_entropy || *h < *out.min_entropy) out.min_entropy = h, out.min_entropy_step = step;
      if (!out.collapse_step && *h < threshold) out.collapse_step = step;
    }
    each_layer(j, key::attn_entropy, metrics::kMean,
               [&](const std::string& stack, const std::string& kind, size_t l, double e) {
                 const auto bound =
                     rec.at(fmt::format("/{}/{}/{}/{}/{}", key::attn_entropy_bound, stack, kind, metrics::kMean, l));
                 if (bound) {
                   const double gap = e - *bound;
                   out.min_bound_gap = out.min_bound_gap ? std::min(*out.min_bound_gap, gap) : gap;
                 }
               });
    std::optional<double> sig;
    each_layer(j, key::attn_sigma_kq, metrics::kMaxHead,
               [&](auto&, auto&, size_t, double v) { sig = sig ? std::max(*sig, v) : v; });
    if (sig) out.last_sigma_kq = sig, out.max_sigma_kq = out.max_sigma_kq ? std::max(*out.max_sigma_kq, *sig) : *sig;
    const double loss = rec.loss;
    if (!out.spike_step && best_loss && (!std::isfinite(loss) || loss > *best_loss + spike_nats)) out.spike_step = step;
    if (std::isfinite(loss)) best_loss = best_loss ? std::min(*best_loss, loss) : loss;
  }
  if (r.guard_stop) out.failure_step = r.step, out.failure = "diverged (" + grid::short_cause(r.cause) + ")";
  if (out.spike_step && (!out.failure_step || *out.spike_step < *out.failure_step))
    out.failure_step = out.spike_step, out.failure = "loss spike";
  if (out.failure_step)
    out.relation = out.collapse_step && *out.collapse_step <= *out.failure_step ? "collapse → failure"
                                                                                : "failure, no collapse before";
  else out.relation = out.collapse_step ? "collapse, no failure" : "neither";
  return out;
}

nlohmann::json to_json(const Reading& r) {
  auto opt = [](const auto& o) { return o ? nlohmann::json(*o) : nlohmann::json(nullptr); };
  return {{"first_entropy", opt(r.first_entropy)}, {"last_entropy", opt(r.last_entropy)},
          {"min_entropy", opt(r.min_entropy)},     {"min_entropy_step", r.min_entropy_step},
          {"collapse_step", opt(r.collapse_step)}, {"spike_step", opt(r.spike_step)},
          {"failure_step", opt(r.failure_step)},   {"failure", r.failure},
          {"min_bound_gap", opt(r.min_bound_gap)}, {"last_sigma_kq", opt(r.last_sigma_kq)},
          {"max_sigma_kq", opt(r.max_sigma_kq)},   {"relation", r.relation}};
}

}  // namespace stx::collapse
