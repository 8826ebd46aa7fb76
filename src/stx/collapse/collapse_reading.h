// stx/collapse/collapse_reading.h — the automatic reading of one run of the entropy-collapse
// experiment, from its metrics.jsonl (docs/sigma-reparam.md states these definitions):
//   H_min(t)   the lowest layer entropy at a logged step (report/metrics_signals.h: min over
//              layers and attention kinds of the head-averaged entropy; Zhai et al. Fig. 1)
//   collapse   the first logged step with H_min(t) < threshold (nats)
//   spike      the first logged step whose train loss exceeds the lowest logged before it by more
//              than spike_nats
//   failure    the earlier of the divergence (the guard stopped the run: step and cause) and the
//              spike
//   relation   "collapse → failure" (collapse at or before the failure), "failure, no collapse
//              before", "collapse, no failure", "neither"
// plus the Theorem 3.1 check on the model's own layers: min over logged steps and layers of
// attn_entropy.mean − attn_entropy_bound.mean (≥ 0 up to rounding when the theorem holds).
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "stx/grid/run_status.h"
#include "stx/report/metrics_schema.h"

namespace stx::collapse {

struct Reading {
  std::optional<double> first_entropy, last_entropy, min_entropy;  // H_min at the first/last line, lowest
  int64_t min_entropy_step = 0;
  std::optional<int64_t> collapse_step, spike_step, failure_step;
  std::string failure;                  // "diverged (non-finite)", "loss spike", ""
  std::optional<double> min_bound_gap;  // min (entropy − bound)
  std::optional<double> last_sigma_kq;  // max over layers of attn_sigma_kq.*.*.max_head at the last line
  std::optional<double> max_sigma_kq;   // ... its largest value over the run
  std::string relation;
};

// `r` is the run's state (run_status.h): whether the guard stopped it, its step and cause.
Reading read_collapse(const std::vector<metrics::Record>& records, const grid::RunResult& r, double threshold,
                      double spike_nats);

nlohmann::json to_json(const Reading& r);

}  // namespace stx::collapse
