// stx/report/metrics_log.h — RUN/metrics.jsonl: one JSON object per line, appended and flushed
// as training goes (docs/metrics.md). On resume the lines after the checkpoint's step are
// dropped first, so a resumed run's log equals an uninterrupted run's.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace stx {

class MetricsLog {
 public:
  // Opens `path` for appending; with keep_until_step ≥ 0 first rewrites it (atomically) keeping
  // only lines whose "step" ≤ keep_until_step (a torn last line is dropped).
  MetricsLog(const std::string& path, int64_t keep_until_step = -1);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  void write(const nlohmann::json& record);  // one line, flushed

  // Every complete line of a metrics file (InputError naming the file and line if one is not JSON).
  static std::vector<nlohmann::json> read(const std::string& path);

 private:
  std::FILE* f_ = nullptr;
};

}  // namespace stx
