// stx/doctor/live_doctor.cpp — see live_doctor.h.
#include "stx/doctor/live_doctor.h"

#include <fmt/format.h>

#include <iostream>

#include "stx/doctor/doctor_probe.h"
#include "stx/doctor/run_watch.h"

namespace stx::doctor {

LiveDoctor::LiveDoctor(DoctorModel m, Config c, bool quiet)
    : m_(std::move(m)), c_(std::move(c)), quiet_(quiet), horizon_(default_horizon(c_)) {}

void LiveDoctor::preload(const std::vector<metrics::Record>& records) {
  for (auto& r : records)
    if (auto l = line_of(r)) lines_.push_back(*l);
}

void LiveDoctor::operator()(nlohmann::json& line) {
  auto l = line_of(metrics::record_of(line, "the line being logged"));
  if (!l) return;
  while (!lines_.empty() && lines_.back().step >= l->step) lines_.pop_back();  // a resume logs them again
  lines_.push_back(*l);
  if (!verdict_) {
    // The verdict reads the first K updates: the first logged step ≥ K with two lines by then.
    std::optional<int64_t> at;
    for (size_t i = 1; i < lines_.size() && !at; ++i)
      if (lines_[i].step >= horizon_) at = lines_[i].step;
    if (!at) return;
    horizon_ = *at;
    Early e;
    for (auto& x : lines_)
      if (x.step <= horizon_) e.lines.push_back(x);
    verdict_ = judge(m_, c_, e, horizon_);
    if (!quiet_) {
      std::cerr << fmt::format("\ndoctor at step {}: ", horizon_)
                << (verdict_->judged ? fmt::format("{} (P(fails) = {:.2f}): {}", verdict_->outcome, verdict_->p_fail,
                                                   verdict_->mechanism)
                                     : "cannot judge — " + verdict_->not_judged)
                << "\n";
      if (!verdict_->rx.overrides.empty()) {
        std::string set;
        for (auto& o : verdict_->rx.overrides) set += " --set " + o;
        std::cerr << "doctor prescribes:" << set << "\n";
      }
    }
  }
  const auto w = watch_lines(lines_, horizon_);
  for (auto& [s, step] : w.moved)
    if (told_.insert(s).second && !quiet_)
      std::cerr << fmt::format("\ndoctor: {} left its early range at step {}\n", s, step);
  nlohmann::json d = {{"judged", verdict_->judged}};
  if (verdict_->judged) d["outcome"] = verdict_->outcome, d["p_fails"] = verdict_->p_fail;
  d["left_early_range"] = to_json(w)["left_early_range"];
  line[metrics::key::doctor] = d;
}

}  // namespace stx::doctor
