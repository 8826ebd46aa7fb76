// stx/doctor/doctor_dataset.h — the doctor's ground truth: one example per ended run of a stability
// atlas (docs/atlas.md): what the run did in its first 5 % of updates (doctor_signals.h Early)
// and how it ended. DIR/dataset.jsonl, one JSON object per line, kept in the repository, so a
// refit (`stx doctor fit`) needs neither the atlas's run directories nor a rerun.
//
// The label: the run's outcome (grid/outcome.h, docs/reference.md#run-outcomes: trains, too slow,
// stalls, spiked and recovered, diverges), recomputed from the atlas's reading of the whole run
// (atlas_summary.h outcome_of). The doctor predicts three classes of them (doctor_class):
//   trains    trains
//   stalls    too slow or stalls: it ended on the unigram plateau (final loss ≥ H − 0.1 bit)
//   diverges  diverges, or spiked and recovered: the guard stopped it, or a loss spike (≥ 1 nat
//             above the lowest loss before it) — the set the doctor was fitted on, where a spike
//             was a failure whatever came after it
// "fails" is every class but trains. Examples collected before the labels hold the class itself
// (trains, stalls or diverges).
// The early lines come from the run's own metrics.jsonl when its directory is there, otherwise
// from the doctor's probe of the run's config (the first K updates again: the same seed and data
// order, so the same updates up to float rounding of the build).
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "stx/config/config.h"
#include "stx/doctor/doctor_signals.h"

namespace stx::doctor {

struct Example {
  std::string name, scheme;
  int64_t depth = 0, seed = 0, steps = 0;
  double lr = 0;
  bool warmup = true;
  std::string label;  // an outcome label (grid/outcome.h); before the labels: trains | stalls | diverges
  std::string failure;
  std::optional<int64_t> failure_step;
  std::optional<double> final_bpb;
  std::string source;     // run | probe
  nlohmann::json regime;  // doctor_model.h regime_of(the run's config)
  Early early;
};

nlohmann::json to_json(const Example& e);
Example example_from_json(const nlohmann::json& j);
std::vector<Example> read_dataset(const std::string& path);  // throws InputError
void write_dataset(const std::string& path, const std::vector<Example>& examples);

// An atlas run (an entry of atlas.json's "runs") as the atlas ran it: its --set assignments
// on top of the atlas's config (atlas_plan.h run_overrides), the resolved config, and its label
// (from its "reading"; "guard_stop", or before the labels an outcome "diverged", for a guard
// stop; `unigram_bits`: H of the rules, atlas_outcome_bits).
std::vector<std::string> atlas_run_overrides(const nlohmann::json& plan, const nlohmann::json& run);
Config atlas_run_config(const nlohmann::json& plan, const nlohmann::json& run);
std::string atlas_label(const nlohmann::json& run, double unigram_bits);
// H of an atlas.json: its unigram_entropy_bits, else its init_loss_bits (log₂ V).
double atlas_outcome_bits(const nlohmann::json& atlas);
// The doctor's class of a label: "trains", "stalls" or "diverges" (the header); InputError for
// anything else.
std::string doctor_class(const std::string& label);
nlohmann::json read_atlas_json(const std::string& atlas_dir);  // InputError if absent or not an atlas

struct CollectOptions {
  std::string atlas_dir;  // with atlas.json (and runs/ when present)
  std::string out;        // dataset.jsonl: examples already there are kept
  bool quiet = false;
};
// Adds an example for every ended atlas run not yet in `out`; rewrites it after each. Returns
// the number added.
int collect(const CollectOptions& o);

}  // namespace stx::doctor
