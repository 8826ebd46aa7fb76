// stx/grid/grid_dir.h — the output directory of a grid of runs (`stx sweep`, `stx experiment`):
// it must be new, empty, or hold the same plan (PLAN_FILE, JSON). A stored plan that differs is
// refused once any run reached a checkpoint (a grid stopped before its first checkpoint, e.g. by
// a bad --set, may be redone with another setup). Then the directory holds the new plan. One
// process at a time writes a grid directory (core/dir_lock.h); each run inside it has its own lock.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "stx/core/dir_lock.h"

#include <nlohmann/json.hpp>

namespace stx::grid {

struct GridDir {
  std::string out;        // --out
  std::string plan_file;  // "sweep_plan.json"
  std::string kind;       // "a sweep" / "an experiment", in messages
  std::string options;    // "--config/--set/--steps": what a rerun must repeat
};

// Throws InputError naming the problem; `mismatch(stored)` is "" when the stored plan is this one.
// Returns the directory's lock: keep it while the grid runs.
[[nodiscard]] std::shared_ptr<DirLock> prepare_grid_dir(
    const GridDir& g, const nlohmann::json& plan, const std::function<std::string(const nlohmann::json&)>& mismatch);

}  // namespace stx::grid
