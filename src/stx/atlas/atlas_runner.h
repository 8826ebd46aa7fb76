// stx/atlas/atlas_runner.h — `stx experiment atlas`: runs the plan (atlas_plan.h) as `stx train`
// children in DIR/runs/{run} (grid/train_child.h), `jobs` at a time (one thread each unless
// STX_THREADS says otherwise), resumably: ended runs are skipped, interrupted ones continued. A
// deep row's run waits for the depth below of its scheme to end; a pass that had to leave such
// runs is followed by another. After every run DIR/atlas.md and atlas.json are rewritten
// (atlas_report.h); the figures (atlas_figures.h) at the end and when stopped. An ended run's
// checkpoints are deleted (its metrics.jsonl, config.yaml and status stay). Runs without a
// directory that DIR/atlas.json records as ended are taken from it, so a copy of DIR without
// runs/ (what the repository keeps: docs/atlas/) carries on where it stopped. SIGINT/SIGTERM: the
// running children checkpoint, the report is written, exit 128 + signal; the same command continues.
#pragma once
#include <string>

#include "stx/atlas/atlas_plan.h"

namespace stx::atlas {

struct AtlasOptions {
  std::string exe, out, command;
  AtlasPlan plan;
  int jobs = 2;
  bool quiet = false;
  bool report_only = false;  // rewrite the report and figures from the ended runs; start nothing
  int64_t max_depth = 0;     // > 0: start no run deeper than this now (they stay planned: a later
                             // invocation without it runs them)
};

// 0: every run ended or was ruled out; 1: a child failed (rerun to retry); 128 + signal when stopped.
int run_atlas(const AtlasOptions& o);

}  // namespace stx::atlas
