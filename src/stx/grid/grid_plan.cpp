// stx/grid/grid_plan.cpp — see grid_plan.h.
#include "stx/grid/grid_plan.h"

#include <fmt/format.h>

#include "stx/config/config_io.h"
#include "stx/core/error.h"

namespace stx::grid {

std::set<std::string> override_keys(const std::vector<std::string>& overrides) {
  std::set<std::string> keys;
  for (auto& o : overrides) keys.insert(o.substr(0, o.find('=')));
  return keys;
}

void refuse_own_keys(const std::vector<std::string>& user_overrides, const std::set<std::string>& own,
                     const std::string& who, const std::string& hint) {
  for (auto& o : user_overrides) {
    const auto key = o.substr(0, o.find('='));
    if (own.count(key))
      throw InputError("--set " + o + ": " + who + " sets " + key + " itself for every run (" + hint + ")");
  }
}

void validate_runs(const Config& base, const std::vector<PlannedRun>& runs) {
  for (auto& r : runs) {
    Config c = base;
    for (auto& o : r.overrides) apply_override(c, o);
    try {
      validate(c);
    } catch (const InputError& e) {
      throw InputError("run " + r.name + ": " + e.what());
    }
  }
}

std::string config_mismatch(const nlohmann::json& stored, const Config& now, const std::set<std::string>& ignore) {
  const auto d = config_diff(stored, config_to_json(now), ignore);
  return d ? fmt::format("its config has {}={} but this one has {}={}", d->key, d->stored.dump(), d->key, d->now.dump())
           : "";
}

}  // namespace stx::grid
