// stx/doctor/run_watch.h — `stx doctor --run`: after the probe horizon K, which signals have
// left the range they had in the first K updates, and when (the early warning while a run
// trains). "Left": a logged value more than twice (attention entropy: under half) the median of
// the values logged up to K, as the atlas's first-mover reading (atlas_reading.h).
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "stx/doctor/doctor_signals.h"

namespace stx::doctor {

struct Watch {
  int64_t last_step = 0;
  std::vector<std::pair<std::string, int64_t>> moved;  // signal, first step it left its range; earliest first
  std::optional<int64_t> diverged_step;
  std::string cause;
};

Watch watch_run(const std::vector<metrics::Record>& records, int64_t horizon);
Watch watch_lines(const std::vector<Line>& lines, int64_t horizon);  // the training lines alone
nlohmann::json to_json(const Watch& w);
std::string render(const Watch& w);

}  // namespace stx::doctor
