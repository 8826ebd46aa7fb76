// stx/report/metrics_log.h — RUN/metrics.jsonl: one JSON object per line, appended as training
// goes (docs/metrics.md); the first line of a file states its schema version ("schema";
// metrics_schema.h reads the file). On resume the lines logged after the checkpoint are dropped
// first, so a resumed run's log equals an uninterrupted run's; torn lines (a write cut by a crash or a
// full disk) are dropped too and counted. Every write is checked: one the disk does not take is
// cut back off the file and stops the run (EnvError, exit 5) before the next checkpoint.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace stx {

class MetricsLog {
 public:
  // What a resume's rewrite dropped: lines logged after the checkpoint, and torn lines (not a JSON
  // object with a "step", or a last line without its newline), by line number (1-based).
  struct Repair {
    int64_t kept = 0, after = 0;
    std::vector<int64_t> torn;
    std::string describe(const std::string& path, int64_t step) const;  // "" when nothing was dropped
  };

  // Opens `path` for appending; with keep_until_step ≥ 0 first rewrites it (atomically) keeping
  // the lines up to the last one whose "step" ≤ keep_until_step (those logged before the
  // checkpoint was written), torn lines left out.
  MetricsLog(const std::string& path, int64_t keep_until_step = -1);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  void write(const nlohmann::json& record);  // one line, or EnvError/InputError and no line at all
  const Repair& repair() const { return repair_; }

 private:
  std::string path_;
  int fd_ = -1;
  int64_t size_ = 0;  // the file's length after the last whole line
  Repair repair_;
};

}  // namespace stx
