// Unit tests of the run-outcome rules (grid/outcome.h, docs/reference.md#run-outcomes): each
// label, the boundaries — a final loss exactly at the plateau cut, an improvement of exactly 0.02
// bit, a rise of exactly 1 nat, the 8 lines "still improving" needs — a spike recovered from or
// not, the fallback without a curve, the strings, and a sweep run's label from its metrics lines
// (grid/run_status.h classify) and the unigram entropy it uses (data/unigram.h).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "stx/data/unigram.h"
#include "stx/grid/outcome.h"
#include "stx/grid/run_status.h"

namespace stx::grid {
namespace {

constexpr double H = 4.5;  // the unigram entropy (bits): the cut c = 4.4
const double kNat = 1.0 / std::log(2.0);

// A curve of n train losses (bits) falling linearly from `from` to `to`.
std::vector<double> falling(size_t n, double from, double to) {
  std::vector<double> v;
  for (size_t i = 0; i < n; ++i) v.push_back(from + (to - from) * static_cast<double>(i) / static_cast<double>(n - 1));
  return v;
}

OutcomeEvidence ev(std::vector<double> bits, std::optional<double> valid) {
  OutcomeEvidence e;
  e.train_bits = std::move(bits), e.valid_bits = valid, e.unigram_bits = H;
  return e;
}

TEST(Outcome, EachLabel) {
  EXPECT_EQ(classify_outcome(ev(falling(20, 8.0, 3.0), 3.1)), Outcome::Trains);
  // Above the cut, the last quarter 0.25 bit below the quarter before: too slow.
  EXPECT_EQ(classify_outcome(ev(falling(20, 8.0, 4.6), 4.6)), Outcome::TooSlow);
  // Above the cut and flat at the end: stalls.
  auto flat = falling(12, 8.0, 4.6);
  for (int i = 0; i < 12; ++i) flat.push_back(4.6);  // 24 lines: the last two quarters of 6 flat
  EXPECT_EQ(classify_outcome(ev(flat, 4.6)), Outcome::Stalls);
  // A spike of 2 bits, then below the cut: spiked and recovered; still above it: diverges.
  auto spiky = falling(20, 8.0, 3.0);
  spiky[10] += 2.0;
  EXPECT_EQ(classify_outcome(ev(spiky, 3.0)), Outcome::SpikedAndRecovered);
  EXPECT_EQ(classify_outcome(ev(spiky, 4.6)), Outcome::Diverges);
  // The guard stopped it: diverges whatever the loss.
  auto e = ev(falling(20, 8.0, 3.0), 3.0);
  e.guard_stop = true;
  EXPECT_EQ(classify_outcome(e), Outcome::Diverges);
  // A non-finite loss is a spike.
  auto nan = falling(20, 8.0, 3.0);
  nan[5] = NAN;
  EXPECT_EQ(first_spike(nan), std::optional<size_t>(5));
  EXPECT_EQ(classify_outcome(ev(nan, 3.0)), Outcome::SpikedAndRecovered);
}

TEST(Outcome, ExactlyAtTheCutIsAbove) {
  const auto curve = falling(20, 8.0, 4.0);  // still falling fast: above the cut it is too slow
  EXPECT_EQ(classify_outcome(ev(curve, H - 0.1)), Outcome::TooSlow);
  EXPECT_EQ(classify_outcome(ev(curve, H - 0.1 - 1e-6)), Outcome::Trains);
  EXPECT_EQ(classify_outcome(ev(curve, H - 0.1 + 1e-6)), Outcome::TooSlow);
  EXPECT_DOUBLE_EQ(plateau_cut(H), 4.4);
  // Without a validation line, f is the mean of the last 10 % (at least one) of the train losses.
  std::vector<double> tail(18, 6.0);
  tail.push_back(4.41), tail.push_back(4.39);  // 20 lines: the last 2, mean 4.40 — at the cut
  EXPECT_DOUBLE_EQ(*final_bits(std::nullopt, tail), 4.4);
  EXPECT_NE(classify_outcome(ev(tail, std::nullopt)), Outcome::Trains);
  tail.back() = 4.37;  // mean 4.39
  EXPECT_EQ(classify_outcome(ev(tail, std::nullopt)), Outcome::Trains);
  EXPECT_EQ(*final_bits(std::nullopt, {5.0}), 5.0);
  EXPECT_FALSE(final_bits(std::nullopt, {}).has_value());
  EXPECT_EQ(*final_bits(4.0, tail), 4.0);  // the validation line wins
  // A missing or non-finite f is above the cut.
  EXPECT_EQ(classify_outcome(ev(falling(20, 8.0, 3.0), NAN)), Outcome::TooSlow);
}

TEST(Outcome, StillImprovingBoundary) {
  // 8 lines: quarters of 2. Last quarter exactly 0.02 below the one before: improving.
  std::vector<double> v{6.0, 6.0, 6.0, 6.0, 4.62, 4.62, 4.60, 4.60};
  EXPECT_TRUE(still_improving(v));
  EXPECT_EQ(classify_outcome(ev(v, 4.6)), Outcome::TooSlow);
  v[6] = v[7] = 4.601;  // 0.019 below
  EXPECT_FALSE(still_improving(v));
  EXPECT_EQ(classify_outcome(ev(v, 4.6)), Outcome::Stalls);
  // Fewer than 8 lines: never still improving.
  EXPECT_FALSE(still_improving({6.0, 5.5, 5.0, 4.9, 4.8, 4.7, 4.6}));
  EXPECT_TRUE(still_improving({6.0, 5.5, 5.0, 4.9, 4.8, 4.7, 4.6, 4.5}));
  // n = 9: ⌈9/4⌉ = 3 lines per quarter (the last 3 against the 3 before).
  EXPECT_TRUE(still_improving({9, 9, 9, 5.0, 5.0, 5.0, 4.98, 4.98, 4.98}));
  EXPECT_FALSE(still_improving({9, 9, 9, 5.0, 5.0, 5.0, 4.99, 4.98, 4.98}));
}

TEST(Outcome, SpikeBoundaryIsOneNat) {
  std::vector<double> v{6.0, 5.0, 5.0 + kNat, 4.0};  // exactly 1 nat above the lowest before
  EXPECT_EQ(first_spike(v), std::optional<size_t>(2));
  v[2] = 5.0 + kNat - 1e-6;
  EXPECT_FALSE(first_spike(v).has_value());
  // Measured from the lowest before it, not from the previous line.
  EXPECT_EQ(first_spike({6.0, 4.0, 4.9, 5.2, 4.0 + kNat}), std::optional<size_t>(4));
  EXPECT_FALSE(first_spike({8.0, 9.0, 9.2}).has_value());  // up from the first line by < 1 nat
}

TEST(Outcome, WithoutACurveTheReachDecides) {
  OutcomeEvidence e;
  e.unigram_bits = H;
  e.valid_bits = 4.6;
  e.grad_reach = 0.02;
  EXPECT_EQ(classify_outcome(e), Outcome::TooSlow);
  e.grad_reach = 0.009;
  EXPECT_EQ(classify_outcome(e), Outcome::Stalls);
  e.grad_reach = kStallReach;  // exactly 0.01: not < 0.01
  EXPECT_EQ(classify_outcome(e), Outcome::TooSlow);
  e.grad_reach.reset();
  EXPECT_EQ(classify_outcome(e), Outcome::Stalls);  // no reach either
  e.valid_bits = 3.0;
  EXPECT_EQ(classify_outcome(e), Outcome::Trains);  // below the cut: the reach is not read
  e.spiked_without_curve = true;                    // a spike the record kept
  EXPECT_EQ(classify_outcome(e), Outcome::SpikedAndRecovered);
  e.valid_bits = 4.6;
  EXPECT_EQ(classify_outcome(e), Outcome::Diverges);
  e.valid_bits.reset(), e.spiked_without_curve = false, e.grad_reach = 0.5;
  EXPECT_EQ(classify_outcome(e), Outcome::TooSlow);  // no f at all: above the cut
}

TEST(Outcome, StringsAndCounts) {
  EXPECT_EQ(to_string(Outcome::SpikedAndRecovered), "spiked and recovered");
  EXPECT_EQ(to_string(Outcome::TooSlow), "too slow");
  for (auto o : kLabels) EXPECT_EQ(outcome_from_string(to_string(o)), std::optional<Outcome>(o));
  EXPECT_EQ(outcome_from_string("not-started"), std::optional<Outcome>(Outcome::NotStarted));
  EXPECT_FALSE(outcome_from_string("converged").has_value());
  EXPECT_FALSE(is_label(Outcome::Failed));
  EXPECT_TRUE(is_label(Outcome::Stalls));
  EXPECT_EQ(label_counts({Outcome::Trains, Outcome::Trains, Outcome::Stalls, Outcome::Failed}),
            "2 train, 0 too slow, 1 stalls, 0 spiked and recovered, 0 diverge");
  EXPECT_DOUBLE_EQ(plateau_entropy(NAN, 256), 8.0);  // log₂ V where H is unknown
  EXPECT_DOUBLE_EQ(plateau_entropy(4.2, 256), 4.2);
}

nlohmann::json line(int64_t step, double loss_nats) { return {{"step", step}, {"loss", loss_nats}}; }

TEST(Outcome, ASweepRunIsLabelledFromItsMetrics) {
  // A run on the plateau (H = 4.5 bits, validation at 4.45 bits) is not "trains".
  std::vector<nlohmann::json> rs;
  for (int s = 1; s <= 20; ++s) rs.push_back(line(s, (s < 10 ? 8.0 - 0.4 * s : 4.45) / kNat));
  rs.push_back({{"step", 20}, {"valid_loss", 4.45 / kNat}, {"valid_nll", 4.45 / kNat}});
  RunResult r;
  r.unigram_bits = H;
  EXPECT_TRUE(classify(r, metrics::records_of(rs), 20));
  EXPECT_EQ(r.outcome, Outcome::Stalls);
  EXPECT_NEAR(*r.final_bits, 4.45, 1e-12);
  // The same below the cut trains; a null (non-finite) loss is a spike it came back from.
  rs.back() = {{"step", 20}, {"valid_loss", 3.0 / kNat}, {"valid_nll", 3.0 / kNat}};
  RunResult t;
  t.unigram_bits = H;
  classify(t, metrics::records_of(rs), 20);
  EXPECT_EQ(t.outcome, Outcome::Trains);
  rs[12]["loss"] = nullptr;
  RunResult u;
  u.unigram_bits = H;
  classify(u, metrics::records_of(rs), 20);
  EXPECT_EQ(u.outcome, Outcome::SpikedAndRecovered);
  EXPECT_EQ(u.spike_step, std::optional<int64_t>(13));
  // Not finished: no label.
  RunResult n;
  n.unigram_bits = H;
  EXPECT_FALSE(classify(n, metrics::records_of(rs), 30));
  EXPECT_FALSE(n.ended());
}

TEST(Outcome, UnigramEntropyOfAByteCorpus) {
  const auto dir = std::filesystem::temp_directory_path() / "stx_test_unigram";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "train.txt") << "ab\nab\n";  // a, b, eos: 2 each → log₂ 3 bits per byte
  DataConfig d;
  d.task = Task::LM, d.corpus = dir.string(), d.tokenizer = TokenizerKind::Bytes;
  EXPECT_NEAR(unigram_entropy_bits(d), std::log2(3.0), 1e-12);
  d.tokenizer = TokenizerKind::SentencePiece;
  EXPECT_TRUE(std::isnan(unigram_entropy_bits(d)));  // pieces without a model: the rules use log₂ V
  EXPECT_NEAR(entropy_bits({1, 1, 0, 2}), 1.5, 1e-12);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace stx::grid
