// stx/doctor/doctor_signals.cpp — see doctor_signals.h.
#include "stx/doctor/doctor_signals.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace stx::doctor {

namespace {

std::optional<double> num(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_number()) return std::nullopt;
  return j[key].get<double>();
}

// min / max of every number under j (nested objects and arrays).
void extremes(const nlohmann::json& j, std::optional<double>& lo, std::optional<double>& hi) {
  if (j.is_number()) {
    const double x = j.get<double>();
    lo = lo ? std::min(*lo, x) : x;
    hi = hi ? std::max(*hi, x) : x;
  } else if (j.is_object() || j.is_array()) {
    for (auto& v : j) extremes(v, lo, hi);
  }
}

// The per-layer attention entropies (head means) of every stack and attention kind.
void layer_entropies(const nlohmann::json& j, std::optional<double>& lo, std::optional<double>& hi) {
  if (!j.contains("attn_entropy") || !j["attn_entropy"].is_object()) return;
  for (auto& stack : j["attn_entropy"])
    if (stack.is_object())
      for (auto& kind : stack)
        if (kind.is_object() && kind.contains("mean")) extremes(kind["mean"], lo, hi);
}

// ‖g‖ of the bottom layer ÷ the top layer: the decoder's (a decoder-only model), else the encoder's.
std::optional<double> reach(const nlohmann::json& j) {
  if (!j.contains("grad_norm_layer")) return std::nullopt;
  const auto& g = j["grad_norm_layer"];
  for (const char* stack : {"decoder", "encoder"}) {
    if (!g.contains(stack) || !g[stack].is_array() || g[stack].size() < 2) continue;
    const auto& a = g[stack];
    if (!a.front().is_number() || !a.back().is_number()) return std::nullopt;
    const double top = a.back().get<double>(), bottom = a.front().get<double>();
    // A bottom gradient of exactly zero has underflowed (denormals are flushed): the reach is at
    // most the smallest normal float over the top layer's — the strongest evidence of a stall, not
    // a missing value (Post-LN at 24 layers and lr ≥ 3e-2 reaches it by update 20).
    if (top > 0 && bottom >= 0) return std::log10(std::max<double>(bottom, std::numeric_limits<float>::min()) / top);
    return std::nullopt;
  }
  return std::nullopt;
}

double finite_or_nan(const nlohmann::json& j, const char* key) {
  auto v = num(j, key);
  return v && std::isfinite(*v) ? *v : NAN;
}

}  // namespace

std::optional<Line> line_of(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("loss") || j.contains("event") || !j.contains("step")) return std::nullopt;
  Line l;
  l.step = j["step"].get<int64_t>();
  l.lr = num(j, "lr").value_or(0.0);
  l.loss = finite_or_nan(j, "loss");
  l.grad_norm = finite_or_nan(j, "grad_norm");
  l.grad_reach = reach(j);
  l.delta_f = num(j, "delta_f");
  l.delta_f_step = num(j, "delta_f_step");
  if (j.contains("attn_max_logit")) {
    std::optional<double> lo;
    extremes(j["attn_max_logit"], lo, l.attn_logit);
  }
  layer_entropies(j, l.entropy_min, l.entropy_max);
  if (j.contains("log_z") && j["log_z"].is_object()) l.log_z_max = num(j["log_z"], "max");
  if (j.contains("ln_input_norm")) {
    std::optional<double> lo;
    extremes(j["ln_input_norm"], lo, l.ln_input);
  }
  l.param_norm = num(j, "param_norm");
  return l;
}

nlohmann::json to_json(const Line& l) {
  nlohmann::json j = {{"step", l.step}, {"lr", l.lr}};
  auto put = [&](const char* k, std::optional<double> v) {
    if (v && std::isfinite(*v)) j[k] = *v;
  };
  put("loss", l.loss), put("grad_norm", l.grad_norm);
  put("grad_reach", l.grad_reach), put("delta_f", l.delta_f), put("delta_f_step", l.delta_f_step);
  put("attn_logit", l.attn_logit), put("entropy_min", l.entropy_min), put("entropy_max", l.entropy_max);
  put("log_z_max", l.log_z_max), put("ln_input", l.ln_input), put("param_norm", l.param_norm);
  return j;
}

