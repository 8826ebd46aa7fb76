// stx/grid/train_child.h — one `stx train` child process of a grid of runs (`stx sweep`,
// `stx experiment`): started fresh with the run's --config/--set arguments, or continued with
// --resume when its directory has a checkpoint; stdout/stderr appended to DIR/train.log; a live
// progress line on a terminal (a line every 5 minutes into a log, or when several children run
// at once); a SIGINT/SIGTERM of the
// parent (stx/core/signals.h) forwarded once, so the child checkpoints and stops. The child's
// exit is read back into a RunResult (run_status.h) and DIR/sweep_status.json:
//   0 → its label (grid/outcome.h; failed when it stopped short), 1 → diverges (the guard stopped it),
//   128+sig after a forwarded signal → interrupted, anything else → failed;
//   2 (bad input) → InputError carrying the child's one-line message.
#pragma once
#include <string>
#include <vector>

#include "stx/grid/run_status.h"

namespace stx::grid {

struct TrainChild {
  std::string exe;                      // the stx binary
  std::string dir;                      // the run directory
  std::string who = "stx sweep";        // the driver, in the log header and messages
  std::string tag;                      // "[3/20] post-L18": progress and log header
  std::vector<std::string> fresh_args;  // after `stx train --out DIR` for a fresh start
  int64_t steps = 0;                    // train.max_steps (also set on --resume)
  bool quiet = false;                   // no progress line
  bool live = true;                     // the live line on a terminal (false: whole lines only)
  std::vector<std::string> env;         // "NAME=value" added to the child's environment
};

// Runs the child to its end. `before` is the run's state read before (labels, earlier wall time).
RunResult run_train_child(const TrainChild& c, const RunResult& before);

}  // namespace stx::grid
