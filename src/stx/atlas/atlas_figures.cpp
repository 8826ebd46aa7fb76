// stx/atlas/atlas_figures.cpp — see atlas_figures.h.
#include "stx/atlas/atlas_figures.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "stx/atlas/atlas_map.h"
#include "stx/config/schemes.h"
#include "stx/core/error.h"
#include "stx/report/metrics_schema.h"
#include "stx/report/metrics_signals.h"
#include "stx/report/panels.h"
#include "stx/sweep/sweep_plan.h"

namespace stx::atlas {

namespace fs = std::filesystem;

namespace {

const SchemeRow& row(const std::string& s) { return sweep::scheme_row(s); }

// The failed runs drawn: per (scheme, depth) the failure at the lowest rate.
std::vector<const Entry*> failures_drawn(const std::vector<Entry>& entries) {
  std::vector<const Entry*> out;
  std::set<std::pair<std::string, int64_t>> seen;
  for (auto& e : entries)
    if (e.reading.failure_step && e.run.seed == 0 && seen.insert({e.run.scheme, e.run.depth}).second) out.push_back(&e);
  return out;
}

// "step value" rows of the training lines where f gives a finite value.
template <typename F>
std::string series(const std::vector<metrics::Record>& rs, F f) {
  std::ostringstream s;
  s.precision(8);
  for (auto& r : rs) {
    if (!r.training()) continue;
    const std::optional<double> v = f(r);
    if (v && std::isfinite(*v)) s << r.step << " " << *v << "\n";
  }
  return s.str();
}

// Final bits per byte vs the gradient reach at the first training line, one colour per label.
std::optional<std::string> draw_grad_reach(const std::string& dir, const AtlasPlan& p,
                                           const std::vector<Entry>& entries, double unigram) {
  static const std::map<grid::Outcome, std::string> kColour = {{grid::Outcome::Trains, "#1a9850"},
                                                               {grid::Outcome::TooSlow, "#fdae61"},
                                                               {grid::Outcome::Stalls, "#737373"},
                                                               {grid::Outcome::SpikedAndRecovered, "#f46d43"},
                                                               {grid::Outcome::Diverges, "#b2182b"}};
  Panel pan{"final loss against the gradient reach at the first training line",
            "gradient reach: ‖g‖ bottom layer ÷ ‖g‖ top layer, first training line (log)",
            "final bits per byte",
            true,
            false,
            {},
            ""};
  double lo = INFINITY, hi = 0;
  for (auto label : grid::kLabels) {
    std::ostringstream pts;
    int n = 0;
    for (auto& e : entries) {
      const auto& g = e.reading.grad_reach;
      const auto& b = e.reading.final_bpb;
      if (!e.result.ended() || e.result.outcome != label || !g || !b || !(*g > 0) || !std::isfinite(*b)) continue;
      pts << *g << " " << *b << "\n", ++n;
      lo = std::min(lo, *g), hi = std::max(hi, *g);
    }
    pan.curves.push_back({pts.str(), "points pt 7 ps 0.8", kColour.at(label),
                          n ? fmt::format("{} ({})", grid::to_string(label), n) : ""});
  }
  if (!(hi > 0)) return std::nullopt;
  if (std::isfinite(unigram))
    pan.curves.push_back(
        {fmt::format("{0:.6g} {2:.6g}\n{1:.6g} {2:.6g}\n", lo / 1.5, hi * 1.5, grid::plateau_cut(unigram)),
         "lines dt 2 lw 1.5", "#444444", fmt::format("plateau cut H − 0.1 = {:.3f}", grid::plateau_cut(unigram))});
  pan.extra = "set key outside right top font ',9'\n";
  const auto png = (fs::path(dir) / "figures" / "grad_reach.png").string();
  draw_panels(
      png, {pan},
      "Does the gradient reach the bottom layer? Every ended run (outcome labels: docs/reference.md#run-outcomes)",
      1100, 600);
  (void)p;
  return fs::exists(png) ? std::optional<std::string>("figures/grad_reach.png") : std::nullopt;
}

}  // namespace

std::vector<std::string> existing_figures(const std::string& dir, const AtlasPlan& p,
                                          const std::vector<Entry>& entries) {
  std::vector<std::string> out;
  std::vector<std::string> names{kMapFigure, "loss_vs_lr.png", "grad_reach.png", "sensitivity_vs_depth.png"};
  for (auto* e : failures_drawn(entries)) names.push_back("failure_" + e->run.name + ".png");
  for (auto& n : names)
    if (fs::exists(fs::path(dir) / "figures" / n)) out.push_back("figures/" + n);
  (void)p;
  return out;
}

std::vector<std::string> draw_figures(const std::string& dir, const AtlasPlan& p, const std::vector<Entry>& entries) {
  fs::create_directories(fs::path(dir) / "figures");
  const double l0 = init_loss_bits(p);
  const double unigram = unigram_entropy_bits(p);
  std::vector<std::string> out;
  if (auto m = draw_map(dir, p, entries)) out.push_back(*m);
  // Loss vs learning rate, a panel per depth.
  std::vector<Panel> panels;
  // The one legend goes on the last panel drawn: the deepest depth with an ended run.
  int64_t legend_depth = -1;
  for (auto& e : entries)
    if (e.run.warmup && e.run.seed == 0 && e.result.ended()) legend_depth = std::max(legend_depth, e.run.depth);
  for (auto d : p.depths) {
    Panel pan{fmt::format("{} layers", d), "learning rate", "final bits per byte", true, false, {}, ""};
    for (auto& s : p.schemes) {
      std::ostringstream ok, bad;
      for (auto& e : entries) {
        if (e.run.scheme != s || e.run.depth != d || !e.run.warmup || e.run.seed != 0 || !e.result.ended()) continue;
        if (auto l = loss_of(e)) ok << e.run.lr << " " << *l << "\n";
        else bad << e.run.lr << " " << l0 << "\n";
      }
      // A scheme with no run in the legend's panel still gets its entry there (one point far
      // left of the x range, clipped).
      if (d == legend_depth && ok.str().empty() && bad.str().empty()) ok << p.lrs.front() * 1e-6 << " " << l0 << "\n";
      pan.curves.push_back({ok.str(), "linespoints pt 7 ps 0.6 lw 1.5", row(s).color, row(s).title});
      pan.curves.push_back({bad.str(), "points pt 2 ps 1.2", row(s).color, ""});
    }
    if (std::isfinite(unigram))
      pan.curves.push_back({fmt::format("{0:g} {2:.6g}\n{1:g} {2:.6g}\n", p.lrs.front() / 2, p.lrs.back() * 2, unigram),
                            "lines dt 2 lw 1.5", "#444444",
                            d == legend_depth ? fmt::format("unigram entropy H = {:.3f} (plateau)", unigram) : ""});
    // Decade tics over the plan's rates; one legend, not one per depth.
    std::string tics;
    for (double t = std::pow(10.0, std::floor(std::log10(p.lrs.front()))); t <= p.lrs.back() * 1.0001; t *= 10)
      tics += fmt::format("{}'{:g}' {:g}", tics.empty() ? "" : ", ", t, t);
    pan.extra = fmt::format("set xrange [{:g}:{:g}]\nset xtics ({})\n{}\n", p.lrs.front() / 2, p.lrs.back() * 2, tics,
                            d == legend_depth ? "set key outside right top font ',9'" : "unset key");
    panels.push_back(pan);
  }
  const auto lr_png = (fs::path(dir) / "figures" / "loss_vs_lr.png").string();
  draw_panels(lr_png, panels,
              "Final loss vs learning rate (× : failed, drawn at ℓ₀ = log₂ V; dashed: the unigram entropy H)",
              400 * static_cast<int>(std::max<size_t>(1, p.depths.size())) + 500, 520);
  if (fs::exists(lr_png)) out.push_back("figures/loss_vs_lr.png");
  if (auto g = draw_grad_reach(dir, p, entries, unigram)) out.push_back(*g);
  // Sensitivity vs depth.
  const auto cells = summarize(p, entries);
  Panel sens{"learning-rate sensitivity", "depth (layers)", "mean min(ℓ(η), ℓ₀) − ℓ* (bits)", true, false, {}, ""};
  for (auto& s : p.schemes) {
    std::ostringstream c;
    for (auto d : p.depths)
      if (auto& cell = cells.at({s, d}); cell.sensitivity && cell.sensitivity_rates >= p.lrs.size())
        c << d << " " << *cell.sensitivity << "\n";  // over the whole grid only (atlas_report.cpp)
    sens.curves.push_back({c.str(), "linespoints pt 7 ps 0.7 lw 1.5", row(s).color, row(s).title});
  }
  const auto s_png = (fs::path(dir) / "figures" / "sensitivity_vs_depth.png").string();
  draw_panels(s_png, {sens},
              "Learning-rate sensitivity vs depth (Wortsman et al. 2023; rows that ran the whole rate grid)", 900, 600);
  if (fs::exists(s_png)) out.push_back("figures/sensitivity_vs_depth.png");
  // Failures.
  for (auto* e : failures_drawn(entries)) {
    std::vector<metrics::Record> rs;
    try {
      rs = metrics::run_records((fs::path(dir) / "runs" / e->run.name).string());
    } catch (const InputError&) {
      continue;
    }
    if (rs.empty()) continue;
    const auto& c = row(e->run.scheme).color;
    std::vector<Panel> ps{
        {"train loss",
         "step",
         "nats",
         false,
         false,
         {{series(rs, [](const metrics::Record& r) { return std::optional<double>(r.loss); }), "lines lw 1.5", c, ""}},
         ""},
        {"gradient norm",
         "step",
         "‖g‖",
         false,
         true,
         {{series(rs, [](const metrics::Record& r) { return r.grad_norm; }), "lines lw 1.5", c, ""}},
         ""},
        {"largest attention logit",
         "step",
         "",
         false,
         false,
         {{series(rs, metrics::max_attn_logit), "lines lw 1.5", c, ""}},
         ""},
        {"max log Z",
         "step",
         "",
         false,
         false,
         {{series(rs, [](const metrics::Record& r) { return r.log_z_max; }), "lines lw 1.5", c, ""}},
         ""}};
    const auto name = "failure_" + e->run.name + ".png";
    const auto png = (fs::path(dir) / "figures" / name).string();
    draw_panels(
        png, ps,
        fmt::format("{}: {} at step {}{}", e->run.name, e->reading.failure, *e->reading.failure_step,
                    e->reading.first_mover.empty() ? ""
                                                   : fmt::format(" ({} moved first, step {})", e->reading.first_mover,
                                                                 *e->reading.first_mover_step)),
        1400, 380);
    if (fs::exists(png)) out.push_back("figures/" + name);
  }
  return out;
}

}  // namespace stx::atlas
