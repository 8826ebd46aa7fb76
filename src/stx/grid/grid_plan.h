// stx/grid/grid_plan.h — what every plan of child runs (stx sweep, stx experiment) checks before
// its first run starts: no user --set of a key the plan sets itself, every run's config valid,
// and, on a rerun, the stored plan's config the same as this one outside the plan's own keys.
#pragma once
#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <vector>

#include "stx/config/config.h"

namespace stx::grid {

// One child run of a plan: its directory name under the grid and its --set overrides (applied
// after the user's).
struct PlannedRun {
  std::string name;
  std::vector<std::string> overrides;
};

// InputError "--set K=V: WHO sets K itself for every run (HINT)" for the first user override of
// a key in `own`.
void refuse_own_keys(const std::vector<std::string>& user_overrides, const std::set<std::string>& own,
                     const std::string& who, const std::string& hint);

// InputError "run NAME: …" for the first run whose config (base + its overrides) does not validate.
void validate_runs(const Config& base, const std::vector<PlannedRun>& runs);

// The keys a run's overrides set ("section.key").
std::set<std::string> override_keys(const std::vector<std::string>& overrides);

// Why a stored plan's resolved config (config_to_json) differs from `now` outside `ignore`
// ("its config has k=a but this one has k=b"), "" if it does not. Keys it lacks pass.
std::string config_mismatch(const nlohmann::json& stored, const Config& now, const std::set<std::string>& ignore);

}  // namespace stx::grid
