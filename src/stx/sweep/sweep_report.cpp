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

nlohmann::json opt(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
std::string num(const std::optional<double>& v, const char* f = "{:.3f}") {
  return v ? fmt::format(fmt::runtime(f), *v) : "";
}
std::optional<double> to_bits(const std::optional<double>& nats) {
  return nats ? std::optional<double>(*nats / std::log(2.0)) : std::nullopt;
}

// The losses of the report in the live table's unit (grid/live_table.h): bits per byte when the
// runs are byte-level, else nats per token.
bool byte_level(const Report& rep) { return rep.plan->base.data.tokenizer == TokenizerKind::Bytes; }

// H of the sweep's runs (they share corpus and tokenizer): from an ended run, else from any run's directory.
struct Unigram {
  double bits = NAN;
  bool is_log2v = false;
};
Unigram unigram_of(const std::string& dir, const Report& rep) {
  for (auto& r : rep.runs)
    if (r.ended() && std::isfinite(r.unigram_bits)) return {r.unigram_bits, r.unigram_is_log2v};
  Unigram u;
  for (auto& r : rep.runs)
    if (fs::exists(fs::path(dir) / r.name / "config.yaml") &&
        std::isfinite(u.bits = grid::run_unigram_bits((fs::path(dir) / r.name).string(), &u.is_log2v)))
      return u;
  return {};
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

std::string markdown(const Report& rep, const Unigram& u) {
  const Plan& p = *rep.plan;
  const bool mt = p.base.data.task == Task::Translation;
  const bool bits = byte_level(rep);
  const char* unit = bits ? "bits/byte" : "nats/token";
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

  const double cut = grid::plateau_cut(u.bits);
  if (std::isfinite(u.bits))
    md << fmt::format(
        "Unigram entropy of the training split H = **{:.3f} bits per {}**{}{}: a run whose final loss is at or above "
        "H − 0.1 = {:.3f} learned no more than how often each {} occurs (the plateau; run outcomes below).\n\n",
        u.bits, bits ? "byte" : "token",
        u.is_log2v ? " (log₂ V: the entropy of these SentencePiece pieces could not be computed)" : "",
        bits ? "" : fmt::format(" = {:.3f} nats per token", u.bits * std::log(2.0)), cut, bits ? "byte" : "piece");
  md << (mt     ? "## Validation BLEU (validation loss) after N updates\n\n"
         : bits ? "## Validation bits per byte after N updates\n\n"
                : "## Validation loss (nats per token) after N updates\n\n");
  md << "| scheme |";
  for (auto d : p.depths) md << " " << depth_label(p.base, d) << " |";
  md << "\n|---|";
  for (size_t i = 0; i < p.depths.size(); ++i) md << "---:|";
  md << "\n";
  for (auto& s : p.schemes) {
    md << "| " << scheme_row(s).title << " |";
    for (auto d : p.depths) {
      const auto* r = find(rep, s, d);
      md << " " << (r ? cell(*r, mt, bits) : "—") << " |";
    }
    md << "\n";
  }
  const auto& t = p.base.train;
  const auto loss_text =
      bits ? fmt::format("validation bits per byte (`valid_nll` / ln 2{})",
                         t.valid_sentences > 0 ? fmt::format(", first {} validation examples", t.valid_sentences) : "")
           : fmt::format("validation loss per token (`valid_loss`: cross-entropy in nats{}{})",
                         t.label_smoothing > 0 ? fmt::format(", label-smoothed ε = {}", t.label_smoothing) : "",
                         t.valid_sentences > 0 ? fmt::format(", first {} validation examples", t.valid_sentences) : "");
  md << "\n"
     << (mt ? fmt::format("Cells: greedy BLEU on the first {} validation sentences ({})", t.valid_bleu_sentences,
                          loss_text)
            : "Cells: " + loss_text)
     << " at the run's last validation (step N), with the run's outcome where it is not *trains*; see the legend "
        "below.\n\n";

  md << fmt::format(
            "## Runs\n\n| run | outcome | step | train loss ({0}): first → last 10 % | valid loss ({0}) | final f "
            "(bits) | "
            "valid ppl |",
            unit)
     << (mt ? " BLEU |" : "") << " guard events | wall time |\n|---|---|---:|---|---:|---:|---:|" << (mt ? "---:|" : "")
     << "---:|---:|\n";
  for (auto& r : rep.runs) {
    std::string outcome = to_string(r.outcome);
    if (r.guard_stop) outcome += ": the guard stopped it: " + r.cause;
    else if (r.outcome == Outcome::Failed) outcome += ": " + r.cause;
    else if (r.ended() && r.spike_step) outcome += fmt::format(" (loss spike at step {})", *r.spike_step);
    const auto first = bits ? to_bits(r.first_loss) : r.first_loss, end = bits ? to_bits(r.end_loss) : r.end_loss;
    md << fmt::format("| [{}]({}/) | {} | {} | {} | {} | {} | {} |", r.name, r.name, outcome, r.step,
                      first ? num(first) + " → " + num(end) : "", bits ? num(to_bits(r.valid_nll)) : num(r.valid_loss),
                      num(r.final_bits), r.valid_nll ? fmt::format("{:.4g}", std::exp(*r.valid_nll)) : "");
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
  md << "- Outcomes (docs/reference.md#run-outcomes; f: the last validation nll / ln 2, bits per token; c = H − 0.1): "
        "**trains**: no loss spike, f < c. **too slow**: no spike, f ≥ c (the plateau), the train loss still falling "
        "(the mean of the last quarter of the logged losses ≥ 0.02 bit below the quarter before). **stalls**: no "
        "spike, f ≥ c, no longer falling. **spiked and recovered**: a logged train loss ≥ 1 nat above the lowest "
        "before it (or non-finite), then f < c. **diverges**: such a spike and f ≥ c, or the divergence guard stopped "
        "it.\n"
        "- **diverges @ S (cause)**: `stx train` stopped at update S (exit 1): a non-finite loss or gradient norm "
        "(`non-finite`), or a loss more than train.spike_zscore standard deviations above the mean of the last "
        "train.spike_window losses (`loss spike`); train.on_divergence decides whether the guard first skips or rolls "
        "back (`guard events` counts them).\n"
        "- **interrupted / stopped @ S**: has a checkpoint at step < N; rerunning the sweep resumes it. **failed**: "
        "the "
        "`stx train` child crashed or was killed (e.g. out of memory); rerunning the sweep retries it. **—**: not "
        "started.\n"
        "- Each run's directory holds its `config.yaml`, `metrics.jsonl`, `train.log` (the child's output) and "
        "`sweep_status.json`; `stx plot RUN…` draws every diagnostic. All numbers are in `sweep.json`.\n";
  return md.str();
}

}  // namespace

std::string cell(const RunResult& r, bool translation, bool bits) {
  if (r.ended() && r.guard_stop) return fmt::format("diverges @ {} ({})", r.step, short_cause(r.cause));
  switch (r.outcome) {
    case Outcome::NotStarted: return "—";
    case Outcome::Interrupted: return fmt::format("stopped @ {}", r.step);
    case Outcome::Failed: return "failed (" + r.cause + ")";
    default: {
      std::string v = translation && r.valid_bleu
                          ? fmt::format("{:.2f} ({})", *r.valid_bleu, num(r.valid_loss, "{:.2f}"))
                      : bits ? num(to_bits(r.valid_nll))
                             : num(r.valid_loss);
      if (v.empty()) v = "no valid loss";
      return r.outcome == Outcome::Trains ? v : v + " (" + to_string(r.outcome) + ")";
    }
  }
}

void write_report(const std::string& dir, const Report& rep) {
  nlohmann::json runs = nlohmann::json::array();
  for (auto& r : rep.runs)
    runs.push_back({{"name", r.name},
                    {"scheme", r.scheme},
                    {"depth", r.depth},
                    {"depth_label", depth_label(rep.plan->base, r.depth)},
                    {"outcome", to_string(r.outcome)},
                    {"guard_stop", r.guard_stop},
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
                    {"valid_bleu", opt(r.valid_bleu)},
                    {"first_bits", opt(to_bits(r.first_loss))},
                    {"end_bits", opt(to_bits(r.end_loss))},
                    {"valid_bits", opt(to_bits(r.valid_nll))},
                    {"final_bits", opt(r.final_bits)},
                    {"spike_step", r.spike_step ? nlohmann::json(*r.spike_step) : nlohmann::json(nullptr)}});
  const auto u = unigram_of(dir, rep);
  const nlohmann::json j = {{"command", rep.command},
                            {"plan", plan_json(*rep.plan)},
                            {"loss_unit", byte_level(rep) ? "bits per byte" : "nats per token"},
                            {"unigram_entropy_bits", opt(u.bits)},
                            {"unigram_entropy_is_log2_vocab", u.is_log2v},
                            {"plateau_cut_bits", opt(grid::plateau_cut(u.bits))},
                            {"runs", runs},
                            {"figures", rep.figures}};
  write_text_atomically((fs::path(dir) / "sweep.json").string(), j.dump(2) + "\n");
  const auto md = markdown(rep, u);
  write_text_atomically((fs::path(dir) / "sweep.md").string(), md);
}

}  // namespace stx::sweep
