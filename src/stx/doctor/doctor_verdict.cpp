// stx/doctor/doctor_verdict.cpp — see doctor_verdict.h.
#include "stx/doctor/doctor_verdict.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "stx/config/config_io.h"
#include "stx/config/schemes.h"
#include "stx/model/depth_constants.h"
#include "stx/sweep/sweep_plan.h"

namespace stx::doctor {

namespace {

size_t index_of(const std::string& name) {
  const auto& n = signal_names();
  return static_cast<size_t>(std::find(n.begin(), n.end(), name) - n.begin());
}

bool post_ln_family(const Config& c) { return c.model.scheme == Scheme::Post || c.model.scheme == Scheme::PostInit; }

// How far a fitted depth is from N: |log d − log N|, the deeper one first on a tie (a deeper
// model's trainable rates are the safer bound).
double depth_distance(int64_t d, int64_t N) {
  return std::abs(std::log(static_cast<double>(d)) - std::log(static_cast<double>(std::max<int64_t>(N, 1)))) -
         1e-9 * static_cast<double>(d);
}

// The fitted atlas cell of this row at the fitted depth nearest to N (log scale).
const AtlasCell* nearest_cell(const DoctorModel& m, const std::string& row, int64_t N) {
  const AtlasCell* best = nullptr;
  for (auto& a : m.atlas)
    if (a.scheme == row && (!best || depth_distance(a.depth, N) < depth_distance(best->depth, N))) best = &a;
  return best;
}

std::string lr_text(double lr) { return fmt::format("{:g}", lr); }

// The fitted cell that trained over the most rates at the fitted depth nearest to N (ties: the
// lower best loss); nullptr when no cell trained there.
const AtlasCell* widest_cell(const DoctorModel& m, int64_t N) {
  int64_t depth = -1;
  for (auto& a : m.atlas)
    if (!a.trained_lrs.empty() && (depth < 0 || depth_distance(a.depth, N) < depth_distance(depth, N))) depth = a.depth;
  const AtlasCell* best = nullptr;
  for (auto& a : m.atlas) {
    if (a.depth != depth || a.trained_lrs.empty() || !a.best_bpb) continue;
    if (!best || a.trained_lrs.size() > best->trained_lrs.size() ||
        (a.trained_lrs.size() == best->trained_lrs.size() && *a.best_bpb < *best->best_bpb))
      best = &a;
  }
  return best;
}

// One line: what the strongest signal toward failure says happened (the papers' mechanisms).
std::string mechanism_of(const std::string& s, double v, int64_t step, const Config& c) {
  if (s == "loss" || s == "attn_logit" || s == "attn_logit_growth" || s == "log_z_drift") v = unslog(v);
  if (s == "grad_reach")
    return fmt::format(
        "gradient reach 10^{:.1f} at step {}: layer 1 gets {:.2g}× the top layer's gradient — the norms on the "
        "residual "
        "path shrink it on its way down (Xiong et al. 2020: norms after the residual join)",
        v, step, std::pow(10.0, v));
  if (s == "entropy_max")
    return fmt::format(
        "some layer's attention is still near uniform at step {} (entropy {:.2f} nats): its attention has not started "
        "to learn — the plateau of deep Post-LN models",
        step, v);
  if (s == "entropy_min")
    return fmt::format(
        "attention entropy down to {:.2f} nats in some layer at step {} (entropy collapse, Zhai et al. 2023)", v, step);
  if (s == "attn_logit" || s == "attn_logit_growth")
    return fmt::format(
        "attention logits growing (largest {} at step {}): the attention-logit growth that precedes divergence "
        "(Wortsman et al. 2023 §3.1)",
        s == "attn_logit" ? fmt::format("{:.1f}", v) : fmt::format("+{:.1f} since the first line", v), step);
  if (s == "log_z_drift")
    return fmt::format(
        "output log Z drifted by {:+.2f} since the first line: output-logit divergence (Wortsman et al. §3.2)", v);
  if (s == "delta_f_step")
    return fmt::format(
        "the model output moves ‖ΔF‖ = {:.2g} per update at step {}: DeepNet's exploding model update (§3)",
        std::pow(10.0, v), step);
  if (s == "loss")
    return fmt::format("training loss still {:.2f} bits/token at step {}: learning slower than runs that trained", v,
                       step);
  if (s == "grad_norm") return fmt::format("gradient norm {:.3g} at step {}", std::pow(10.0, v), step);
  if (s == "lr_peak")
    return fmt::format("learning rate {} for a {}-layer {}: outside the rates that train", lr_text(c.train.lr),
                       c.model.decoder_layers, to_string(c.model.scheme));
  if (s == "lr_fraction")
    return fmt::format("{:.0f} % of the peak rate already at step {} (warm-up: {} steps)", 100 * v, step,
                       c.train.warmup_steps);
  if (s == "ln_input") return fmt::format("norm inputs up to ‖z‖/√d = {:.3g} at step {}", std::pow(10.0, v), step);
  return s;
}

Prescription prescribe(const DoctorModel& m, const Config& c, const std::string& row, const std::string& outcome,
                       const std::string& top) {
  Prescription rx;
  auto add = [&](std::string set, std::string why) {
    rx.overrides.push_back(std::move(set));
    rx.text += (rx.text.empty() ? "" : "\n") + why;
  };
  const int64_t N = c.model.decoder_layers;
  const double lr = c.train.lr;
  const AtlasCell* cell = row.empty() ? nullptr : nearest_cell(m, row, N);
  const int64_t warm = std::max<int64_t>(1, c.train.max_steps / 10);
  if (c.train.warmup_steps == 0)
    add(fmt::format("train.warmup_steps={}", warm),
        fmt::format("warm up for {} steps (10 % of the run): Xiong et al. 2020 §3.3", warm));
  if (outcome == "diverges") {
    if (cell && !cell->trained_lrs.empty() && lr > cell->trained_lrs.back()) {
      add("train.lr=" + lr_text(cell->trained_lrs.back()),
          fmt::format("cap the learning rate at {}: the largest that trained for {} at {} layers in the atlas",
                      lr_text(cell->trained_lrs.back()), row, cell->depth));
    } else if (post_ln_family(c)) {
      const auto k = deepnorm_coefficients(Arch::Decoder, 0, N);
      add("model.scheme=deepnorm",
          fmt::format(
              "DeepNorm (Wang et al. 2022): x ← LN(α x + G(x)), α = (2N)^¼ = {:.3f}, init gain β = (8N)^−¼ = {:.3f} "
              "for N = {} decoder layers",
              k.decoder_alpha, k.decoder_beta, N));
    } else {
      add("train.lr=" + lr_text(lr / 3), fmt::format("lower the learning rate to {} (one third)", lr_text(lr / 3)));
    }
    if ((top == "attn_logit" || top == "attn_logit_growth") && !c.model.qk_norm)
      add("model.qk_norm=true",
          "QK-LayerNorm: bounds the attention logits (Dehghani et al. 2023; Wortsman et al. 2023)");
    if (top == "log_z_drift" && c.train.z_loss == 0)
      add("train.z_loss=0.0001", "z-loss 1e-4: keeps log Z near 0 (PaLM; Wortsman et al. 2023 §3.2)");
    return rx;
  }
  // stalls
  if (post_ln_family(c)) {
    const AtlasCell* pre = nearest_cell(m, "pre", N);
    add("model.scheme=pre", "Pre-LN: the gradient reaches every layer without passing a norm (Xiong et al. 2020)");
    if (pre && pre->best_lr && *pre->best_lr != lr)
      add("train.lr=" + lr_text(*pre->best_lr),
          fmt::format("learning rate {}: Pre-LN's best at {} layers in the atlas", lr_text(*pre->best_lr), pre->depth));
    return rx;
  }
  if (cell && cell->best_lr && !cell->trained_lrs.empty() &&
      (lr < cell->trained_lrs.front() || lr > cell->trained_lrs.back())) {
    add("train.lr=" + lr_text(*cell->best_lr),
        fmt::format("learning rate {}: {}'s best at {} layers in the atlas (trained over {} … {})",
                    lr_text(*cell->best_lr), row, cell->depth, lr_text(cell->trained_lrs.front()),
                    lr_text(cell->trained_lrs.back())));
    return rx;
  }
  if (top == "lr_peak" || top == "loss" || lr <= 3e-4) {
    add("train.lr=" + lr_text(lr * 3),
        fmt::format("raise the learning rate to {} (×3): too slow to leave the plateau", lr_text(lr * 3)));
    return rx;
  }
  if (rx.overrides.empty()) {
    if (const AtlasCell* w = widest_cell(m, N); w && w->scheme != row) {
      for (auto& o : sweep::scheme_row(w->scheme).overrides()) rx.overrides.push_back(o);
      rx.overrides.push_back("train.lr=" + lr_text(*w->best_lr));
      rx.text += (rx.text.empty() ? "" : "\n") +
                 fmt::format("{}: it trained at {} of the atlas's rates at {} layers, best at lr {} ({:.3f} bits/byte)",
                             sweep::scheme_row(w->scheme).title, w->trained_lrs.size(), w->depth, lr_text(*w->best_lr),
                             *w->best_bpb);
    } else {
      add("train.lr=" + lr_text(lr / 3), fmt::format("lower the learning rate to {} (one third)", lr_text(lr / 3)));
    }
  }
  return rx;
}

}  // namespace

std::string scheme_row_of(const Config& c) {
  const auto now = config_to_json(c)["model"];
  for (auto& row : scheme_table()) {
    if (!row.used_by(kUseSweep)) continue;
    Config x = c;
    row.apply(x);
    auto j = config_to_json(x);
    if (j["model"] == now && x.train.z_loss == c.train.z_loss) return row.name;
  }
  return "";
}

Verdict judge(const DoctorModel& m, const Config& c, const Early& e, int64_t horizon) {
  Verdict v;
  v.scheme_row = scheme_row_of(c);
  if (e.diverged_step) {
    v.observed = true, v.outcome = "diverges", v.p_fail = v.p_diverge = 1.0, v.step = *e.diverged_step;
    v.mechanism = fmt::format("it diverged at step {} during the probe ({})", *e.diverged_step, e.cause);
    v.rx = prescribe(m, c, v.scheme_row, v.outcome, "");
    return v;
  }
  if (auto why = regime_mismatch(m, c); !why.empty()) {
    v.judged = false, v.not_judged = "outside the fitted regime: " + why;
    return v;
  }
  const auto s = signals_at(e.lines, horizon, c.train.lr);
  if (!s) {
    v.judged = false, v.not_judged = fmt::format("fewer than two logged training lines by step {}", horizon);
    return v;
  }
  v.step = s->step;
  const auto& names = signal_names();
  const auto contrib = m.fail.contributions(s->x);
  const auto& r = m.ranges;
  for (size_t i = 0; i < names.size(); ++i) {
    if (m.fail.w[i] == 0) continue;
    const double slack = 0.25 * (r[i].hi - r[i].lo);
    const bool out = s->x[i] != kMissing && (s->x[i] < r[i].lo - slack || s->x[i] > r[i].hi + slack);
    v.evidence.push_back({names[i], s->x[i], contrib[i], out});
  }
  const auto outside = signals_outside(m, s->x);
  std::sort(v.evidence.begin(), v.evidence.end(),
            [](const Evidence& a, const Evidence& b) { return std::abs(a.contribution) > std::abs(b.contribution); });
  if (!outside.empty()) {
    v.judged = false, v.not_judged = "signals outside the ranges the doctor was fitted on: " + outside;
    return v;
  }
  v.p_fail = m.fail.prob(s->x);
  v.p_diverge = m.diverge_fitted ? m.diverge.prob(s->x) : m.diverge_prior;
  v.outcome = v.p_fail < m.threshold ? "trains" : v.p_diverge >= 0.5 ? "diverges" : "stalls";
  std::string top;
  for (auto& ev : v.evidence)
    if (ev.contribution > 0 && ev.value != kMissing) {
      top = ev.signal;
      v.mechanism = mechanism_of(ev.signal, ev.value, v.step, c);
      break;
    }
  if (v.outcome == "trains") {
    v.mechanism = "its signals sit where runs that trained sat";
    return v;
  }
  v.rx = prescribe(m, c, v.scheme_row, v.outcome, top);
  return v;
}

nlohmann::json to_json(const Verdict& v) {
  nlohmann::json ev = nlohmann::json::array();
  for (auto& e : v.evidence)
    ev.push_back({{"signal", e.signal},
                  {"value", e.value == kMissing ? nlohmann::json(nullptr) : nlohmann::json(e.value)},
                  {"contribution", e.contribution},
                  {"outside_fitted_range", e.outside}});
  nlohmann::json j = {{"judged", v.judged}, {"scheme", v.scheme_row}, {"step", v.step}, {"evidence", ev}};
  if (!v.judged) {
    j["not_judged"] = v.not_judged;
    return j;
  }
  j["outcome"] = v.outcome, j["observed"] = v.observed, j["p_fails"] = v.p_fail,
  j["p_diverges_given_fails"] = v.p_diverge;
  j["mechanism"] = v.mechanism;
  j["prescription"] = {{"text", v.rx.text}, {"set", v.rx.overrides}};
  return j;
}

std::string render(const Verdict& v, const DoctorModel& m) {
  std::string out;
  if (!v.judged) return "verdict: cannot judge — " + v.not_judged + "\n";
  out += fmt::format("verdict: {}  (P(fails) = {:.2f}{})\n", v.outcome, v.p_fail,
                     v.observed ? ", observed" : fmt::format(", P(diverges | fails) = {:.2f}", v.p_diverge));
  out += "why: " + v.mechanism + "\n";
  if (!v.evidence.empty()) {
    out += fmt::format("evidence at step {} (runs that trained / that failed: 10th–90th percentile):\n", v.step);
    for (auto& e : v.evidence) {
      const auto& r = m.ranges[index_of(e.signal)];
      auto q = [](const std::vector<double>& x) {
        return x.size() == 3 ? fmt::format("{:>8.3g} … {:<8.3g}", x[0], x[2]) : std::string("      —            ");
      };
      out += fmt::format("  {:<18} {:>9}   trained {}  failed {}  {:+.2f}\n", e.signal,
                         e.value == kMissing ? "—" : fmt::format("{:.3g}", e.value), q(r.trains_q), q(r.fails_q),
                         e.contribution);
    }
  }
  if (!v.rx.overrides.empty()) {
    out += "prescription:\n";
    size_t a = 0;
    while (a <= v.rx.text.size()) {
      const auto b = std::min(v.rx.text.find('\n', a), v.rx.text.size());
      out += "  " + v.rx.text.substr(a, b - a) + "\n";
      a = b + 1;
    }
    out += " ";
    for (auto& o : v.rx.overrides) out += " --set " + o;
    out += "\n";
  }
  return out;
}

}  // namespace stx::doctor
