// stx/sweep/sweep_report.cpp — see sweep_report.h.
#include "stx/sweep/sweep_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "stx/config/config_io.h"
#include "stx/core/atomic_file.h"

namespace stx::sweep {

namespace fs = std::filesystem;

namespace {

nlohmann::json opt(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }
std::string num(const std::optional<double>& v, const char* f = "{:.3f}") {
  return v ? fmt::format(fmt::runtime(f), *v) : "";
}

const RunResult* find(const Report& rep, const std::string& scheme, int64_t depth) {
  for (auto& r : rep.runs)
    if (r.scheme == scheme && r.depth == depth) return &r;
  return nullptr;
}

// "x ← … (paper; model.scheme=…, model.sigma_reparam=…)": the row's definition and overrides.
std::string scheme_definition(const std::string& s) {
  const auto& row = scheme_row(s);
  std::string o;
  const auto& off = modifier_defaults();  // listed only when the row switches one on
  for (auto& a : row.overrides())
    if (std::find(off.begin(), off.end(), a) == off.end()) o += (o.empty() ? "" : ", ") + a;
  return row.definition + " (" + o + ")";
}

std::string markdown(const Report& rep) {
  const Plan& p = *rep.plan;
  const bool mt = p.base.data.task == Task::Translation;
  const auto& m = p.base.model;
  std::ostringstream md;
  md << "# Depth sweep: residual scheme × depth\n\nProduced by\n\n    " << rep.command << "\n\n";
  md << fmt::format(
      "Base config `{}`: {}, d_model {}, {} heads, d_ff {}, task {}, corpus `{}`; every run trains N = {} updates "
      "(train.max_steps) from scratch with seed {}.\n\n",
      p.config_path.empty() ? "(defaults)" : p.config_path, to_string(m.arch), m.d_model, m.n_heads, m.d_ff,
      to_string(p.base.data.task), p.base.data.corpus, p.steps, p.base.train.seed);
  size_t ended = 0;
  for (auto& r : rep.runs) ended += r.ended();
  if (ended < rep.runs.size())
    md << fmt::format(
        "**Incomplete: {} of {} runs have ended.** Rerun the command above to continue (finished runs are skipped, "
        "interrupted ones resumed).\n\n",
        ended, rep.runs.size());

  md << (mt ? "## Validation BLEU (validation loss) after N updates\n\n" : "## Validation loss after N updates\n\n");
  md << "| scheme |";
  for (auto d : p.depths) md << " " << depth_label(p.base, d) << " |";
  md << "\n|---|";
  for (size_t i = 0; i < p.depths.size(); ++i) md << "---:|";
  md << "\n";
  for (auto& s : p.schemes) {
    md << "| " << scheme_row(s).title << " |";
    for (auto d : p.depths) {
      const auto* r = find(rep, s, d);
      md << " " << (r ? cell(*r, mt) : "—") << " |";
    }
    md << "\n";
  }
  const auto& t = p.base.train;
  const auto loss_text =
      fmt::format("validation loss per token (`valid_loss`: cross-entropy{}{})",
                  t.label_smoothing > 0 ? fmt::format(", label-smoothed ε = {}", t.label_smoothing) : "",
                  t.valid_sentences > 0 ? fmt::format(", first {} validation examples", t.valid_sentences) : "");
  md << "\n"
     << (mt ? fmt::format("Cells: greedy BLEU on the first {} validation sentences ({})", t.valid_bleu_sentences,
                          loss_text)
            : "Cells: " + loss_text)
     << " at the run's last validation (step N); see the legend below.\n\n";

  md << "## Runs\n\n| run | outcome | step | train loss: first → last 10 % | valid loss | valid ppl |"
     << (mt ? " BLEU |" : "") << " guard events | wall time |\n|---|---|---:|---|---:|---:|" << (mt ? "---:|" : "")
     << "---:|---:|\n";
  for (auto& r : rep.runs) {
    std::string outcome = to_string(r.outcome);
    if (r.outcome == Outcome::Diverged || r.outcome == Outcome::Failed) outcome += ": " + r.cause;
    md << fmt::format("| [{}]({}/) | {} | {} | {} | {} | {} |", r.name, r.name, outcome, r.step,
                      r.first_loss ? num(r.first_loss) + " → " + num(r.end_loss) : "", num(r.valid_loss),
                      r.valid_nll ? fmt::format("{:.4g}", std::exp(*r.valid_nll)) : "");
    if (mt) md << " " << num(r.valid_bleu, "{:.2f}") << " |";
    md << fmt::format(" {} | {} |\n", r.divergence_events, r.seconds > 0 ? duration_text(r.seconds) : "");
  }

  if (!rep.figures.empty()) {
    md << "\n## Figures\n\n";
    for (auto& f : rep.figures) md << "![" << fs::path(f).stem().string() << "](" << f << ")\n\n";
  }

  md << "## Legend\n\n";
  for (auto& s : p.schemes)
    md << "- **" << scheme_row(s).title << "** (`" << s << "`): " << scheme_definition(s) << ".\n";
  md << (m.arch == Arch::EncoderDecoder
             ? "- Depth **NL-NL** (e.g. 18L-18L): an encoder-decoder with N encoder and N decoder layers "
               "(model.encoder_layers = model.decoder_layers = N), as DeepNet Table 1 writes it.\n"
         : m.arch == Arch::Decoder ? "- Depth **NL** (e.g. 18L): model.decoder_layers = N.\n"
                                   : "- Depth **NL** (e.g. 18L): model.encoder_layers = N.\n");
  md << "- **diverged @ S (cause)**: `stx train` stopped at update S (exit 1): a non-finite loss or gradient norm "
        "(`non-finite`), or a loss more than train.spike_zscore standard deviations above the mean of the last "
        "train.spike_window losses (`loss spike`); train.on_divergence decides whether the guard first skips or rolls "
        "back "
        "(`guard events` counts them).\n"
        "- **stalled**: finished all N updates but did not learn: L_end ≥ 0.9 · L_first, where L_first is the first "
        "logged "
        "train loss and L_end the mean train loss over the last 10 % (at least one) of the logged training lines "
        "(needs two "
        "or more), or the last validation nll ≥ ln V, the loss of the uniform guess over the vocabulary of V pieces.\n"
        "- **converged**: finished all N updates and not stalled.\n"
        "- **interrupted / stopped @ S**: has a checkpoint at step < N; rerunning the sweep resumes it. **failed**: "
        "the "
        "`stx train` child crashed or was killed (e.g. out of memory); rerunning the sweep retries it. **—**: not "
        "started.\n"
        "- Each run's directory holds its `config.yaml`, `metrics.jsonl`, `train.log` (the child's output) and "
        "`sweep_status.json`; `stx plot RUN…` draws every diagnostic. All numbers are in `sweep.json`.\n";
  return md.str();
}

}  // namespace

std::string cell(const RunResult& r, bool translation) {
  switch (r.outcome) {
    case Outcome::NotStarted: return "—";
    case Outcome::Interrupted: return fmt::format("stopped @ {}", r.step);
    case Outcome::Failed: return "failed (" + r.cause + ")";
    case Outcome::Diverged: return fmt::format("diverged @ {} ({})", r.step, short_cause(r.cause));
    case Outcome::Converged:
    case Outcome::Stalled: {
      std::string v = translation && r.valid_bleu
                          ? fmt::format("{:.2f} ({})", *r.valid_bleu, num(r.valid_loss, "{:.2f}"))
                          : num(r.valid_loss);
      if (v.empty()) v = "no valid loss";
      return r.outcome == Outcome::Stalled ? v + " (stalled)" : v;
    }
  }
  return "?";
}

void write_report(const std::string& dir, const Report& rep) {
  nlohmann::json runs = nlohmann::json::array();
  for (auto& r : rep.runs)
    runs.push_back({{"name", r.name},
                    {"scheme", r.scheme},
                    {"depth", r.depth},
                    {"depth_label", depth_label(rep.plan->base, r.depth)},
                    {"outcome", to_string(r.outcome)},
                    {"step", r.step},
                    {"cause", r.cause},
                    {"exit_code", r.exit_code},
                    {"seconds", r.seconds},
                    {"divergence_events", r.divergence_events},
                    {"vocab_size", r.vocab_size},
                    {"first_loss", opt(r.first_loss)},
                    {"end_loss", opt(r.end_loss)},
                    {"valid_step", r.valid_step},
                    {"valid_loss", opt(r.valid_loss)},
                    {"valid_nll", opt(r.valid_nll)},
                    {"valid_ppl", r.valid_nll ? nlohmann::json(std::exp(*r.valid_nll)) : nlohmann::json(nullptr)},
                    {"valid_bleu", opt(r.valid_bleu)}});
  const nlohmann::json j = {
      {"command", rep.command}, {"plan", plan_json(*rep.plan)}, {"runs", runs}, {"figures", rep.figures}};
  write_text_atomically((fs::path(dir) / "sweep.json").string(), j.dump(2) + "\n");
  const auto md = markdown(rep);
  write_text_atomically((fs::path(dir) / "sweep.md").string(), md);
}

}  // namespace stx::sweep
