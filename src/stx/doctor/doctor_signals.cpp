// stx/doctor/doctor_signals.cpp — see doctor_signals.h.
#include "stx/doctor/doctor_signals.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "stx/report/metrics_signals.h"

namespace stx::doctor {

namespace {

std::optional<double> num(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_number()) return std::nullopt;
  return j[key].get<double>();
}

double finite_or_nan(std::optional<double> v) { return v && std::isfinite(*v) ? *v : NAN; }

}  // namespace

std::optional<Line> line_of(const metrics::Record& r) {
  if (!r.training()) return std::nullopt;
  Line l;
  l.step = r.step;
  l.lr = r.lr.value_or(0.0);
  l.loss = finite_or_nan(r.loss);
  l.grad_norm = finite_or_nan(r.grad_norm);
  if (auto g = metrics::grad_reach(r)) l.grad_reach = g->log10_floored();
  l.delta_f = r.delta_f;
  l.delta_f_step = r.delta_f_step;
  l.attn_logit = metrics::max_attn_logit(r);
  if (auto e = metrics::layer_entropy_range(r)) l.entropy_min = e->lo, l.entropy_max = e->hi;
  l.log_z_max = r.log_z_max;
  l.ln_input = metrics::max_ln_input(r);
  l.param_norm = r.param_norm;
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

Early early_of(const std::vector<metrics::Record>& records, int64_t upto) {
  Early e;
  for (auto& r : records) {
    if (r.is_event()) {
      if (r.event == metrics::kDivergence && r.step <= upto && !e.diverged_step)
        e.diverged_step = r.step, e.cause = r.cause;
      continue;
    }
    if (r.step > upto) continue;
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
