// stx/grid/grid_runner.cpp — see grid_runner.h.
#include "stx/grid/grid_runner.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "stx/core/signals.h"

namespace stx::grid {

int run_grid(size_t n, int jobs, const RunnerHooks& h) {
  std::mutex mu;
  size_t next = 0;
  std::exception_ptr error;
  auto worker = [&] {
    for (;;) {
      size_t i = 0;
      try {
        {
          std::lock_guard<std::mutex> lock(mu);
          for (;;) {
            if (next == n || error || stop_signal()) return;
            i = next++;
            if (h.skip(i).empty()) break;
          }
          if (jobs > 1 && h.started) h.started(i);
        }
        h.run(i);
        std::lock_guard<std::mutex> lock(mu);
        h.ended(i);
      } catch (...) {  // a hook's or a child's error: no more runs are handed out, then it is rethrown
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
        return;
      }
    }
  };

  const size_t workers = std::min<size_t>(static_cast<size_t>(std::max(1, jobs)), std::max<size_t>(n, 1));
  if (workers <= 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    for (size_t k = 0; k < workers; ++k) pool.emplace_back(worker);
    for (auto& t : pool) t.join();
  }
  if (error) std::rethrow_exception(error);
  return stop_signal();
}

}  // namespace stx::grid
