// stx/grid/outcome.cpp — see outcome.h.
#include "stx/grid/outcome.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace stx::grid {

namespace {

constexpr double kTol = 1e-9;  // float rounding at the thresholds

// The mean of v[a, b) (NaN if any value is non-finite).
double mean(const std::vector<double>& v, size_t a, size_t b) {
  double s = 0;
  for (size_t i = a; i < b; ++i) s += v[i];
  return s / static_cast<double>(b - a);
}

}  // namespace

std::string to_string(Outcome o) {
  switch (o) {
    case Outcome::NotStarted: return "not-started";
    case Outcome::Interrupted: return "interrupted";
    case Outcome::Failed: return "failed";
    case Outcome::Trains: return "trains";
    case Outcome::SpikedAndRecovered: return "spiked and recovered";
    case Outcome::TooSlow: return "too slow";
    case Outcome::Stalls: return "stalls";
    case Outcome::Diverges: return "diverges";
  }
  return "?";
}

std::optional<Outcome> outcome_from_string(const std::string& s) {
  for (auto o : {Outcome::NotStarted, Outcome::Interrupted, Outcome::Failed, Outcome::Trains,
                 Outcome::SpikedAndRecovered, Outcome::TooSlow, Outcome::Stalls, Outcome::Diverges})
    if (to_string(o) == s) return o;
  return std::nullopt;
}

double plateau_entropy(double unigram_bits, long long vocab_size) {
  if (std::isfinite(unigram_bits)) return unigram_bits;
  return vocab_size > 1 ? std::log2(static_cast<double>(vocab_size)) : NAN;
}

std::optional<size_t> first_spike(const std::vector<double>& train_bits) {
  const double rise = kSpikeNats / std::log(2.0);  // 1 nat in bits
  std::optional<double> lowest;
  for (size_t i = 0; i < train_bits.size(); ++i) {
    const double x = train_bits[i];
    if (!std::isfinite(x) || (lowest && x >= *lowest + rise - kTol)) return i;
    lowest = lowest ? std::min(*lowest, x) : x;
  }
  return std::nullopt;
}

std::optional<double> final_bits(const std::optional<double>& valid_bits, const std::vector<double>& train_bits) {
  if (valid_bits) return valid_bits;
  if (train_bits.empty()) return std::nullopt;
  const size_t tail = std::max<size_t>(1, (train_bits.size() + 9) / 10);
  return mean(train_bits, train_bits.size() - tail, train_bits.size());
}

bool still_improving(const std::vector<double>& train_bits) {
  const size_t n = train_bits.size();
  if (n < kImprovingMinLines) return false;
  const size_t q = (n + 3) / 4;
  const double last = mean(train_bits, n - q, n), before = mean(train_bits, n - 2 * q, n - q);
  return std::isfinite(last) && std::isfinite(before) && before - last >= kImprovingBits - kTol;
}

Outcome classify_outcome(const OutcomeEvidence& e) {
  if (e.guard_stop) return Outcome::Diverges;
  const bool curve = !e.train_bits.empty();
  const bool spiked = curve ? first_spike(e.train_bits).has_value() : e.spiked_without_curve;
  const auto f = final_bits(e.valid_bits, e.train_bits);
  const bool below = f && std::isfinite(*f) && *f < plateau_cut(e.unigram_bits) - kTol;
  if (spiked) return below ? Outcome::SpikedAndRecovered : Outcome::Diverges;
  if (below) return Outcome::Trains;
  if (curve) return still_improving(e.train_bits) ? Outcome::TooSlow : Outcome::Stalls;
  return e.grad_reach && *e.grad_reach >= kStallReach ? Outcome::TooSlow : Outcome::Stalls;
}

std::string label_counts(const std::vector<Outcome>& outcomes) {
  std::string s;
  for (auto l : kLabels) {
    const auto n = std::count(outcomes.begin(), outcomes.end(), l);
    std::string word = to_string(l);  // the plural of the verbs: "2 train", "2 stall", "2 diverge"
    if (n != 1 && (l == Outcome::Trains || l == Outcome::Stalls || l == Outcome::Diverges)) word.pop_back();
    s += fmt::format("{}{} {}", s.empty() ? "" : ", ", n, word);
  }
  return s;
}

}  // namespace stx::grid
