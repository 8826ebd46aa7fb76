// stx/sweep/sweep_plan.h — the grid of `stx sweep` (DeepNet Table 1: residual scheme × depth):
// the schemes and depths, the run names, the `--set` overrides of each run, and the sweep's own
// parameters as stored in DIR/sweep_plan.json (a rerun with a different config or step count is
// refused; the grid itself may grow or shrink between reruns).
//
// Schemes: the rows of the scheme table (config/schemes.h) that stx sweep uses; each run applies
// its row's overrides (model.scheme, model.sigma_reparam). Depth L sets the layers of every stack the model has:
// decoder-only → model.decoder_layers=L, encoder-only → model.encoder_layers=L,
// encoder-decoder → both (an L-L model; the report writes the depth as "L-L").
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "stx/config/config.h"
#include "stx/config/schemes.h"

namespace stx::sweep {

// The scheme table's row of a sweep scheme (InputError listing the names if there is none).
const SchemeRow& scheme_row(const std::string& name);

struct Plan {
  std::string config_path;             // --config
  std::vector<std::string> overrides;  // the user's --set, applied before the sweep's own
  std::vector<std::string> schemes;    // rows
  std::vector<int64_t> depths;         // columns
  int64_t steps = 0;                   // train.max_steps of every run
  Config base;                         // config_path + overrides, resolved and validated
};

// "6,18,50" → {6, 18, 50}; "post,pre" → checked names. InputError naming the bad item.
std::vector<int64_t> parse_depths(const std::string& text);
std::vector<std::string> parse_schemes(const std::string& text);

// Resolves the base config, checks steps > 0 and that every run's config validates.
Plan make_plan(const std::string& config_path, const std::vector<std::string>& overrides,
               const std::vector<std::string>& schemes, const std::vector<int64_t>& depths, int64_t steps);

// "deepnorm-L100": the run's directory name under DIR.
std::string run_name(const std::string& scheme, int64_t depth);
// How a depth is written for this architecture (DeepNet style): "100L", or "100L-100L" for encoder-decoder.
std::string depth_label(const Config& base, int64_t depth);

// The sweep's --set overrides of one run (after the user's): steps, scheme, σReparam, layers.
std::vector<std::string> run_overrides(const Plan& p, const std::string& scheme, int64_t depth);

// DIR/sweep_plan.json: {"config_path","overrides","config" (resolved base),"steps","schemes","depths"}.
nlohmann::json plan_json(const Plan& p);
// Why a stored sweep_plan.json does not match this plan (config key or steps), "" if it does.
std::string plan_mismatch(const nlohmann::json& stored, const Plan& p);

}  // namespace stx::sweep
