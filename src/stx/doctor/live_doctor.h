// stx/doctor/live_doctor.h — `train.doctor: true`: stx doctor inside a training run. At the
// first training line at or after the probe horizon K (5 % of train.max_steps) the verdict of
// the first K updates (at least two logged lines) is computed once (doctor_verdict.h) and printed; from then on every
// training line of metrics.jsonl carries "doctor": the verdict and the signals that have left
// their early range since (run_watch.h), each printed once when it does.
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "stx/config/config.h"
#include "stx/doctor/doctor_model.h"
#include "stx/doctor/doctor_verdict.h"

namespace stx::doctor {

class LiveDoctor {
 public:
  LiveDoctor(DoctorModel m, Config c, bool quiet);
  // A resumed run: the lines it logged before (those after its checkpoint are dropped as the
  // trainer logs them again).
  void preload(const std::vector<metrics::Record>& records);
  void operator()(nlohmann::json& line);  // the trainer's on_log hook

 private:
  DoctorModel m_;
  Config c_;
  bool quiet_;
  int64_t horizon_;
  std::vector<Line> lines_;
  std::optional<Verdict> verdict_;
  std::set<std::string> told_;
};

}  // namespace stx::doctor
