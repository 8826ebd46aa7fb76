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
//   failures               "diverged (non-finite) ×2, loss spike ×1, stalls ×1, too slow ×1": the
//                          reading's failure (atlas_reading.h), else the outcome label of a run that
//                          ended within 0.1 bit/byte of the corpus's unigram entropy (or above): it
//                          learned nothing beyond byte frequencies (grid/outcome.h)
//   nowarm_bpb             the no-warm-up run's final loss (and whether it failed)
//   seed_spread            at the shallowest depth: mean over rates of |ℓ(seed k) − ℓ(seed 0)|
//                          and the largest, over the rates where both have a loss (loss_of) below
//                          ℓ₀ = log₂ V, the uniform guess (a run above it learned nothing at all)
// Each run's outcome label (grid/outcome.h) is recomputed from its reading (outcome_of), so a
// run imported from atlas.json and a run read from its directory are labelled alike.
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
  int runs = 0, ended = 0, learned = 0;
  std::map<std::string, int> outcomes;  // ended runs per label
  std::optional<double> best_bpb, best_lr, range_lo, range_hi, sensitivity, nowarm_bpb;
  size_t sensitivity_rates = 0;  // the rates the sensitivity averages over (deep rows: only those run)
  std::string nowarm_failure, failures;
  std::optional<double> seed_spread_mean, seed_spread_max;
};

double init_loss_bits(const AtlasPlan& p);  // ℓ₀ = log₂ V (bytes: V = 260)
// The unigram entropy of the training split in bits per token (data/unigram.h; NaN for
// SentencePiece pieces: the plan has no run's model), computed once per corpus.
double unigram_entropy_bits(const AtlasPlan& p);
// The H of the outcome rules: the unigram entropy, else ℓ₀ = log₂ V.
double outcome_entropy_bits(const AtlasPlan& p);
// A run's label (grid/outcome.h) from its reading: the train curve, final_bpb and, for a reading
// without a curve, its "loss spike" failure and gradient reach; `guard_stop`: the guard stopped it.
grid::Outcome outcome_of(const Reading& r, bool guard_stop, double unigram_bits);
// A run's loss for the atlas: its final bits per byte when it ended without failing (no guard
// stop, no loss spike), else none.
std::optional<double> loss_of(const Entry& e);
// It ended on the unigram plateau: final loss ≥ the unigram entropy − 0.1 bit (NaN: never).
bool on_plateau(const AtlasPlan& p, const Entry& e);
bool on_plateau(double unigram_bits, const Entry& e);
// Not run now because a run of the depth below has not ended (atlas_runner's rule_out).
inline bool is_waiting(const Entry& e) { return e.skipped.rfind("waiting", 0) == 0; }
// It trained: its label is "trains" (below the plateau cut, no loss spike) and it has a loss.
bool learned(const AtlasPlan& p, const Entry& e);
std::map<std::pair<std::string, int64_t>, Cell> summarize(const AtlasPlan& p, const std::vector<Entry>& entries);
nlohmann::json to_json(const Cell& c);

}  // namespace stx::atlas
