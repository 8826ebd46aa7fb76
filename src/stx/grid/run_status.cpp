// stx/grid/run_status.cpp — see run_status.h.
#include "stx/grid/run_status.h"

#include <fmt/format.h>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "stx/core/atomic_file.h"
#include "stx/core/run_dir.h"
#include "stx/report/metrics_log.h"

namespace stx::grid {

namespace fs = std::filesystem;

std::string to_string(Outcome o) {
  switch (o) {
    case Outcome::NotStarted: return "not-started";
    case Outcome::Interrupted: return "interrupted";
    case Outcome::Failed: return "failed";
    case Outcome::Converged: return "converged";
    case Outcome::Stalled: return "stalled";
    case Outcome::Diverged: return "diverged";
  }
  return "?";
}

std::string duration_text(double seconds) {
  const auto s = static_cast<int64_t>(std::llround(seconds));
  return s >= 3600 ? fmt::format("{}:{:02d}:{:02d}", s / 3600, s / 60 % 60, s % 60)
                   : fmt::format("{}:{:02d}", s / 60, s % 60);
}

std::string short_cause(const std::string& cause) {
  if (cause.rfind("non-finite", 0) == 0) return "non-finite";
  if (cause.rfind("loss spike", 0) == 0) return "loss spike";
  return cause.size() > 24 ? cause.substr(0, 24) + "…" : cause;
}

bool classify(RunResult& r, const std::vector<nlohmann::json>& records, int64_t steps) {
  std::vector<double> losses;
  bool finished = false;
  r.divergence_events = 0;
  for (const auto& j : records) {
    if (!j.contains("step") || !j["step"].is_number_integer()) continue;
    const int64_t step = j["step"].get<int64_t>();
    if (j.value("event", "") == "divergence") {
      ++r.divergence_events;
      r.cause = j.value("cause", "");
      r.step = std::max(r.step, step);
      r.last_event_step = step;
      continue;
    }
    r.step = std::max(r.step, step);
    finished |= step >= steps;
    if (j.contains("loss") && j["loss"].is_number()) losses.push_back(j["loss"].get<double>());
    if (j.contains("valid_loss") && j["valid_loss"].is_number()) {
      r.valid_loss = j["valid_loss"].get<double>();
      r.valid_nll = j.contains("valid_nll") && j["valid_nll"].is_number()
                        ? std::optional<double>(j["valid_nll"].get<double>())
                        : std::nullopt;
      r.valid_bleu = j.contains("valid_bleu") && j["valid_bleu"].is_number()
                         ? std::optional<double>(j["valid_bleu"].get<double>())
                         : std::nullopt;
      r.valid_step = step;
    }
  }
  if (!losses.empty()) {
    const size_t tail = std::max<size_t>(1, (losses.size() + 9) / 10);
    double sum = 0;
    for (size_t i = losses.size() - tail; i < losses.size(); ++i) sum += losses[i];
    r.first_loss = losses.front();
    r.end_loss = sum / static_cast<double>(tail);
  }
  if (finished && r.outcome != Outcome::Diverged) {
    bool stalled = losses.size() >= 2 && !(*r.end_loss < 0.9 * *r.first_loss);
    const auto nll = r.valid_nll ? r.valid_nll : r.valid_loss;
    if (nll && r.vocab_size > 1) stalled |= !(*nll < std::log(static_cast<double>(r.vocab_size)));
    r.outcome = stalled ? Outcome::Stalled : Outcome::Converged;
    r.cause.clear();  // updates the guard skipped or rolled back are counted in divergence_events
  }
  return finished;
}

RunResult read_run(const std::string& dir, const std::string& scheme, int64_t depth, int64_t steps) {
  RunResult r;
  r.name = fs::path(dir).filename().string(), r.scheme = scheme, r.depth = depth;
  const auto at = [&](const char* f) { return (fs::path(dir) / f).string(); };
  nlohmann::json status;
  if (std::ifstream in(at("sweep_status.json")); in) {
    try {
      in >> status;
    } catch (const std::exception&) {
      status = nullptr;  // unreadable: judge from the run's own files
    }
  }
  if (status.is_object()) {
    r.exit_code = status.value("exit_code", -1);
    r.seconds = status.value("seconds", 0.0);
  }
  try {
    auto y = YAML::LoadFile(at("config.yaml"));
    if (y["model"] && y["model"]["vocab_size"]) r.vocab_size = y["model"]["vocab_size"].as<int64_t>();
  } catch (const std::exception&) {
  }
  std::vector<nlohmann::json> records;
  if (fs::exists(at("metrics.jsonl"))) {
    try {
      records = MetricsLog::read(at("metrics.jsonl"));
    } catch (const std::exception&) {
      records.clear();
    }
  }
  const bool diverged = status.is_object() && status.value("outcome", "") == "diverged";
  if (diverged) r.outcome = Outcome::Diverged;
  const bool finished = classify(r, records, steps);
  if (diverged) {  // the status holds the child's own account
    r.step = status.value("step", r.step);
    r.cause = status.value("cause", r.cause);
  } else if (!finished) {
    const bool failed = status.is_object() && status.value("outcome", "") == "failed";
    r.outcome = failed ? Outcome::Failed : RunDir(dir).holds_run() ? Outcome::Interrupted : Outcome::NotStarted;
    if (failed) r.cause = status.value("cause", "");
  }
  return r;
}

void write_status(const std::string& dir, const RunResult& r) {
  const nlohmann::json j = {{"exit_code", r.exit_code},
                            {"outcome", to_string(r.outcome)},
                            {"step", r.step},
                            {"cause", r.cause},
                            {"seconds", r.seconds}};
  write_text_atomically((fs::path(dir) / "sweep_status.json").string(), j.dump(2) + "\n");
}

}  // namespace stx::grid
