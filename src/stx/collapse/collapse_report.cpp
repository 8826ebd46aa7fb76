// stx/collapse/collapse_report.cpp — see collapse_report.h.
#include "stx/collapse/collapse_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "stx/core/atomic_file.h"
#include "stx/grid/run_status.h"

namespace stx::collapse {

namespace fs = std::filesystem;
using grid::Outcome;

namespace {

std::string num(const std::optional<double>& v, const char* f = "{:.3f}") {
  return v ? fmt::format(fmt::runtime(f), *v) : "";
}
std::string step(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : ""; }

std::string outcome_text(const Entry& e) {
  if (!e.skipped.empty()) return "not run";
  if (e.run.ended() && e.run.guard_stop)
    return fmt::format("diverges @ {} ({})", e.run.step, grid::short_cause(e.run.cause));
  return grid::to_string(e.run.outcome);
}

// The measured relation between collapse and failure over the ended runs.
struct Tally {
  int ended = 0, failed = 0, collapsed = 0, collapse_then_fail = 0, fail_without = 0, collapse_no_fail = 0;
  std::vector<int64_t> leads;  // failure step − collapse step
};
Tally tally(const std::vector<Entry>& es) {
  Tally t;
  for (auto& e : es) {
    if (!e.run.ended()) continue;
    ++t.ended;
    const auto& g = e.reading;
    t.failed += g.failure_step.has_value();
    t.collapsed += g.collapse_step.has_value();
    if (g.relation == "collapse → failure")
      ++t.collapse_then_fail, t.leads.push_back(*g.failure_step - *g.collapse_step);
    if (g.relation == "failure, no collapse before") ++t.fail_without;
    if (g.relation == "collapse, no failure") ++t.collapse_no_fail;
  }
  std::sort(t.leads.begin(), t.leads.end());
  return t;
}

std::string markdown(const std::string& command, const CollapsePlan& p, const std::vector<Entry>& es,
                     const std::vector<std::string>& figures) {
  const auto& m = p.base.model;
  std::ostringstream md;
  md << "# Attention-entropy collapse: learning rate × configuration\n\nProduced by\n\n    " << command << "\n\n";
  md << fmt::format(
      "Base config `{}`: {}, {} layers, d_model {}, {} heads, d_ff {}, task {}, corpus `{}`, {} tokens per batch; "
      "every run "
      "trains {} updates from scratch (seed {}) with a constant learning rate and **no warm-up**; the divergence guard "
      "stops a "
      "run at a non-finite loss or a loss spike (train.spike_zscore {}). Adam runs: lr = {:g} × multiplier; SGD runs "
      "(momentum {:g}): lr = {:g} × multiplier.{}\n\n",
      p.config_path.empty() ? "(defaults)" : p.config_path, to_string(m.arch),
      m.has_encoder() && m.has_decoder() ? fmt::format("{}-{}", m.encoder_layers, m.decoder_layers)
                                         : std::to_string(m.has_decoder() ? m.decoder_layers : m.encoder_layers),
      m.d_model, m.n_heads, m.d_ff, to_string(p.base.data.task), p.base.data.corpus, p.base.train.max_tokens, p.steps,
      p.base.train.seed, p.base.train.spike_zscore, p.base.train.lr, p.base.train.momentum, p.sgd_lr,
      p.quick ? " **Quick mode.**" : "");
  size_t ended = 0, skipped = 0;
  for (auto& e : es) ended += e.run.ended(), skipped += !e.skipped.empty();
  if (ended + skipped < es.size())
    md << fmt::format("**Incomplete: {} of {} runs have ended.** Rerun the command above to continue.\n\n",
                      ended + skipped, es.size());

  md << "## Learning rates that train\n\n| configuration | learning rates run | trains at | first run that does not "
        "train |\n|---|---|---|---|\n";
  for (auto& a : p.arms) {
    std::string run, first_fail;
    for (auto& e : es) {
      if (e.arm.name != a.name || !e.run.ended()) continue;
      run += (run.empty() ? "" : ", ") + fmt::format("{:.3g}", e.lr);
      if (first_fail.empty() && e.run.outcome != Outcome::Trains)
        first_fail = fmt::format("{:.3g}: {}", e.lr, outcome_text(e));
    }
    md << fmt::format("| {} | {} | {} | {} |\n", a.title, run, trained_range(es, a.name),
                      first_fail.empty() ? "none" : first_fail);
  }
  double h = NAN;
  for (auto& e : es)
    if (e.run.ended() && std::isfinite(e.run.unigram_bits)) h = e.run.unigram_bits;
  md << fmt::format(
      "\nOutcomes (docs/reference.md#run-outcomes), with H the unigram entropy of the training split ({}), f the last "
      "validation nll / ln 2 and c = H − 0.1: *trains* — no loss spike (a logged train loss ≥ 1 nat above the lowest "
      "before it), f < c; *too slow* — no spike, f ≥ c (the unigram plateau), the train loss still falling; *stalls* — "
      "no spike, f ≥ c, no longer falling; *spiked and recovered* — a spike, then f < c; *diverges* — the divergence "
      "guard stopped it, or a spike and f ≥ c.\n\n",
      std::isfinite(h) ? fmt::format("{:.3f} bits per token = {:.3f} nats", h, h * std::log(2.0))
                       : std::string("not computed yet"));

  const auto t = tally(es);
  md << fmt::format(
      "## Entropy collapse and failure\n\nCollapse: the lowest layer's head-averaged attention entropy H_min "
      "falls below **{:g} nats** at a logged step. Failure: the run diverged (the guard stopped it) or its train "
      "loss rose more than {:g} nats above its lowest earlier value, whichever came first.\n\n",
      p.threshold, p.spike_nats);
  md << fmt::format(
      "Of **{}** ended runs, **{}** failed and **{}** collapsed: collapse came at or before the failure in "
      "**{}** of the {} failures ({} failed without a collapse before), and **{}** runs collapsed without failing.",
      t.ended, t.failed, t.collapsed, t.collapse_then_fail, t.failed, t.fail_without, t.collapse_no_fail);
  if (!t.leads.empty())
    md << fmt::format(" Steps from collapse to failure: median {}, range {}–{}.", t.leads[t.leads.size() / 2],
                      t.leads.front(), t.leads.back());
  md << "\n\n## Runs\n\n| run | lr | outcome | valid loss | H_min first → last (lowest @ step) | collapse @ | failure "
        "| relation "
        "| max ‖W_K W_Qᵀ‖₂/√d_h | min(Ent − bound) | wall |\n|---|---:|---|---:|---|---:|---|---|---:|---:|---:|\n";
  for (auto& e : es) {
    const auto& g = e.reading;
    const auto name = run_name(e.arm, e.multiplier);
    md << fmt::format("| [{}]({}/) | {:.3g} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", name, name, e.lr,
                      outcome_text(e), num(e.run.valid_loss),
                      g.min_entropy ? fmt::format("{:.3f} → {:.3f} ({:.3f} @ {})", *g.first_entropy, *g.last_entropy,
                                                  *g.min_entropy, g.min_entropy_step)
                                    : "",
                      step(g.collapse_step), g.failure_step ? fmt::format("{} @ {}", g.failure, *g.failure_step) : "",
                      e.run.ended() ? g.relation : "", num(g.max_sigma_kq, "{:.3g}"), num(g.min_bound_gap, "{:.3g}"),
                      e.run.seconds > 0 ? grid::duration_text(e.run.seconds) : "");
  }
  md << "\nmin(Ent − bound): the smallest margin, over logged steps and layers, of the measured head-averaged entropy "
        "over "
        "Zhai et al.'s Theorem 3.1 lower bound computed from the layer's own ‖W_K W_Qᵀ‖₂ and ‖XXᵀ‖₂ on the probe batch "
        "(docs/metrics.md); ≥ 0 wherever the theorem holds.\n";
  if (!figures.empty()) {
    md << "\n## Figures\n\n";
    for (auto& f : figures) md << fmt::format("![{}]({})\n\n", fs::path(f).stem().string(), f);
  }
  return md.str();
}

}  // namespace

std::string trained_range(const std::vector<Entry>& es, const std::string& arm) {
  std::vector<double> ok;
  for (auto& e : es)
    if (e.arm.name == arm && e.run.outcome == Outcome::Trains) ok.push_back(e.lr);
  if (ok.empty()) return "none";
  std::sort(ok.begin(), ok.end());
  return ok.size() == 1 ? fmt::format("{:.3g}", ok[0])
                        : fmt::format("{:.3g} … {:.3g} ({} runs)", ok.front(), ok.back(), ok.size());
}

void write_report(const std::string& dir, const std::string& command, const CollapsePlan& p,
                  const std::vector<Entry>& es, const std::vector<std::string>& figures) {
  nlohmann::json runs = nlohmann::json::array();
  for (auto& e : es) {
    auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
    runs.push_back({{"run", run_name(e.arm, e.multiplier)},
                    {"arm", e.arm.name},
                    {"multiplier", e.multiplier},
                    {"lr", e.lr},
                    {"outcome", e.skipped.empty() ? grid::to_string(e.run.outcome) : "not-run"},
                    {"guard_stop", e.run.guard_stop},
                    {"skipped", e.skipped},
                    {"step", e.run.step},
                    {"cause", e.run.cause},
                    {"valid_loss", opt(e.run.valid_loss)},
                    {"seconds", e.run.seconds},
                    {"reading", to_json(e.reading)}});
  }
  const auto t = tally(es);
  nlohmann::json j = {{"command", command},
                      {"threshold_nats", p.threshold},
                      {"spike_nats", p.spike_nats},
                      {"runs", runs},
                      {"relation",
                       {{"ended", t.ended},
                        {"failed", t.failed},
                        {"collapsed", t.collapsed},
                        {"collapse_then_failure", t.collapse_then_fail},
                        {"failure_without_collapse", t.fail_without},
                        {"collapse_without_failure", t.collapse_no_fail}}},
                      {"figures", figures}};
  const auto md = markdown(command, p, es, figures);
  write_text_atomically((fs::path(dir) / "report.json").string(), j.dump(2) + "\n");
  write_text_atomically((fs::path(dir) / "report.md").string(), md);
}

}  // namespace stx::collapse
