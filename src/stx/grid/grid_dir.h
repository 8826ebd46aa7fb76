// stx/grid/grid_dir.h — the output directory of a grid of runs (`stx sweep`, `stx experiment`):
// it must be new, empty, or hold the same plan (PLAN_FILE, JSON). A stored plan that differs is
// refused once any run reached a checkpoint (a grid stopped before its first checkpoint, e.g. by
// a bad --set, may be redone with another setup). Then the directory holds the new plan.
#pragma once
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace stx::grid {

struct GridDir {
  std::string out;        // --out
  std::string plan_file;  // "sweep_plan.json"
  std::string kind;       // "a sweep" / "an experiment", in messages
  std::string options;    // "--config/--set/--steps": what a rerun must repeat
};

// Throws InputError naming the problem; `mismatch(stored)` is "" when the stored plan is this one.
void prepare_grid_dir(const GridDir& g, const nlohmann::json& plan,
                      const std::function<std::string(const nlohmann::json&)>& mismatch);

}  // namespace stx::grid
