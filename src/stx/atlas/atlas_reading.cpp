// stx/atlas/atlas_reading.cpp — see atlas_reading.h.
#include "stx/atlas/atlas_reading.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "stx/grid/outcome.h"
#include "stx/report/metrics_signals.h"

namespace stx::atlas {

namespace {

double median3(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

Reading read_atlas(const std::vector<metrics::Record>& records, const grid::RunResult& r) {
  namespace key = metrics::key;
  Reading out;
  std::optional<double> best_loss;
  std::optional<int64_t> spike;
  // Per signal: its values in order (step, value); entropy is "lower is worse".
  std::map<std::string, std::vector<std::pair<int64_t, double>>> sig;
  bool first = true;
  for (auto& j : records) {
    if (j.validation() && j.valid_nll) out.final_bpb = metrics::to_bits(*j.valid_nll);
    if (!j.training()) continue;
    const int64_t step = j.step;
    if (auto m = metrics::max_attn_logit(j)) {
      out.max_attn_logit = out.max_attn_logit ? std::max(*out.max_attn_logit, *m) : *m;
      sig[key::attn_max_logit].push_back({step, *m});
    }
    if (auto h = metrics::layer_entropy_range(j)) {
      out.min_entropy = out.min_entropy ? std::min(*out.min_entropy, h->lo) : h->lo;
      sig[key::attn_entropy].push_back({step, h->lo});
    }
    if (auto z = j.log_z_mean) {
      if (!out.log_z_first) out.log_z_first = z;
      out.log_z_last = z;
    }
    if (auto z = j.log_z_max) {
      out.log_z_max = out.log_z_max ? std::max(*out.log_z_max, *z) : *z;
      sig[key::log_z].push_back({step, *z});
    }
    if (j.grad_norm) sig[key::grad_norm].push_back({step, *j.grad_norm});
    if (j.delta_f_step) sig[key::delta_f_step].push_back({step, *j.delta_f_step});
    const double loss = j.loss;
    sig[key::loss].push_back({step, loss});
    if (!spike && best_loss && (!std::isfinite(loss) || loss >= *best_loss + grid::kSpikeNats - 1e-9))
      spike = step;  // grid/outcome.h's spike: ≥ 1 nat above the lowest loss before it
    if (std::isfinite(loss)) best_loss = best_loss ? std::min(*best_loss, loss) : loss;
    out.train_curve.push_back({step, std::round(metrics::to_bits(loss) * 1e4) / 1e4});
    std::optional<double> reach;
    if (auto g = metrics::grad_reach(j)) reach = g->ratio();
    if (reach) out.grad_reach_last = reach;
    if (first) {
      first = false;
      out.delta_f_early = j.delta_f;
      out.grad_reach = reach;
    }
  }
  if (r.guard_stop) out.failure_step = r.step, out.failure = "diverged (" + grid::short_cause(r.cause) + ")";
  if (spike && (!out.failure_step || *spike < *out.failure_step)) out.failure_step = spike, out.failure = "loss spike";
  if (out.failure_step) {  // which signal left its early range first
    for (auto& [name, v] : sig) {
      if (v.size() < 4) continue;
      const double base = median3({v[0].second, v[1].second, v[2].second});
      const bool lower_worse = name == metrics::key::attn_entropy;
      for (size_t i = 3; i < v.size() && v[i].first <= *out.failure_step; ++i) {
        const double x = v[i].second;
        const bool moved = !std::isfinite(x) || (lower_worse ? x < 0.5 * base : x > 2.0 * std::max(base, 1e-12));
        if (!moved) continue;
        if (!out.first_mover_step || v[i].first < *out.first_mover_step)
          out.first_mover = name, out.first_mover_step = v[i].first;
        break;
      }
    }
  }
  return out;
}

namespace {
// [[step, bits], …]; a non-finite loss is null (JSON has no NaN).
nlohmann::json curve_json(const std::vector<std::pair<int64_t, double>>& c) {
  auto a = nlohmann::json::array();
  for (auto& [step, b] : c) a.push_back({step, std::isfinite(b) ? nlohmann::json(b) : nlohmann::json(nullptr)});
  return a;
}
}  // namespace

nlohmann::json to_json(const Reading& r) {
  auto opt = [](const auto& o) { return o ? nlohmann::json(*o) : nlohmann::json(nullptr); };
  return {{"final_bpb", opt(r.final_bpb)},
          {"max_attn_logit", opt(r.max_attn_logit)},
          {"min_entropy", opt(r.min_entropy)},
          {"log_z_first", opt(r.log_z_first)},
          {"log_z_last", opt(r.log_z_last)},
          {"log_z_max", opt(r.log_z_max)},
          {"delta_f_early", opt(r.delta_f_early)},
          {"grad_reach", opt(r.grad_reach)},
          {"grad_reach_last", opt(r.grad_reach_last)},
          {"failure_step", opt(r.failure_step)},
          {"failure", r.failure},
          {"first_mover", r.first_mover},
          {"first_mover_step", opt(r.first_mover_step)},
          {"train_curve", curve_json(r.train_curve)}};
}

Reading reading_from_json(const nlohmann::json& j) {
  Reading r;
  auto get = [&](const char* k, std::optional<double>& v) {
    if (j.contains(k) && j[k].is_number()) v = j[k].get<double>();
  };
  auto get_int = [&](const char* k, std::optional<int64_t>& v) {
    if (j.contains(k) && j[k].is_number()) v = j[k].get<int64_t>();
  };
  get("final_bpb", r.final_bpb), get("max_attn_logit", r.max_attn_logit), get("min_entropy", r.min_entropy);
  get("log_z_first", r.log_z_first), get("log_z_last", r.log_z_last), get("log_z_max", r.log_z_max);
  get("delta_f_early", r.delta_f_early), get("grad_reach", r.grad_reach), get("grad_reach_last", r.grad_reach_last);
  for (auto& p : j.value("train_curve", nlohmann::json::array()))
    if (p.is_array() && p.size() == 2 && p[0].is_number_integer())
      r.train_curve.push_back({p[0].get<int64_t>(), p[1].is_number() ? p[1].get<double>() : NAN});
  get_int("failure_step", r.failure_step), get_int("first_mover_step", r.first_mover_step);
  r.failure = j.value("failure", ""), r.first_mover = j.value("first_mover", "");
  return r;
}

}  // namespace stx::atlas
