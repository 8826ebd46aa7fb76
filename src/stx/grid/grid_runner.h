// stx/grid/grid_runner.h — the loop that every grid of child runs shares (stx sweep, stx
// experiment): take the runs in order, `jobs` at a time, each child started by its own worker
// thread; skip a run the plan says not to run (ended before, or blocked by another); stop handing
// out runs on SIGINT/SIGTERM (core/signals.h) or when a child reports bad input.
#pragma once
#include <cstddef>
#include <functional>
#include <string>

namespace stx::grid {

struct RunnerHooks {
  // Before run i starts (under the runner's lock, in order): "" to run it, or a reason not to;
  // `skip` prints its own line.
  std::function<std::string(size_t)> skip;
  // With jobs > 1, when run i is handed to a worker (under the lock): e.g. "[3/20] post-L18: started".
  std::function<void(size_t)> started;
  // Runs i's child (outside the lock; several at once with jobs > 1). Throws InputError on the
  // child's bad input.
  std::function<void(size_t)> run;
  // After run i's child ended (under the lock): store, print its line, rewrite the report.
  std::function<void(size_t)> ended;
};

// Runs 0..n−1 as above. One job runs in this thread (the live progress line, the child's
// parent-death signal); more run in a pool of threads, each child living while its thread does.
// Returns the stop signal (0: every run was handed out); a child's InputError is rethrown once
// the children already running have ended.
int run_grid(size_t n, int jobs, const RunnerHooks& h);

}  // namespace stx::grid
