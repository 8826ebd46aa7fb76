// stx/grid/live_table.h — a live table of the runs of a grid while their children train (`stx
// sweep --watch`, the main demo): every few seconds, one row per run from the last training line
// of its metrics.jsonl — step, train loss (bits per token when the run's tokens are bytes), the
// gradient reach (bottom-layer ÷ top-layer gradient norm), the largest attention logit, ‖ΔF‖,
// and its state: starting, training, then the label of the ended run (grid/outcome.h: trains,
// too slow, stalls, spiked and recovered, diverges). On a terminal the table is redrawn in place; into a log it is
// printed whole every `log_every_s` seconds.
#pragma once
#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace stx::grid {

struct LiveRow {
  std::string title;  // "Post-LN"
  std::string dir;    // the run directory
};

class LiveTable {
 public:
  LiveTable(std::vector<LiveRow> rows, int64_t steps, bool bits, double refresh_s = 2.0, double log_every_s = 30.0);
  ~LiveTable();  // stops the thread and prints the final table
  void stop();

 private:
  void loop();
  std::string render() const;
  double unigram_of(const std::string& dir) const;  // H of the run's label, computed once per run

  std::vector<LiveRow> rows_;
  int64_t steps_;
  bool bits_;
  double refresh_s_, log_every_s_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  int drawn_lines_ = 0;
  mutable std::map<std::string, double> unigram_;
};

}  // namespace stx::grid
