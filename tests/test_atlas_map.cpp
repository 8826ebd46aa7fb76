// Unit tests of the atlas map's cells (atlas/atlas_map.h): which mark each seed-0 run gets —
// learned with its loss, did not learn (plateau, or labelled stalls), stopped by the divergence
// guard, spiked, ended without a reading, still to run (waiting for the depth below included) —
// which runs are left blank (ruled out, other seeds), where each lands, and which cell is framed
// as the best.
#include <gtest/gtest.h>

#include <cmath>

#include "stx/atlas/atlas_map.h"

namespace stx::atlas {
namespace {

Entry run(const std::string& scheme, int64_t depth, size_t lr_index, grid::Outcome o, std::optional<double> bpb,
          bool warmup = true, int64_t seed = 0) {
  Entry e;
  e.run.scheme = scheme, e.run.depth = depth, e.run.lr_index = lr_index, e.run.warmup = warmup, e.run.seed = seed;
  e.result.outcome = o;
  e.result.guard_stop = o == grid::Outcome::Diverges;  // these diverge by the guard
  e.reading.final_bpb = bpb;
  return e;
}

// The cell at (x, y); a default one (Pending, no loss) with x = −1 where the map has none.
MapCell at(const std::vector<MapCell>& cells, int x, int y) {
  for (auto& c : cells)
    if (c.x == x && c.y == y) return c;
  return MapCell{-1, -1};
}

TEST(AtlasMap, EachRunGetsTheMarkOfWhatBecameOfIt) {
  AtlasPlan p;
  p.schemes = {"post", "pre"};
  p.depths = {6, 24, 96};
  p.lrs = {1e-3, 1e-2, 1e-1};
  using O = grid::Outcome;
  std::vector<Entry> es;
  es.push_back(run("pre", 6, 0, O::Trains, 2.9));                     // x 0: learned
  es.push_back(run("pre", 6, 1, O::Trains, 2.6));                     // x 1: learned, the best
  es.push_back(run("pre", 6, 2, O::Diverges, std::nullopt));          // x 2: diverged
  es.push_back(run("pre", 6, 1, O::Trains, 2.5, /*warmup=*/false));   // x 3: no warm-up, not framed
  es.push_back(run("pre", 6, 1, O::Trains, 2.55, true, /*seed=*/1));  // another seed: not drawn
  es.push_back(run("post", 6, 0, O::TooSlow, 4.85));                  // on the plateau (unigram 4.9)
  es.push_back(run("post", 6, 1, O::Stalls, std::nullopt));           // stalls, without a reading
  es.push_back(run("post", 6, 2, O::Trains, std::nullopt));           // ended, no validation line
  es.push_back(run("post", 24, 0, O::SpikedAndRecovered, 3.1));       // x 5 (after the gap)
  es.back().reading.failure = "loss spike";
  es.push_back(run("pre", 96, 1, O::NotStarted, std::nullopt));  // waiting for 24 layers
  es.back().skipped = "waiting for pre at 24 layers to end";
  es.push_back(run("pre", 96, 2, O::NotStarted, std::nullopt));  // ruled out: blank
  es.back().skipped = "outside the best rate at 24 layers (0.01) ± 1";
  es.push_back(run("pre", 96, 0, O::Interrupted, std::nullopt));  // begun, to resume
  es.push_back(run("post", 24, 1, O::Stalls, 3.9));  // below the line drawn: learned (the map reads the loss)
  const auto cells = map_cells(p, es, 4.9);

  ASSERT_EQ(cells.size(), 11u);
  const int pre = 1, post = 0;
  EXPECT_EQ(at(cells, 0, pre).mark, Mark::Learned);
  EXPECT_EQ(at(cells, 0, pre).bpb, std::optional<double>(2.9));
  EXPECT_FALSE(at(cells, 0, pre).best);
  EXPECT_TRUE(at(cells, 1, pre).best);  // 2.6: the best warm-up run, though the no-warm-up run is lower
  EXPECT_EQ(at(cells, 2, pre).mark, Mark::Diverged);
  EXPECT_EQ(at(cells, 3, pre).mark, Mark::Learned);
  EXPECT_FALSE(at(cells, 3, pre).best);
  EXPECT_EQ(at(cells, 0, post).mark, Mark::Plateau);
  EXPECT_EQ(at(cells, 1, post).mark, Mark::Plateau);
  EXPECT_EQ(at(cells, 2, post).mark, Mark::NoReading);
  EXPECT_EQ(at(cells, 3, post).x, -1);  // 6 layers' no-warm-up column (x 3): post has no such run
  EXPECT_EQ(at(cells, 4, pre).x, -1);   // the gap between depths
  // 24 layers: columns 5–7 (no no-warm-up run there), gap 8; 96 layers: 9–11.
  EXPECT_EQ(at(cells, 5, post).mark, Mark::Spiked);
  EXPECT_EQ(at(cells, 6, post).mark, Mark::Learned);
  EXPECT_TRUE(at(cells, 6, post).best);
  EXPECT_EQ(at(cells, 10, pre).x, 10);  // waiting: drawn (at() has no cell: x −1)
  EXPECT_EQ(at(cells, 10, pre).mark, Mark::Pending);
  EXPECT_EQ(at(cells, 9, pre).x, 9);
  EXPECT_EQ(at(cells, 9, pre).mark, Mark::Pending);
  EXPECT_EQ(at(cells, 11, pre).x, -1);

  // Without a plateau line (pieces), a high loss counts as learned; a stall still does not.
  const auto nan_cells = map_cells(p, es, NAN);
  EXPECT_EQ(at(nan_cells, 0, post).mark, Mark::Learned);
  EXPECT_TRUE(at(nan_cells, 0, post).best);
  EXPECT_EQ(at(nan_cells, 1, post).mark, Mark::Plateau);
}

}  // namespace
}  // namespace stx::atlas
