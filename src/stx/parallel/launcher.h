// stx/parallel/launcher.h — `stx train --nproc N`: N local workers of one data-parallel job, as
// torchrun would start them (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR=127.0.0.1, MASTER_PORT a
// free port; STX_THREADS = cores / N each). Rank 0 writes to the terminal; rank r > 0 to
// RUN/worker-r.log. SIGINT/SIGTERM are forwarded once (every worker finishes its step and rank 0
// checkpoints). When a worker fails, the others stop by themselves (their next collective fails
// at once on a closed connection, or after train.dist_timeout_s on a hung peer); any still
// running `grace` after the first failure are killed (a hung one, or rank 0 busy validating). The last checkpoint is
// never at risk: it is written atomically.
#pragma once
#include <chrono>
#include <string>
#include <vector>

namespace stx::parallel {

struct LaunchOptions {
  std::string exe;                // this binary
  std::vector<std::string> args;  // the worker's arguments (argv[1..]), without --nproc
  int nproc = 2;
  std::string run_dir;  // for worker logs and messages
  std::chrono::seconds grace{10};
};

// Runs the job; returns its exit status: 0 if every worker finished; 128+signal after a
// forwarded stop; 1 or 2 if the workers failed that way (diverged; bad input); otherwise 4 (a
// worker died or hung), after one line naming the worker, its status and its log.
int launch_local(const LaunchOptions& o);

}  // namespace stx::parallel
