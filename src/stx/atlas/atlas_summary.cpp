// stx/atlas/atlas_summary.cpp — see atlas_summary.h.
#include "stx/atlas/atlas_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "stx/data/tokens.h"
#include "stx/data/unigram.h"

namespace stx::atlas {

double init_loss_bits(const AtlasPlan& p) {
  const auto V = p.base.data.tokenizer == TokenizerKind::Bytes ? Tokenizer::kByteVocab : p.base.model.vocab_size;
  return std::log2(static_cast<double>(V));
}

double unigram_entropy_bits(const AtlasPlan& p) { return stx::unigram_entropy_bits(p.base.data); }

double outcome_entropy_bits(const AtlasPlan& p) {
  const double h = unigram_entropy_bits(p);
  return std::isfinite(h) ? h : init_loss_bits(p);
}

grid::Outcome outcome_of(const Reading& r, bool guard_stop, double unigram_bits) {
  grid::OutcomeEvidence e;
  e.guard_stop = guard_stop;
  for (auto& [step, bits] : r.train_curve) e.train_bits.push_back(bits);
  e.valid_bits = r.final_bpb;
  e.unigram_bits = unigram_bits;
  e.spiked_without_curve = r.failure == "loss spike";
  e.grad_reach = r.grad_reach;
  return grid::classify_outcome(e);
}

bool on_plateau(const AtlasPlan& p, const Entry& e) { return on_plateau(unigram_entropy_bits(p), e); }

bool on_plateau(double unigram_bits, const Entry& e) {
  const auto l = loss_of(e);
  return l && std::isfinite(unigram_bits) && *l >= unigram_bits - 0.1;
}

bool learned(const AtlasPlan& p, const Entry& e) {
  (void)p;  // the label was computed with the plan's H (outcome_entropy_bits)
  return loss_of(e).has_value() && e.result.outcome == grid::Outcome::Trains;
}

std::optional<double> loss_of(const Entry& e) {
  if (!e.result.ended() || e.result.guard_stop || e.reading.failure == "loss spike") return std::nullopt;
  return e.reading.final_bpb;
}

std::map<std::pair<std::string, int64_t>, Cell> summarize(const AtlasPlan& p, const std::vector<Entry>& entries) {
  std::map<std::pair<std::string, int64_t>, Cell> cells;
  const double l0 = init_loss_bits(p);
  for (auto& s : p.schemes)
    for (auto d : p.depths) {
      Cell c;
      c.scheme = s, c.depth = d;
      std::map<std::string, int> fail;
      std::vector<std::pair<double, std::optional<double>>> grid;  // (lr, loss or failed) of seed 0, warm-up
      std::map<size_t, std::map<int64_t, double>> by_seed;         // lr index → seed → loss
      for (auto& e : entries) {
        const auto& r = e.run;
        if (r.scheme != s || r.depth != d) continue;
        ++c.runs;
        if (!e.result.ended()) continue;
        ++c.ended;
        const auto l = loss_of(e);
        ++c.outcomes[grid::to_string(e.result.outcome)];
        c.learned += learned(p, e);
        if (!e.reading.failure.empty() && e.reading.failure != "stalled") ++fail[e.reading.failure];
        else if (e.result.outcome == grid::Outcome::TooSlow || e.result.outcome == grid::Outcome::Stalls)
          ++fail[grid::to_string(e.result.outcome)];
        if (!r.warmup) {
          c.nowarm_bpb = l;
          c.nowarm_failure = e.reading.failure;
          continue;
        }
        if (l && *l < l0) by_seed[r.lr_index][r.seed] = *l;  // spread: pairs that both have a loss below ℓ₀
        if (r.seed != 0) continue;
        grid.push_back({r.lr, l});
        if (l && (!c.best_bpb || *l < *c.best_bpb)) c.best_bpb = l, c.best_lr = r.lr;
      }
      for (auto& [why, n] : fail) c.failures += (c.failures.empty() ? "" : ", ") + fmt::format("{} ×{}", why, n);
      if (c.best_bpb) {
        double sum = 0;
        for (auto& [lr, l] : grid) {
          sum += std::min(l.value_or(l0), l0) - *c.best_bpb;
          if (l && *l <= *c.best_bpb + 0.1) {
            c.range_lo = c.range_lo ? std::min(*c.range_lo, lr) : lr;
            c.range_hi = c.range_hi ? std::max(*c.range_hi, lr) : lr;
          }
        }
        c.sensitivity = sum / static_cast<double>(grid.size());
        c.sensitivity_rates = grid.size();
      }
      double n = 0, tot = 0, mx = 0;
      for (auto& [li, seeds] : by_seed)
        if (seeds.count(0))
          for (auto& [k, l] : seeds)
            if (k != 0) {
              const double diff = std::abs(l - seeds.at(0));
              tot += diff, mx = std::max(mx, diff), ++n;
            }
      if (n > 0) c.seed_spread_mean = tot / n, c.seed_spread_max = mx;
      cells[{s, d}] = c;
    }
  return cells;
}

nlohmann::json to_json(const Cell& c) {
  auto opt = [](const auto& o) { return o ? nlohmann::json(*o) : nlohmann::json(nullptr); };
  return {{"scheme", c.scheme},
          {"depth", c.depth},
          {"runs", c.runs},
          {"ended", c.ended},
          {"outcomes", c.outcomes},
          {"learned", c.learned},
          {"best_bpb", opt(c.best_bpb)},
          {"best_lr", opt(c.best_lr)},
          {"range_within_0.1", {opt(c.range_lo), opt(c.range_hi)}},
          {"lr_sensitivity", opt(c.sensitivity)},
          {"lr_sensitivity_rates", c.sensitivity_rates},
          {"nowarm_bpb", opt(c.nowarm_bpb)},
          {"nowarm_failure", c.nowarm_failure},
          {"failures", c.failures},
          {"seed_spread_mean", opt(c.seed_spread_mean)},
          {"seed_spread_max", opt(c.seed_spread_max)}};
}

}  // namespace stx::atlas
