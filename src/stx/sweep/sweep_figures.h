// stx/sweep/sweep_figures.h — the figures of `stx sweep` (gnuplot via stx/report/plot.h), in
// DIR/figures/, one colour per scheme throughout:
//   loss_L{depth}.png   train loss (lines) and validation loss (points) vs step, every scheme, with
//                       the unigram entropy H of the training split (the plateau, grid/outcome.h) and
//                       the uniform guess as horizontal lines; in bits per byte for byte-level runs
//                       (the report's unit), else nats per token;
//   early_L{depth}.png  over the first K updates: ‖ΔF‖ = ‖F(x,θ_t) − F(x,θ₀)‖ on the probe batch
//                       (`delta_f`, DeepNet Fig. 4) and the global gradient norm (`grad_norm`);
//   valid_vs_depth.png  the table as curves: final validation loss (BLEU for translation) vs depth,
//                       with the H line.
// All from the runs' metrics.jsonl; a figure with no data is skipped.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "stx/grid/run_status.h"
#include "stx/sweep/sweep_plan.h"

namespace stx::sweep {

using grid::Outcome;
using grid::RunResult;

// Draws the figures; returns their paths relative to dir ("figures/loss_L6.png", …).
std::vector<std::string> draw_figures(const std::string& dir, const Plan& p, const std::vector<RunResult>& runs,
                                      int64_t early_steps);
// The figures of this plan already in dir (from an earlier draw), relative to dir.
std::vector<std::string> existing_figures(const std::string& dir, const Plan& p);

}  // namespace stx::sweep
