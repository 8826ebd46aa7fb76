// stx/atlas/atlas_reading.h — what the atlas reads from one run's metrics.jsonl (docs/atlas.md
// states these definitions):
//   final_bpb        the last validation nll / ln 2 (bits per byte with data.tokenizer: bytes)
//   failure          "diverged (cause)" where the divergence guard stopped the run (grid/run_status.h:
//                    its step and cause), or "loss spike" where a spike (below) came first; ""
//                    otherwise ("stalled" in atlas.json entries from before the outcome labels).
//                    The run's outcome label is not here: atlas_summary.h outcome_of computes it
//                    from this reading (grid/outcome.h)
//   max_attn_logit   the largest attention logit over every layer and logged step (Wortsman et
//                    al.'s attention-logit growth)
//   min_entropy      the lowest layer attention entropy over the logged steps (Zhai et al.)
//   log_z_first/last/max  log Z of the output (mean over the probe) at the first and last
//                    training line, and the largest max over the run (output-logit divergence)
//   delta_f_early    ‖ΔF‖ at the first training line (DeepNet §3)
//   grad_reach       the gradient reach at the first training line (report/metrics_signals.h)
//   grad_reach_last  the same at the last training line
//   train_curve      [step, train loss / ln 2] of every training line (the logged means; 4
//                    decimals): what the outcome rules read (grid/outcome.h), kept in atlas.json
//                    so that a copy without run directories can reclassify
//   first_mover      for a failed run (diverged, or a loss spike of ≥ 1 nat above the lowest loss
//                    before it): the logged signal that left its early range first — loss,
//                    grad_norm, attn_max_logit, log_z (max), delta_f_step, or attention entropy —
//                    and how many steps before the failure. "Left its early range": the first
//                    training line at which the signal is more than a factor 2 above (entropy:
//                    below half) the median of its first three logged values.
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "stx/grid/run_status.h"
#include "stx/report/metrics_schema.h"

namespace stx::atlas {

struct Reading {
  std::optional<double> final_bpb, max_attn_logit, min_entropy, log_z_first, log_z_last, log_z_max, delta_f_early,
      grad_reach, grad_reach_last;
  std::vector<std::pair<int64_t, double>> train_curve;
  std::optional<int64_t> failure_step;
  std::string failure;  // "diverged (non-finite)", "loss spike", "" (old entries: "stalled")
  std::string first_mover;
  std::optional<int64_t> first_mover_step;
};

Reading read_atlas(const std::vector<metrics::Record>& records, const grid::RunResult& r);
nlohmann::json to_json(const Reading& r);
Reading reading_from_json(const nlohmann::json& j);  // the inverse (atlas.json's "reading")

}  // namespace stx::atlas
