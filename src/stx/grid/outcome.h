// stx/grid/outcome.h — the one vocabulary of what became of a run, used by stx sweep (its report
// and live table), the atlas, the entropy-collapse experiment, stx doctor and make demo
// (docs/reference.md#run-outcomes states the same rules).
//
// A run that has not ended is in a lifecycle state: not-started (no checkpoint), interrupted (a
// checkpoint, fewer than N updates: a rerun resumes it) or failed (the child crashed or was
// killed: a rerun retries it). A run that ended gets one of five labels.
//
// Let H be the unigram entropy of the run's training split in bits per token (data/unigram.h:
// bits per byte for data.tokenizer: bytes, one eos per segment counted; SentencePiece: over the
// train split as the run's own model cuts it; log₂ V where it cannot be computed). The plateau
// cut is c = H − 0.1 bit. A run's final loss f = its last validation nll / ln 2 (bits per
// token); without a validation line, the mean of its last 10 % (at least one) logged train
// losses / ln 2. A spike: a logged training loss that is non-finite or ≥ 1 nat above the lowest
// logged training loss before it. Still improving: with the n ≥ 8 logged training losses (bits)
// in order, the mean of the last quarter (⌈n/4⌉) is at least 0.02 bit below the mean of the
// quarter before it.
//   diverges              the divergence guard stopped it (non-finite loss or gradient, or the
//                         guard's own spike rule), or it spiked and f ≥ c (did not come back
//                         below the plateau)
//   spiked and recovered  it spiked (a logged spike, not a guard stop) and ended with f < c
//   trains                no spike, f < c
//   too slow              no spike, f ≥ c, still improving at the end
//   stalls                no spike, f ≥ c, not still improving
// Without a training-loss curve (only atlas.json entries written before per-run curves): above
// the cut, "stalls" when the gradient reach at the first training line (bottom-layer ÷
// top-layer gradient norm) is < 0.01, else "too slow"; without a reach either, "stalls". This is
// a fallback: its agreement with the curve rule is measured in docs/atlas.md.
// A plateau run is never a run that trains. A missing or non-finite f counts as above the cut.
// The thresholds allow 1e-9 for float rounding: f exactly at c is above the cut; a drop of
// exactly 0.02 bit is still improving; a rise of exactly 1 nat is a spike.
#pragma once
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace stx::grid {

// The lifecycle states first, then the labels of an ended run.
enum class Outcome { NotStarted, Interrupted, Failed, Trains, SpikedAndRecovered, TooSlow, Stalls, Diverges };
inline constexpr std::array<Outcome, 5> kLabels = {Outcome::Trains, Outcome::TooSlow, Outcome::Stalls,
                                                   Outcome::SpikedAndRecovered, Outcome::Diverges};
inline bool is_label(Outcome o) { return o >= Outcome::Trains; }

// "not-started", "interrupted", "failed", "trains", "spiked and recovered", "too slow", "stalls",
// "diverges": the strings written to every JSON file.
std::string to_string(Outcome);
// The inverse (these strings only; none for the spellings before the labels: "converged", …).
std::optional<Outcome> outcome_from_string(const std::string& s);

inline constexpr double kPlateauMargin = 0.1;  // bits: c = H − 0.1
inline constexpr double kImprovingBits = 0.02;
inline constexpr double kSpikeNats = 1.0;
inline constexpr size_t kImprovingMinLines = 8;
inline constexpr double kStallReach = 0.01;  // the fallback without a curve

// What the rules read of one ended run.
struct OutcomeEvidence {
  bool guard_stop = false;           // the divergence guard stopped it (stx train exit 1)
  std::vector<double> train_bits;    // every logged training loss / ln 2, in order (NaN: non-finite)
  std::optional<double> valid_bits;  // its last validation nll / ln 2
  double unigram_bits = 0;           // H (NaN: unknown, then nothing is below the cut)
  // Only read without a curve (train_bits empty): what a record kept instead.
  bool spiked_without_curve = false;  // a logged spike (atlas.json's reading.failure "loss spike")
  std::optional<double> grad_reach;   // at the first training line
};

// H where it is known, else log₂ V (V ≤ 1: NaN): the H of the rules.
double plateau_entropy(double unigram_bits, long long vocab_size);
inline double plateau_cut(double unigram_bits) { return unigram_bits - kPlateauMargin; }
// The index of the first spike in `train_bits` (none: no spike).
std::optional<size_t> first_spike(const std::vector<double>& train_bits);
// f: the last validation loss, else the mean of the last 10 % (≥ 1) of the train losses.
std::optional<double> final_bits(const std::optional<double>& valid_bits, const std::vector<double>& train_bits);
bool still_improving(const std::vector<double>& train_bits);
Outcome classify_outcome(const OutcomeEvidence& e);

// "2 train, 0 too slow, 2 stall, 0 spiked and recovered, 0 diverge" (a count of 1 in the
// singular: "1 trains") for the ended runs among `outcomes`.
std::string label_counts(const std::vector<Outcome>& outcomes);

}  // namespace stx::grid