Line line_from_json(const nlohmann::json& j) {
  Line l;
  l.step = j.at("step").get<int64_t>();
  l.lr = j.value("lr", 0.0);
  l.loss = num(j, "loss").value_or(NAN);
  l.grad_norm = num(j, "grad_norm").value_or(NAN);
  l.grad_reach = num(j, "grad_reach"), l.delta_f = num(j, "delta_f"), l.delta_f_step = num(j, "delta_f_step");
  l.attn_logit = num(j, "attn_logit"), l.entropy_min = num(j, "entropy_min"), l.entropy_max = num(j, "entropy_max");
  l.log_z_max = num(j, "log_z_max"), l.ln_input = num(j, "ln_input"), l.param_norm = num(j, "param_norm");
  return l;
}

Early early_of(const std::vector<nlohmann::json>& records, int64_t upto) {
  Early e;
  for (auto& r : records) {
    if (!r.is_object() || !r.contains("step") || !r["step"].is_number_integer()) continue;
    const int64_t step = r["step"].get<int64_t>();
    if (r.contains("event")) {
      if (r.value("event", "") == "divergence" && step <= upto && !e.diverged_step)
        e.diverged_step = step, e.cause = r.value("cause", "");
      continue;
    }
    if (step > upto) continue;
    if (auto l = line_of(r)) e.lines.push_back(*l);
  }
  return e;
}

double slog(double x) { return std::copysign(std::log10(1.0 + std::abs(x)), x); }
double unslog(double s) { return std::copysign(std::pow(10.0, std::abs(s)) - 1.0, s); }

const std::vector<std::string>& signal_names() {
  static const std::vector<std::string> names{"loss",        "grad_norm",         "grad_reach",  "delta_f_step",
                                              "attn_logit",  "attn_logit_growth", "entropy_min", "entropy_max",
                                              "log_z_drift", "ln_input",          "lr_peak",     "lr_fraction"};
  return names;
}

std::optional<Signals> signals_at(const std::vector<Line>& lines, int64_t horizon, double peak_lr) {
  std::vector<const Line*> in;
  for (auto& l : lines)
    if (l.step <= horizon) in.push_back(&l);
  if (in.size() < 2) return std::nullopt;
  const Line& first = *in.front();
  const Line& last = *in.back();
  const Line& before = *in[in.size() - 2];
  auto val = [](std::optional<double> v) { return v && std::isfinite(*v) ? *v : kMissing; };
  auto log10_of = [](double v) { return std::isfinite(v) && v > 0 ? std::log10(v) : kMissing; };
  auto sdiff = [](std::optional<double> a, std::optional<double> b) {
    return a && b && std::isfinite(*a) && std::isfinite(*b) ? slog(*a - *b) : kMissing;
  };
  auto sval = [](std::optional<double> v) { return v && std::isfinite(*v) ? slog(*v) : kMissing; };
  Signals s;
  s.step = last.step;
  s.x = {std::isfinite(last.loss) ? slog(last.loss / std::log(2.0)) : kMissing,
         log10_of(last.grad_norm),
         val(last.grad_reach),
         last.delta_f_step ? log10_of(*last.delta_f_step / static_cast<double>(last.step - before.step)) : kMissing,
         sval(last.attn_logit),
         sdiff(last.attn_logit, first.attn_logit),
         val(last.entropy_min),
         val(last.entropy_max),
         sdiff(last.log_z_max, first.log_z_max),
         last.ln_input ? log10_of(*last.ln_input) : kMissing,
         log10_of(peak_lr),
         peak_lr > 0 ? last.lr / peak_lr : kMissing};
  return s;
}

}  // namespace stx::doctor
