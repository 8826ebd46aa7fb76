// stx/doctor/run_watch.cpp — see run_watch.h.
#include "stx/doctor/run_watch.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "stx/doctor/doctor_signals.h"

namespace stx::doctor {

Watch watch_run(const std::vector<metrics::Record>& records, int64_t horizon) {
  const auto all = early_of(records, std::numeric_limits<int64_t>::max());
  auto w = watch_lines(all.lines, horizon);
  w.diverged_step = all.diverged_step, w.cause = all.cause;
  return w;
}

Watch watch_lines(const std::vector<Line>& lines, int64_t horizon) {
  Watch w;
  if (!lines.empty()) w.last_step = lines.back().step;
  struct Sig {
    const char* name;
    std::optional<double> (*get)(const Line&);
    bool lower_worse;
  };
  const Sig sigs[] = {
      {"loss", [](const Line& l) { return std::optional<double>(l.loss); }, false},
      {"grad_norm", [](const Line& l) { return std::optional<double>(l.grad_norm); }, false},
      {"attn_logit", [](const Line& l) { return l.attn_logit; }, false},
      {"log_z_max", [](const Line& l) { return l.log_z_max; }, false},
      {"delta_f_step", [](const Line& l) { return l.delta_f_step; }, false},
      {"entropy_min", [](const Line& l) { return l.entropy_min; }, true},
  };
  for (auto& s : sigs) {
    std::vector<double> base;
    for (auto& l : lines)
      if (l.step <= horizon)
        if (auto v = s.get(l); v && std::isfinite(*v)) base.push_back(*v);
    if (base.empty()) continue;
    std::sort(base.begin(), base.end());
    const double med = base[base.size() / 2];
    for (auto& l : lines) {
      if (l.step <= horizon) continue;
      const auto v = s.get(l);
      if (!v) continue;
      const bool moved = !std::isfinite(*v) || (s.lower_worse ? *v < 0.5 * med : *v > 2.0 * std::max(med, 1e-12));
      if (moved) {
        w.moved.push_back({s.name, l.step});
        break;
      }
    }
  }
  std::sort(w.moved.begin(), w.moved.end(), [](auto& a, auto& b) { return a.second < b.second; });
  return w;
}

nlohmann::json to_json(const Watch& w) {
  nlohmann::json moved = nlohmann::json::array();
  for (auto& [s, step] : w.moved) moved.push_back({{"signal", s}, {"step", step}});
  nlohmann::json j = {{"last_step", w.last_step}, {"left_early_range", moved}};
  if (w.diverged_step) j["diverged"] = {{"step", *w.diverged_step}, {"cause", w.cause}};
  return j;
}

std::string render(const Watch& w) {
  std::string out = fmt::format("since then (up to step {}): ", w.last_step);
  if (w.moved.empty()) out += "every watched signal is within twice its early range";
  for (size_t i = 0; i < w.moved.size(); ++i)
    out += fmt::format("{}{} left its early range at step {}", i ? "; " : "", w.moved[i].first, w.moved[i].second);
  if (w.diverged_step) out += fmt::format("; diverged at step {} ({})", *w.diverged_step, w.cause);
  return out + "\n";
}

}  // namespace stx::doctor
