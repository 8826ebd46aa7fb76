// stx/atlas/atlas_reading.cpp — see atlas_reading.h.
#include "stx/atlas/atlas_reading.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "stx/collapse/collapse_reading.h"
#include "stx/grid/outcome.h"

namespace stx::atlas {

namespace {

bool training_line(const nlohmann::json& j) { return j.contains("loss") && !j.contains("event"); }

std::optional<double> number(const nlohmann::json& j, const char* ptr) {
  const nlohmann::json::json_pointer p(ptr);
  if (!j.contains(p) || !j[p].is_number()) return std::nullopt;
  return j[p].get<double>();
}

// The largest number anywhere under j[key] (nested objects and arrays).
std::optional<double> max_under(const nlohmann::json& j) {
  std::optional<double> m;
  if (j.is_number()) return j.get<double>();
  if (j.is_object() || j.is_array())
    for (auto& v : j)
      if (auto x = max_under(v)) m = m ? std::max(*m, *x) : *x;
  return m;
}

// ‖g‖ of the bottom decoder layer ÷ ‖g‖ of the top one on a training line.
std::optional<double> grad_reach(const nlohmann::json& j) {
  if (!j.contains("grad_norm_layer") || !j["grad_norm_layer"].contains("decoder")) return std::nullopt;
  const auto& g = j["grad_norm_layer"]["decoder"];
  if (!g.is_array() || g.empty() || !g.front().is_number() || !g.back().is_number() || !(g.back().get<double>() > 0))
    return std::nullopt;
  return g.front().get<double>() / g.back().get<double>();
}

double median3(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

Reading read_atlas(const std::vector<nlohmann::json>& records, const grid::RunResult& r) {
  Reading out;
  std::optional<double> best_loss;
  std::optional<int64_t> spike;
  // Per signal: its values in order (step, value); entropy is "lower is worse".
  std::map<std::string, std::vector<std::pair<int64_t, double>>> sig;
  bool first = true;
  for (auto& j : records) {
    if (j.contains("valid_nll") && j["valid_nll"].is_number())
      out.final_bpb = j["valid_nll"].get<double>() / std::log(2.0);
    if (!training_line(j)) continue;
    const int64_t step = j.value("step", int64_t{0});
    if (j.contains("attn_max_logit"))
      if (auto m = max_under(j["attn_max_logit"])) {
        out.max_attn_logit = out.max_attn_logit ? std::max(*out.max_attn_logit, *m) : *m;
        sig["attn_max_logit"].push_back({step, *m});
      }
    if (auto h = collapse::lowest_layer_entropy(j)) {
      out.min_entropy = out.min_entropy ? std::min(*out.min_entropy, *h) : *h;
      sig["attn_entropy"].push_back({step, *h});
    }
    if (auto z = number(j, "/log_z/mean")) {
      if (!out.log_z_first) out.log_z_first = z;
      out.log_z_last = z;
    }
    if (auto z = number(j, "/log_z/max")) {
      out.log_z_max = out.log_z_max ? std::max(*out.log_z_max, *z) : *z;
      sig["log_z"].push_back({step, *z});
    }
    if (auto g = number(j, "/grad_norm")) sig["grad_norm"].push_back({step, *g});
    if (auto d = number(j, "/delta_f_step")) sig["delta_f_step"].push_back({step, *d});
    const double loss = j["loss"].is_number() ? j["loss"].get<double>() : NAN;
    sig["loss"].push_back({step, loss});
    if (!spike && best_loss && (!std::isfinite(loss) || loss >= *best_loss + grid::kSpikeNats - 1e-9))
      spike = step;  // grid/outcome.h's spike: ≥ 1 nat above the lowest loss before it
    if (std::isfinite(loss)) best_loss = best_loss ? std::min(*best_loss, loss) : loss;
    out.train_curve.push_back({step, std::round(loss / std::log(2.0) * 1e4) / 1e4});
    const auto reach = grad_reach(j);
    if (reach) out.grad_reach_last = reach;
    if (first) {
      first = false;
      out.delta_f_early = number(j, "/delta_f");
      out.grad_reach = reach;
    }
  }
  if (r.guard_stop) out.failure_step = r.step, out.failure = "diverged (" + grid::short_cause(r.cause) + ")";
  if (spike && (!out.failure_step || *spike < *out.failure_step)) out.failure_step = spike, out.failure = "loss spike";
  if (out.failure_step) {  // which signal left its early range first
    for (auto& [name, v] : sig) {
      if (v.size() < 4) continue;
      const double base = median3({v[0].second, v[1].second, v[2].second});
      const bool lower_worse = name == "attn_entropy";
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
