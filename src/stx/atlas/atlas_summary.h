// stx/atlas/atlas_summary.h — the atlas's numbers per (scheme, depth), from the runs that ended
// (docs/atlas.md and docs/reference.md#learning-rate-sensitivity):
//   best_bpb, best_lr      the lowest final validation bits per byte over the rate grid (seed 0,
//                          with warm-up) and its rate
//   range_lo … range_hi    the rates whose final loss is within 0.1 bit/byte of the best
//   sensitivity            Wortsman et al. 2023 (§3.2): the mean over the rate grid of
//                          min(ℓ(η), ℓ₀) − ℓ*, ℓ* the best final loss over the grid, ℓ₀ the loss at
//                          initialization, here log₂ V (a model at init predicts ≈ uniformly), and
//                          a diverged or unfinished-by-divergence run counted as ℓ₀; only over the
//                          rates that ran (the deep rows run a few)
//   failures               "diverged (non-finite) ×2, plateau ×1": a run that ended within 0.1
//                          bit/byte of the corpus's unigram entropy (or above) learned nothing
//                          beyond byte frequencies — "plateau", not a model that trains
//   nowarm_bpb             the no-warm-up run's final loss (and whether it failed)
//   seed_spread            at the shallowest depth: mean over rates of |ℓ(seed k) − ℓ(seed 0)|
//                          and the largest, over the rates where both converged
#pragma once
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "stx/atlas/atlas_plan.h"
#include "stx/atlas/atlas_reading.h"
#include "stx/grid/run_status.h"

namespace stx::atlas {

// One run of the plan and what became of it.
struct Entry {
  AtlasRun run;
  grid::RunResult result;
  Reading reading;
  std::string skipped;             // non-empty: not run, and why
  std::vector<std::string> hosts;  // "CPU, BLAS kernel" of each start that trained it, distinct, in
                                   // order (RUN/hosts.jsonl; empty: not recorded — runs before 2026-12-04)
};

struct Cell {
  std::string scheme;
  int64_t depth = 0;
  int runs = 0, ended = 0, converged = 0, learned = 0;
  std::optional<double> best_bpb, best_lr, range_lo, range_hi, sensitivity, nowarm_bpb;
  size_t sensitivity_rates = 0;  // the rates the sensitivity averages over (deep rows: only those run)
  std::string nowarm_failure, failures;
  std::optional<double> seed_spread_mean, seed_spread_max;
};

double init_loss_bits(const AtlasPlan& p);  // ℓ₀ = log₂ V (bytes: V = 260)
// The unigram entropy of the training split in bits per token (bytes: per byte, each segment's
// eos counted; NaN for SentencePiece pieces), computed once per corpus.
double unigram_entropy_bits(const Config& c);
// A run's loss for the atlas: its final bits per byte when it ended without failing, else none.
std::optional<double> loss_of(const Entry& e);
// It ended on the unigram plateau: final loss ≥ the unigram entropy − 0.1 bit (NaN: never).
bool on_plateau(const AtlasPlan& p, const Entry& e);
bool on_plateau(double unigram_bits, const Entry& e);
// Not run now because a run of the depth below has not ended (atlas_runner's rule_out).
inline bool is_waiting(const Entry& e) { return e.skipped.rfind("waiting", 0) == 0; }
// It trained: ended without failing, below the plateau.
bool learned(const AtlasPlan& p, const Entry& e);
std::map<std::pair<std::string, int64_t>, Cell> summarize(const AtlasPlan& p, const std::vector<Entry>& entries);
nlohmann::json to_json(const Cell& c);

}  // namespace stx::atlas
