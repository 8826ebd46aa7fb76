// stx/collapse/collapse_figures.h — the figures of the entropy-collapse experiment in
// DIR/figures/ (gnuplot, stx/report/panels.h):
//   lr_robustness.png   final validation loss vs learning rate (log), one line per arm; runs that
//                       diverge (their outcome label, grid/outcome.h) are drawn as crosses at the
//                       uniform-guess loss ln V (Zhai et al.'s headline: σReparam trains over a
//                       wider range)
//   arm_{arm}.png       per arm, one colour per learning rate: train loss; the lowest layer
//                       entropy H_min (solid) with its Theorem 3.1 bound (dashed); the largest
//                       ‖W_K W_Qᵀ‖₂/√d_h of any head and layer (log scale)
//   run_{run}.png       per run, one colour per layer: train/valid loss; attention entropy per
//                       layer, mean (solid) and lowest head (dotted) with the bound (dashed);
//                       ‖W_K W_Qᵀ‖₂/√d_h per layer, largest head
#pragma once
#include <string>
#include <vector>

#include "stx/collapse/collapse_runner.h"

namespace stx::collapse {

// Draws every figure it has data for; returns their paths relative to dir.
std::vector<std::string> draw_figures(const std::string& dir, const CollapsePlan& p, const std::vector<Entry>& entries);
// The figures of this grid already in dir (from an earlier draw), relative to dir.
std::vector<std::string> existing_figures(const std::string& dir, const CollapsePlan& p,
                                          const std::vector<Entry>& entries);

}  // namespace stx::collapse
