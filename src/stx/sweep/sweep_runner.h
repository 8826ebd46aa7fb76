// stx/sweep/sweep_runner.h — `stx sweep`: runs every (scheme, depth) of a plan as a separate
// `stx train` child process (DIR/{scheme}-L{depth}, output in its train.log), resumably:
//   - a run that ended (its label: grid/outcome.h) is skipped;
//   - a run with a checkpoint but fewer than N steps is continued with `stx train --resume`;
//   - any other run starts fresh.
// After each child: DIR/run/sweep_status.json, then DIR/sweep.md and sweep.json are rewritten;
// the figures are drawn at the end (and when stopped); the last line counts the runs per label
// ("sweep: 2 train, 0 too slow, 2 stall, 0 spiked and recovered, 0 diverge; report in …").
// SIGINT/SIGTERM: forwarded once to the running child, which finishes its step, checkpoints and
// exits; the sweep then writes its report and exits 128 + signal; the same command continues.
// A child's exit 2 (bad input) aborts the sweep with that message. Runs are ordered by depth, then scheme (cheap ones
// first); with jobs > 1 that many run at once, each given cores / jobs threads (a d_model-64 model runs faster on one
// thread than on two: docs/performance.md).
#pragma once
#include <cstdint>
#include <string>

#include "stx/sweep/sweep_plan.h"

namespace stx::sweep {

struct SweepOptions {
  std::string exe;      // the stx binary the children run
  std::string out;      // DIR
  std::string command;  // the command line, for sweep.md
  Plan plan;
  int64_t early_steps = 100;  // x range of the ΔF / grad-norm figures
  bool quiet = false;         // no progress line
  int jobs = 1;               // children at once (STX_THREADS = cores / jobs each unless set)
  bool watch = false;         // a live table of the running runs (grid/live_table.h) instead of per-run lines
};

// Returns the exit code: 0 every run ended; 1 some child failed (crashed or was killed: rerun
// to retry); 128 + signal when stopped. Throws InputError on bad input (--out, a child's exit 2).
int run_sweep(const SweepOptions& o);

}  // namespace stx::sweep
