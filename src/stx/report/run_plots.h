// stx/report/run_plots.h — `stx plot`: the figures of one or more training runs from their
// metrics.jsonl (docs/metrics.md), several runs overlaid: train/valid loss, BLEU, gradient norm,
// ‖ΔF‖ (DeepNet Fig. 4), learning rate, per-layer gradient-norm heatmaps over time (Xiong et al.
// Fig. 3 as it evolves), the LN input norm and attention entropy per layer at the last step, and
// the lowest attention entropy over time (Zhai et al.'s entropy collapse).
#pragma once
#include <string>
#include <vector>

namespace stx {

// Writes the PNGs into out_dir (created if needed); returns their paths. A figure whose metric
// no run logged is skipped. InputError when a directory has no metrics.jsonl.
std::vector<std::string> plot_runs(const std::vector<std::string>& run_dirs, const std::string& out_dir);

}  // namespace stx
