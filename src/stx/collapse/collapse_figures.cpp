// stx/collapse/collapse_figures.cpp — see collapse_figures.h.
#include "stx/collapse/collapse_figures.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "stx/report/metrics_schema.h"
#include "stx/report/panels.h"

namespace stx::collapse {

namespace fs = std::filesystem;
using Records = std::vector<metrics::Record>;
namespace key = metrics::key;
using grid::Outcome;

namespace {

const std::string kLoss = fmt::format("/{}", key::loss), kValidLoss = fmt::format("/{}", key::valid_loss);

// The JSON pointer to layer l of a per-layer key: "/attn_entropy" + "/decoder/self_attn" + "/mean/3".
std::string at(const char* k, const std::string& stack_kind, const char* field, size_t l) {
  return fmt::format("/{}{}/{}/{}", k, stack_kind, field, l);
}

const char* palette(size_t i) {
  static const char* c[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                            "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return c[i % 10];
}

// "step value" rows of the training lines (or, valid: validation lines) with a finite number at `ptr`.
std::string series(const Records& rs, const std::string& ptr, bool positive = false, bool valid = false) {
  const nlohmann::json::json_pointer p(ptr);
  std::ostringstream s;
  s.precision(8);
  for (auto& r : rs) {
    if (valid ? !r.validation() : !r.training()) continue;
    const auto& j = r.json;
    if (!j.contains(p) || !j[p].is_number()) continue;
    const double v = j[p].get<double>();
    if (std::isfinite(v) && (!positive || v > 0)) s << r.step << " " << v << "\n";
  }
  return s.str();
}

// The attention layers a run logs: "/decoder/self_attn" → layer count.
std::vector<std::pair<std::string, size_t>> attention_kinds(const Records& rs) {
  std::vector<std::pair<std::string, size_t>> out;
  for (auto& r : rs) {
    if (!r.training() || !r.json.contains(key::attn_entropy)) continue;
    for (auto& [stack, kinds] : r.json[key::attn_entropy].items())
      for (auto& [kind, f] : kinds.items())
        if (f.contains(metrics::kMean)) out.emplace_back("/" + stack + "/" + kind, f[metrics::kMean].size());
    break;
  }
  return out;
}

// Per training line: H_min and the bound of the same layer; and the largest σ_kq of any layer.
struct Lowest {
  std::string entropy, bound, sigma;
};
Lowest lowest(const Records& rs) {
  Lowest out;
  const auto kinds = attention_kinds(rs);
  const auto in = [](const char* k, const std::string& kind, const char* field, size_t l) {
    return nlohmann::json::json_pointer(at(k, kind, field, l));
  };
  for (auto& r : rs) {
    if (!r.training()) continue;
    const auto& j = r.json;
    double h = INFINITY, b = NAN, s = -INFINITY;
    for (auto& [k, n] : kinds)
      for (size_t l = 0; l < n; ++l) {
        const auto pe = in(key::attn_entropy, k, metrics::kMean, l),
                   pb = in(key::attn_entropy_bound, k, metrics::kMean, l),
                   ps = in(key::attn_sigma_kq, k, metrics::kMaxHead, l);
        if (j.contains(pe) && j[pe].is_number() && j[pe].get<double>() < h) {
          h = j[pe].get<double>();
          b = j.contains(pb) && j[pb].is_number() ? j[pb].get<double>() : NAN;
        }
        if (j.contains(ps) && j[ps].is_number()) s = std::max(s, j[ps].get<double>());
      }
    const auto st = r.step;
    if (std::isfinite(h)) out.entropy += fmt::format("{} {:.8g}\n", st, h);
    if (std::isfinite(b)) out.bound += fmt::format("{} {:.8g}\n", st, b);
    if (std::isfinite(s) && s > 0) out.sigma += fmt::format("{} {:.8g}\n", st, s);
  }
  return out;
}

Records records_of(const std::string& dir) {
  try {
    return metrics::run_records(dir);
  } catch (const std::exception&) {
    return {};
  }
}

std::string lr_label(const Entry& e) {
  std::string s = fmt::format("lr {:.3g}", e.lr);
  if (e.run.ended() && e.run.guard_stop) s += fmt::format(" (diverges: stopped at {})", e.run.step);
  else if (e.run.ended() && e.run.outcome != Outcome::Trains) s += " (" + grid::to_string(e.run.outcome) + ")";
  return s;
}

void run_figure(const std::string& png, const Entry& e, const Records& rs) {
  Panel loss{"loss", "update", "loss per token",
             false,  true,     {}};  // log y when the span is wide (no-norm runs start near 100)
  loss.curves.push_back({series(rs, kLoss), "lines lw 2", "#1f77b4", "train"});
  loss.curves.push_back({series(rs, kValidLoss, false, true), "points pt 7 ps 1.2", "#d62728", "valid"});
  Panel ent{"attention entropy: mean (solid), lowest head (dotted), Thm 3.1 bound (dashed)",
            "update",
            "nats",
            false,
            false,
            {}};
  Panel sig{"max over heads of ‖W_K W_Q^T‖_2/√d_h", "update", "spectral norm", false, true, {}};
  size_t c = 0;
  for (auto& [k, n] : attention_kinds(rs))
    for (size_t l = 0; l < n; ++l, ++c) {
      const auto label = fmt::format("{} {}", k.substr(1, k.find('/', 1) - 1) == "encoder" ? "enc" : "dec", l) +
                         (k.find("encoder_attn") != std::string::npos ? " cross" : "");
      ent.curves.push_back({series(rs, at(key::attn_entropy, k, metrics::kMean, l)), "lines lw 2", palette(c), label});
      ent.curves.push_back(
          {series(rs, at(key::attn_entropy, k, metrics::kMinHead, l)), "lines dt 3 lw 1", palette(c), ""});
      ent.curves.push_back(
          {series(rs, at(key::attn_entropy_bound, k, metrics::kMean, l)), "lines dt 2 lw 1", palette(c), ""});
      sig.curves.push_back(
          {series(rs, at(key::attn_sigma_kq, k, metrics::kMaxHead, l), true), "lines lw 2", palette(c), label});
    }
  draw_panels(png, {loss, ent, sig}, fmt::format("{}, {}", e.arm.title, lr_label(e)), 1800, 560);
}

void arm_figure(const std::string& png, const Arm& a, const std::vector<const Entry*>& es,
                const std::vector<Records>& rs) {
  Panel loss{"train loss", "update", "loss per token", false, true, {}};
  Panel ent{
      "lowest layer entropy H_min (solid), Thm 3.1 bound of that layer (dashed)", "update", "nats", false, false, {}};
  Panel sig{"largest ‖W_K W_Q^T‖_2/√d_h (any layer, head)", "update", "spectral norm", false, true, {}};
  for (size_t i = 0; i < es.size(); ++i) {
    const auto low = lowest(rs[i]);
    loss.curves.push_back({series(rs[i], kLoss), "lines lw 2", palette(i), lr_label(*es[i])});
    ent.curves.push_back({low.entropy, "lines lw 2", palette(i), fmt::format("lr {:.3g}", es[i]->lr)});
    ent.curves.push_back({low.bound, "lines dt 2 lw 1", palette(i), ""});
    sig.curves.push_back({low.sigma, "lines lw 2", palette(i), fmt::format("lr {:.3g}", es[i]->lr)});
  }
  draw_panels(png, {loss, ent, sig}, a.title + ": one colour per learning rate", 1800, 560);
}

}  // namespace

std::vector<std::string> existing_figures(const std::string& dir, const CollapsePlan& p,
                                          const std::vector<Entry>& entries) {
  std::vector<std::string> names{"lr_robustness.png"}, out;
  for (auto& a : p.arms) names.push_back("arm_" + a.name + ".png");
  for (auto& e : entries) names.push_back("run_" + run_name(e.arm, e.multiplier) + ".png");
  for (auto& n : names)
    if (fs::exists(fs::path(dir) / "figures" / n)) out.push_back("figures/" + n);
  return out;
}

std::vector<std::string> draw_figures(const std::string& dir, const CollapsePlan& p,
                                      const std::vector<Entry>& entries) {
  const fs::path fig_dir = fs::path(dir) / "figures";
  std::error_code ec;
  fs::create_directories(fig_dir, ec);
  std::vector<std::string> out;
  auto add = [&](const std::string& name) {
    if (fs::exists(fig_dir / name)) out.push_back("figures/" + name);
  };
  // Learning-rate robustness: final validation loss vs lr; runs that diverge as crosses at ln V.
  int64_t vocab = p.base.data.spm_vocab_size;  // as requested; the runs' real size when known
  for (auto& e : entries)
    if (e.run.vocab_size > 0) vocab = e.run.vocab_size;
  const double lnV = std::log(static_cast<double>(vocab));
  Panel lr{"final validation loss vs learning rate (× or +: diverges, drawn at ln V, dotted)",
           "learning rate",
           "validation loss (log)",
           true,
           true,
           {}};
  lr.extra = fmt::format(
      "set arrow from graph 0, first {0:.6g} to graph 1, first {0:.6g} nohead dt 3 lc rgb '#999999'\n", lnV);
  int pt = 0;
  for (auto& a : p.arms) {
    std::string ok, bad;
    ++pt;
    for (auto& e : entries) {
      if (e.arm.name != a.name || !e.run.ended()) continue;
      if (e.run.outcome == Outcome::Diverges) bad += fmt::format("{:.6g} {:.6g}\n", e.lr, lnV);
      else if (e.run.valid_loss) ok += fmt::format("{:.6g} {:.6g}\n", e.lr, *e.run.valid_loss);
    }
    // One point type per arm, so coinciding points of two arms stay distinguishable.
    static const int kPt[] = {7, 5, 9, 11, 13, 4, 6};
    lr.curves.push_back({ok, fmt::format("linespoints lw 2 pt {} ps 1.3", kPt[(pt - 1) % 7]), a.color, a.title});
    lr.curves.push_back(
        {bad, fmt::format("points pt {} ps 2.5 lw 2", pt % 2 ? 2 : 1), a.color, ok.empty() ? a.title : ""});
  }
  draw_panels((fig_dir / "lr_robustness.png").string(), {lr}, "", 1100, 650);
  add("lr_robustness.png");
  for (auto& a : p.arms) {
    std::vector<const Entry*> es;
    std::vector<Records> rs;
    for (auto& e : entries) {
      if (e.arm.name != a.name || e.run.outcome == Outcome::NotStarted) continue;
      es.push_back(&e);
      rs.push_back(records_of((fs::path(dir) / run_name(e.arm, e.multiplier)).string()));
      run_figure((fig_dir / ("run_" + run_name(e.arm, e.multiplier) + ".png")).string(), e, rs.back());
    }
    if (es.empty()) continue;
    arm_figure((fig_dir / ("arm_" + a.name + ".png")).string(), a, es, rs);
    add("arm_" + a.name + ".png");
  }
  for (auto& e : entries) add("run_" + run_name(e.arm, e.multiplier) + ".png");
  return out;
}

}  // namespace stx::collapse
