// stx/atlas/atlas_plan.h — the grid of `stx experiment atlas`: which scheme trains at which
// depth and learning rate (Wortsman et al. 2023's learning-rate sweeps × DeepNet's Table 1 depth
// axis), every run with the same optimizer, schedule and clipping from the base config
// (configs/atlas.yaml: a byte-level decoder LM, AdamW, linear warm-up + cosine).
//
// Runs (DIR/runs/{scheme}-L{depth}-lr{lr}[-s{seed}][-nowarm]):
//   - every scheme × depth × learning rate of the grid, seed 0 (the config's train.seed);
//   - seeds 1 … seeds−1 (train.seed + k): at the shallowest depth on every rate, deeper on the
//     rates within `neighbours` grid points of the scheme's best seed-0 rate at that depth (a scheme that learned at no
//     rate there: the config's train.lr), and only where the seed-0 run ended: the seed spread of every cell a finding
//     reads (docs/atlas.md#statistics);
//   - per scheme at the first two depths, one run without warm-up at --nowarm-lr (Xiong et al.'s
//     question);
//   - from the third depth on, seed 0 runs only the rates within `neighbours` grid points of the scheme's
//     best rate at the depth below ("the deepest rows may use the rates around each scheme's
//     best"), and none when no run of the scheme learned there (it did not survive: it diverged
//     or ended on the unigram plateau, atlas_summary.h).
// Runs go depth by depth (shallow first), then scheme, then rate.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "stx/config/config.h"

namespace stx::atlas {

struct AtlasPlan {
  std::string config_path;
  std::vector<std::string> overrides;  // the user's --set, applied first
  Config base;                         // resolved and validated
  std::vector<std::string> schemes;    // rows of the scheme table (stx sweep's)
  std::vector<int64_t> depths;         // increasing
  std::vector<double> lrs;             // increasing
  int64_t seeds = 2;                   // per cell that a finding reads (see above)
  int64_t steps = 0;                   // train.max_steps of every run
  int64_t warmup = 0;                  // train.warmup_steps of the warm-up runs
  double nowarm_lr = 0;                // the no-warm-up column's rate (0: none)
  int64_t neighbours = 1;              // deep rows: best rate ± this many grid points
  bool quick = false;
};

struct AtlasRun {
  std::string scheme;
  int64_t depth = 0, depth_index = 0;
  size_t lr_index = 0;  // into plan.lrs (the no-warm-up run: the index of the nearest rate)
  double lr = 0;
  int64_t seed = 0;  // offset from the config's train.seed
  bool warmup = true;
  std::string name;
};

// The index of the grid rate nearest to lr on a log scale.
size_t nearest_rate(const std::vector<double>& lrs, double lr);
std::vector<double> parse_rates(const std::string& text);  // "1e-4,3e-4,…", increasing, positive

AtlasPlan make_plan(const std::string& config_path, const std::vector<std::string>& overrides,
                    const std::vector<std::string>& schemes, const std::vector<int64_t>& depths,
                    const std::vector<double>& lrs, int64_t seeds, int64_t steps, int64_t warmup, double nowarm_lr,
                    int64_t neighbours, bool quick);

// Every run the plan may need, in run order (the deep rows' candidates included).
std::vector<AtlasRun> all_runs(const AtlasPlan& p);
std::string run_name(const AtlasRun& r);
std::vector<std::string> run_overrides(const AtlasPlan& p, const AtlasRun& r);

// DIR/atlas_plan.json and why a stored one does not match ("" if it does).
nlohmann::json plan_json(const AtlasPlan& p);
std::string plan_mismatch(const nlohmann::json& stored, const AtlasPlan& p);

}  // namespace stx::atlas
