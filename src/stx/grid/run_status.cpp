// stx/grid/run_status.cpp — see run_status.h.
#include "stx/grid/run_status.h"

#include <fmt/format.h>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "stx/config/config_io.h"
#include "stx/core/atomic_file.h"
#include "stx/core/run_dir.h"
#include "stx/data/unigram.h"
#include "stx/report/metrics_signals.h"

namespace stx::grid {

namespace fs = std::filesystem;

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

std::string result_line(const RunResult& r, const std::string& loss, const std::string& extra,
                        const std::string& skipped) {
  switch (r.outcome) {
    case Outcome::Failed: return "failed (" + r.cause + "); rerun to retry";
    case Outcome::Interrupted: return fmt::format("stopped at step {}; rerun to continue", r.step);
    case Outcome::NotStarted: return skipped.empty() ? "not started" : "not run: " + skipped;
    default: break;
  }
  const std::string s = r.guard_stop
                            ? fmt::format("diverges: the guard stopped it at step {}: {}", r.step, short_cause(r.cause))
                            : to_string(r.outcome) + loss;
  return s + extra + (r.seconds > 0 ? "  " + duration_text(r.seconds) : "");
}

bool classify(RunResult& r, const std::vector<metrics::Record>& records, int64_t steps) {
  std::vector<double> losses, bits;  // the finite train losses (nats); every one in bits (NaN: non-finite)
  std::vector<int64_t> loss_steps;
  bool finished = false;
  r.divergence_events = 0;
  for (const auto& j : records) {
    const int64_t step = j.step;
    if (j.is_event()) {  // the one event: a divergence
      ++r.divergence_events;
      r.cause = j.cause;
      r.step = std::max(r.step, step);
      r.last_event_step = step;
      continue;
    }
    r.step = std::max(r.step, step);
    finished |= step >= steps;
    if (j.training()) {  // a non-finite loss is logged as null: NaN
      if (std::isfinite(j.loss)) losses.push_back(j.loss);
      bits.push_back(metrics::to_bits(j.loss)), loss_steps.push_back(step);
    }
    if (j.validation() && j.valid_loss) {
      r.valid_loss = j.valid_loss, r.valid_nll = j.valid_nll, r.valid_bleu = j.valid_bleu;
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
  const auto valid = r.valid_nll ? r.valid_nll : r.valid_loss;
  OutcomeEvidence e;
  e.guard_stop = r.guard_stop;
  e.train_bits = bits;
  if (valid) e.valid_bits = metrics::to_bits(*valid);
  r.final_bits = final_bits(e.valid_bits, bits);
  if (auto i = first_spike(bits)) r.spike_step = loss_steps[*i];
  if (finished || r.guard_stop) {
    e.unigram_bits = r.unigram_bits;
    r.outcome = classify_outcome(e);
    if (!r.guard_stop) r.cause.clear();  // updates the guard skipped or rolled back are counted in divergence_events
  }
  return finished;
}

double run_unigram_bits(const std::string& dir, bool* is_log2v) {
  Config c;
  try {
    c = load_config_file((fs::path(dir) / "config.yaml").string());
  } catch (const std::exception&) {
    return NAN;
  }
  double h = NAN;
  try {
    h = unigram_entropy_bits(c.data, (fs::path(dir) / "spm.tgt.model").string());
  } catch (const std::exception&) {
    h = NAN;  // a corpus no longer there: log₂ V
  }
  if (is_log2v) *is_log2v = !std::isfinite(h);
  return plateau_entropy(h, c.model.vocab_size);
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
    if (y["data"] && y["data"]["tokenizer"]) r.bytes = y["data"]["tokenizer"].as<std::string>() == "bytes";
  } catch (const std::exception&) {
  }
  std::vector<metrics::Record> records;
  try {
    records = metrics::run_records(dir);
  } catch (const std::exception&) {
    records.clear();  // unreadable: judged as a run without a log
  }
  // The guard stopped it: "guard_stop" (this version), or "diverged" (before the labels: only a guard stop).
  const bool diverged =
      status.is_object() &&
      ((status.contains("guard_stop") && status["guard_stop"].is_boolean() && status["guard_stop"].get<bool>()) ||
       status.value("outcome", "") == "diverged");
  r.guard_stop = diverged;
  if (!diverged &&
      std::any_of(records.begin(), records.end(), [&](const metrics::Record& j) { return j.step >= steps; }))
    r.unigram_bits = run_unigram_bits(dir, &r.unigram_is_log2v);  // only a finished run's label needs H
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
  const nlohmann::json j = {{"exit_code", r.exit_code},   {"outcome", to_string(r.outcome)},
                            {"guard_stop", r.guard_stop}, {"step", r.step},
                            {"cause", r.cause},           {"seconds", r.seconds}};
  write_text_atomically((fs::path(dir) / "sweep_status.json").string(), j.dump(2) + "\n");
}

}  // namespace stx::grid
