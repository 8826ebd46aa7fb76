// stx/sweep/sweep_plan.h — the grid of `stx sweep` (DeepNet Table 1: residual scheme × depth):
// the schemes and depths, the run names, the `--set` overrides of each run, and the sweep's own
// parameters as stored in DIR/sweep_plan.json (a rerun with a different config or step count is
// refused; the grid itself may grow or shrink between reruns).
//
// Schemes: post, post-init, pre, deepnorm map to model.scheme with model.sigma_reparam=false;
// sigma is Post-LN with σReparam on every linear (model.scheme=post, model.sigma_reparam=true,
// as configs/mt-deen-sigma.yaml). Depth L sets the layers of every stack the model has:
// decoder-only → model.decoder_layers=L, encoder-only → model.encoder_layers=L,
// encoder-decoder → both (an L-L model; the report writes the depth as "L-L").
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "stx/config/config.h"

namespace stx::sweep {

// The allowed scheme names, in DeepNet Table 1's order.
const std::vector<std::string>& scheme_names();
// The scheme as the papers call it: "Post-LN", "Post-LN-init", "Pre-LN", "DeepNorm", "Post-LN + σReparam".
std::string scheme_title(const std::string& name);

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
// Why a stored resolved config (config_to_json) differs from `now` outside the keys in `ignore`
// ("its config has k=a but this one has k=b"), "" if it does not. Keys the stored one lacks pass.
std::string config_mismatch(const nlohmann::json& stored, const Config& now, const std::set<std::string>& ignore);

// Why a stored sweep_plan.json does not match this plan (config key or steps), "" if it does.
std::string plan_mismatch(const nlohmann::json& stored, const Plan& p);

}  // namespace stx::sweep
