// stx/atlas/atlas_map.h — the atlas in one picture (DIR/figures/atlas_map.png): a grid of cells,
// one row per scheme, one column per learning rate (and the no-warm-up run) within a block per
// depth — DeepNet's Table 1 (Wang et al. 2022) crossed with Wortsman et al.'s (2023) rate axis.
// A cell is the first seed's run: coloured by its final bits per byte when it learned, grey when
// it did not (unigram plateau, or labelled stalls or too slow without a validation line), red
// when the divergence guard stopped it or it spiked (atlas_reading.h), white "n/a" when it ended
// with no validation line, a dot while it is still to run (waiting for the depth below included), blank where the plan
// rules it out; each (scheme, depth)'s best warm-up run is framed.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "stx/atlas/atlas_summary.h"

namespace stx::atlas {

inline constexpr const char* kMapFigure = "atlas_map.png";

enum class Mark { Learned, Plateau, Diverged, Spiked, NoReading, Pending };

struct MapCell {
  int x = 0, y = 0;  // column (rates of each depth, then its no-warm-up run, a gap between depths), row (scheme)
  Mark mark = Mark::Pending;
  std::optional<double> bpb;  // Learned: the final bits per byte
  bool best = false;          // the lowest Learned warm-up cell of its (scheme, depth)
};

// The cells of the map: seed-0 runs of the plan's schemes, not ruled out. `unigram_bits` is the
// plateau line (NaN: only a stall without a validation line counts as not learned). A run
// learned as atlas_summary.h's learned() says: a stall below the plateau counts.
std::vector<MapCell> map_cells(const AtlasPlan& p, const std::vector<Entry>& entries, double unigram_bits);

// Draws the map; the path relative to `dir` ("figures/atlas_map.png"), or none with nothing ended.
std::optional<std::string> draw_map(const std::string& dir, const AtlasPlan& p, const std::vector<Entry>& entries);

}  // namespace stx::atlas
