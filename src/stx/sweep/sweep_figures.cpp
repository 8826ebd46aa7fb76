// stx/sweep/sweep_figures.cpp — see sweep_figures.h.
#include "stx/sweep/sweep_figures.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include "stx/core/error.h"
#include "stx/report/metrics_schema.h"
#include "stx/report/panels.h"

namespace stx::sweep {

namespace fs = std::filesystem;

namespace {

using Records = std::vector<metrics::Record>;
namespace key = metrics::key;

// "step value" rows of the records holding a finite `key` (positive if log), step ≤ max_step, the
// value times `scale`.
std::string series(const Records& rs, const char* key, bool log, int64_t max_step, double scale = 1.0) {
  std::ostringstream s;
  s.precision(10);
  for (auto& r : rs) {
    const auto& j = r.json;
    if (!j.contains(key) || !j[key].is_number() || r.is_event()) continue;
    const double v = j[key].get<double>() * scale;
    const int64_t step = r.step;
    if (!std::isfinite(v) || (log && v <= 0) || step > max_step) continue;
    s << step << " " << v << "\n";
  }
  return s.str();
}

std::string legend(const RunResult& r) {
  if (r.ended() && r.guard_stop)  // "@" is special in enhanced text
    return fmt::format("{} (diverges: stopped at {})", scheme_row(r.scheme).title, r.step);
  if (r.ended() && r.outcome != Outcome::Trains) return scheme_row(r.scheme).title + " (" + to_string(r.outcome) + ")";
  return scheme_row(r.scheme).title;
}

// A horizontal line at y over [x0, x1] with its legend entry.
Curve level(double y, double x0, double x1, const std::string& style, const std::string& color,
            const std::string& title) {
  return {fmt::format("{1} {0}\n{2} {0}\n", y, x0, x1), style, color, title};
}

}  // namespace

std::vector<std::string> existing_figures(const std::string& dir, const Plan& p) {
  std::vector<std::string> names, out;
  for (auto d : p.depths)
    names.push_back(fmt::format("loss_L{}.png", d)), names.push_back(fmt::format("early_L{}.png", d));
  names.push_back("valid_vs_depth.png");
  for (auto& n : names)
    if (fs::exists(fs::path(dir) / "figures" / n)) out.push_back("figures/" + n);
  return out;
}

std::vector<std::string> draw_figures(const std::string& dir, const Plan& p, const std::vector<RunResult>& runs,
                                      int64_t early_steps) {
  const auto fig_dir = fs::path(dir) / "figures";
  std::error_code ec;
  fs::create_directories(fig_dir, ec);
  if (ec) throw InputError("cannot create " + fig_dir.string() + ": " + ec.message());
  std::map<std::string, Records> logs;
  for (auto& r : runs) {
    const auto m = metrics::path_in((fs::path(dir) / r.name).string());
    if (!fs::exists(m)) continue;
    try {
      logs[r.name] = metrics::read_metrics(m).records;
    } catch (const InputError&) {
      // a torn log: the run's row in the table says what happened; no curve here
    }
  }
  std::vector<std::string> out;
  const auto produced = [&](const std::string& name) {
    if (fs::exists(fig_dir / name)) out.push_back("figures/" + name);
  };
  const int64_t all = INT64_MAX;
  // The report's unit (sweep_report.h): bits per byte for byte-level runs, else nats per token;
  // H, the unigram entropy of the runs' training split (grid/outcome.h), as a line in it.
  const bool bits = p.base.data.tokenizer == TokenizerKind::Bytes;
  const double scale = bits ? 1.0 / std::log(2.0) : 1.0;
  const char* unit = bits ? "bits per byte" : "loss per token (nats)";
  double unigram = NAN;
  for (auto& r : runs)
    if (r.ended() && std::isfinite(r.unigram_bits)) unigram = r.unigram_bits;
  const auto unigram_line = [&](double x0, double x1) {
    return level(unigram * std::log(2.0) * scale, x0, x1, "lines lw 1.5 dt 4", "#444444",
                 fmt::format("unigram entropy H = {:.3f} {} (the plateau)", unigram * std::log(2.0) * scale,
                             bits ? "bits/byte" : "nats"));
  };
  for (auto d : p.depths) {
    const auto label = depth_label(p.base, d);
    Panel loss{"train loss (lines) and validation loss (points)", "update", unit, false, true, {}};
    Panel df{fmt::format("‖ΔF‖ from θ₀ on the probe batch (DeepNet Fig. 4), first {} updates", early_steps),
             "update",
             "mean token ‖ΔF‖₂",
             false,
             true,
             {}};
    Panel gn{fmt::format("global gradient norm before clipping, first {} updates", early_steps),
             "update",
             "‖g‖₂",
             false,
             true,
             {}};
    double ln_v = 0;
    for (auto& r : runs) {
      if (r.depth != d || !logs.count(r.name)) continue;
      if (r.vocab_size > 1) ln_v = std::log(static_cast<double>(r.vocab_size));
      const auto& rs = logs[r.name];
      const auto c = scheme_row(r.scheme).color;
      loss.curves.push_back({series(rs, key::loss, true, all, scale), "lines lw 2", c, legend(r)});
      loss.curves.push_back(
          {series(rs, bits ? key::valid_nll : key::valid_loss, true, all, scale), "points pt 7 ps 1.2", c, ""});
      df.curves.push_back({series(rs, key::delta_f, true, early_steps), "linespoints lw 2 pt 7 ps 0.6", c, legend(r)});
      gn.curves.push_back(
          {series(rs, key::grad_norm, true, early_steps), "linespoints lw 2 pt 7 ps 0.6", c, legend(r)});
    }
    if (std::any_of(loss.curves.begin(), loss.curves.end(), [](auto& c) { return !c.data.empty(); })) {
      if (ln_v > 0)
        loss.curves.push_back(level(ln_v * scale, 0, static_cast<double>(p.steps), "lines lw 1 dt 2", "#777777",
                                    bits ? "log₂ V (uniform guess)" : "ln V (uniform guess)"));
      if (std::isfinite(unigram)) loss.curves.push_back(unigram_line(0, static_cast<double>(p.steps)));
    }
    // One legend for both panels, under them.
    const std::string tight = "set autoscale yfix\nset offsets 0, 0, graph 0.04, graph 0.04\nset bmargin 7\n";
    df.extra = tight + "unset key\n";
    gn.extra = tight + "set key horizontal maxrows 2 width 2 at screen 0.5, screen 0.01 center bottom font ',10'\n";
    const auto loss_png = fmt::format("loss_L{}.png", d), early_png = fmt::format("early_L{}.png", d);
    loss.title = fmt::format("depth {}: {}", label, loss.title);
    draw_panels((fig_dir / loss_png).string(), {loss}, "", 1000, 600);
    produced(loss_png);
    draw_panels((fig_dir / early_png).string(), {df, gn},
                fmt::format("depth {}: the first {} updates", label, early_steps), 1500, 560);
    produced(early_png);
  }
  if (p.depths.size() >= 2) {  // final validation numbers vs depth, finished runs only
    const bool mt = p.base.data.task == Task::Translation;
    Panel v{mt ? "validation BLEU after N updates vs depth"
               : "validation loss after N updates vs depth (runs the divergence guard stopped omitted)",
            "layers per stack",
            mt     ? "BLEU"
            : bits ? "validation bits per byte"
                   : "validation loss per token (nats)",
            true,
            false,
            {}};
    for (auto& s : p.schemes) {
      std::ostringstream data;
      for (auto d : p.depths)
        for (auto& r : runs)
          if (r.scheme == s && r.depth == d && r.ended() && !r.guard_stop) {
            auto val = mt ? r.valid_bleu : bits ? r.valid_nll : r.valid_loss;
            if (val && !mt) *val *= scale;
            if (val && std::isfinite(*val)) data << d << " " << *val << "\n";
          }
      v.curves.push_back({data.str(), "linespoints lw 2 pt 7 ps 1.2", scheme_row(s).color, scheme_row(s).title});
    }
    if (!mt && std::isfinite(unigram))
      v.curves.push_back(unigram_line(static_cast<double>(*std::min_element(p.depths.begin(), p.depths.end())),
                                      static_cast<double>(*std::max_element(p.depths.begin(), p.depths.end()))));
    std::string tics;
    for (auto d : p.depths) tics += fmt::format("{}'{}' {}", tics.empty() ? "" : ", ", depth_label(p.base, d), d);
    v.extra = "set xtics (" + tics + ")\nset offsets graph 0.05, graph 0.05, graph 0.05, graph 0.05\n";
    draw_panels((fig_dir / "valid_vs_depth.png").string(), {v}, "", 1000, 600);
    produced("valid_vs_depth.png");
  }
  return out;
}

}  // namespace stx::sweep
