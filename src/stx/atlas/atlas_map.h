// stx/atlas/atlas_map.h — the atlas in one picture (DIR/figures/atlas_map.png): a grid of cells,
// one row per scheme, one column per learning rate (and the no-warm-up run) within a block per
// depth — DeepNet's Table 1 (Wang et al. 2022) crossed with Wortsman et al.'s (2023) rate axis.
// A cell is the first seed's run: coloured by its final bits per byte when it trained, grey on the
// unigram plateau, red when it diverged (non-finite) or spiked (atlas_reading.h), a dot while it
// is still to run, blank where the plan rules it out; each (scheme, depth)'s best cell is framed.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "stx/atlas/atlas_summary.h"

namespace stx::atlas {

inline constexpr const char* kMapFigure = "atlas_map.png";

// Draws the map; the path relative to `dir` ("figures/atlas_map.png"), or none with nothing ended.
std::optional<std::string> draw_map(const std::string& dir, const AtlasPlan& p, const std::vector<Entry>& entries);

}  // namespace stx::atlas
