// stx/atlas/atlas_figures.h — the figures of the atlas in DIR/figures/ (gnuplot, report/panels.h):
//   atlas_map.png           every run as a cell: scheme × depth × learning rate (atlas_map.h)
//   loss_vs_lr.png          final bits per byte vs learning rate, one panel per depth, one curve per
//                           scheme (Wortsman et al. 2023, Figure 1's shape); runs that failed are
//                           crosses at ℓ₀ = log₂ V; the corpus's unigram entropy H (the plateau) as
//                           a dashed line
//   grad_reach.png          final bits per byte against the gradient reach at the first training
//                           line (bottom-layer ÷ top-layer ‖g‖, log scale), every ended run with
//                           both, coloured by its outcome label (grid/outcome.h), with the plateau
//                           cut H − 0.1: the early signal that separates stalls from runs that train
//   sensitivity_vs_depth.png  learning-rate sensitivity vs depth, one curve per scheme (the headline)
//   failure_{run}.png       per (scheme, depth), its first failed run (lowest rate): train loss,
//                           gradient norm, largest attention logit, max log Z over the steps
#pragma once
#include <string>
#include <vector>

#include "stx/atlas/atlas_summary.h"

namespace stx::atlas {

std::vector<std::string> draw_figures(const std::string& dir, const AtlasPlan& p, const std::vector<Entry>& entries);
std::vector<std::string> existing_figures(const std::string& dir, const AtlasPlan& p,
                                          const std::vector<Entry>& entries);

}  // namespace stx::atlas
