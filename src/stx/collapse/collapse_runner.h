// stx/collapse/collapse_runner.h — `stx experiment entropy-collapse`: runs the plan's grid
// (collapse_plan.h) as `stx train` children in DIR/{arm}-x{m} (grid/train_child.h), resumably:
// ended runs are skipped, interrupted ones continued, and an arm's ladder stops at its first
// divergence. After every run DIR/report.md and report.json are rewritten (collapse_report.h);
// the figures (collapse_figures.h) are drawn at the end and when stopped. SIGINT/SIGTERM: the
// running child checkpoints, the report is written, exit 128 + signal; the same command continues.
#pragma once
#include <string>
#include <vector>

#include "stx/collapse/collapse_plan.h"
#include "stx/collapse/collapse_reading.h"
#include "stx/grid/run_status.h"

namespace stx::collapse {

// One cell of the grid and what became of it.
struct Entry {
  Arm arm;
  double multiplier = 1, lr = 0;
  grid::RunResult run;
  Reading reading;
  std::string skipped;  // non-empty: not run, and why ("a lower learning rate diverged")
};

struct ExperimentOptions {
  std::string exe, out, command;
  CollapsePlan plan;
  bool quiet = false;
};

// 0: every run ended; 1: a child failed (rerun to retry); 128 + signal when stopped.
int run_entropy_collapse(const ExperimentOptions& o);

}  // namespace stx::collapse
