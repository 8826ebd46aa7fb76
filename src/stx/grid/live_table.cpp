// stx/grid/live_table.cpp — see live_table.h.
#include "stx/grid/live_table.h"

#include <fmt/format.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include "stx/core/error.h"
#include "stx/grid/outcome.h"
#include "stx/grid/run_status.h"
#include "stx/report/metrics_signals.h"

namespace stx::grid {

namespace fs = std::filesystem;

namespace {

// The last training line, every train loss in bits, and whether the run stopped at a divergence
// event; `error` when its metrics.jsonl breaks the schema.
struct Last {
  std::optional<metrics::Record> line;
  bool diverged = false;
  std::optional<double> valid_nll;
  std::vector<double> train_bits;
  std::string error;
};

Last read_last(const std::string& dir) {
  Last out;
  std::vector<metrics::Record> records;
  try {
    records = metrics::run_records(dir);  // a line being written has no newline yet: left out
  } catch (const InputError& e) {
    out.error = e.what();
  }
  for (auto& r : records) {
    if (r.is_event()) out.diverged = r.action == "stop";
    else if (r.validation()) {
      if (r.valid_nll) out.valid_nll = r.valid_nll;
    } else {
      out.train_bits.push_back(metrics::to_bits(r.loss));
      out.line = std::move(r);
    }
  }
  return out;
}

std::string opt(const std::optional<double>& v, const char* f) {
  return v && std::isfinite(*v) ? fmt::format(fmt::runtime(f), *v) : "–";
}

}  // namespace

LiveTable::LiveTable(std::vector<LiveRow> rows, int64_t steps, bool bits, double refresh_s, double log_every_s)
    : rows_(std::move(rows)), steps_(steps), bits_(bits), refresh_s_(refresh_s), log_every_s_(log_every_s) {
  thread_ = std::thread([this] { loop(); });
}

LiveTable::~LiveTable() { stop(); }

void LiveTable::stop() {
  if (stop_.exchange(true)) return;
  if (thread_.joinable()) thread_.join();
  if (drawn_lines_ > 0) std::cout << fmt::format("\033[{}A", drawn_lines_);  // over the live one
  std::cout << render() << std::flush;                                       // the final state
}

double LiveTable::unigram_of(const std::string& dir) const {
  auto it = unigram_.find(dir);
  if (it == unigram_.end()) it = unigram_.emplace(dir, run_unigram_bits(dir)).first;
  return it->second;
}

std::string LiveTable::render() const {
  std::ostringstream s;
  s << fmt::format("{:<22} {:>6} {:>9} {:>10} {:>9} {:>9} {:>8}  {}\n", "scheme", "step", bits_ ? "bits/byte" : "loss",
                   "grad reach", "max logit", "‖ΔF‖", "valid", "state");
  for (auto& r : rows_) {
    const auto last = read_last(r.dir);
    std::optional<double> loss, reach, logit, df;
    int64_t step = 0;
    if (last.line) {
      const auto& j = *last.line;
      step = j.step;
      if (std::isfinite(j.loss)) loss = bits_ ? metrics::to_bits(j.loss) : j.loss;
      if (auto g = metrics::grad_reach(j)) reach = g->ratio();
      logit = metrics::max_attn_logit(j);
      df = j.delta_f;
    }
    std::string state = last.line ? "training" : "starting";
    if (!last.error.empty()) state = "unreadable metrics.jsonl";
    if (last.diverged || step >= steps_) {  // ended: its label (grid/outcome.h)
      OutcomeEvidence e;
      e.guard_stop = last.diverged, e.train_bits = last.train_bits;
      if (last.valid_nll) e.valid_bits = metrics::to_bits(*last.valid_nll);
      e.unigram_bits = unigram_of(r.dir);
      state = to_string(classify_outcome(e));
    }
    std::optional<double> valid;
    if (last.valid_nll) valid = bits_ ? metrics::to_bits(*last.valid_nll) : *last.valid_nll;
    s << fmt::format("{:<22} {:>6} {:>9} {:>10} {:>9} {:>9} {:>8}  {}\n", r.title, step, opt(loss, "{:.3f}"),
                     opt(reach, "{:.2e}"), opt(logit, "{:.1f}"), opt(df, "{:.3f}"), opt(valid, "{:.3f}"), state);
  }
  return s.str();
}

void LiveTable::loop() {
  const bool tty = isatty(STDOUT_FILENO);
  auto last_print = std::chrono::steady_clock::now() - std::chrono::hours(1);
  while (!stop_) {
    const auto now = std::chrono::steady_clock::now();
    const double since = std::chrono::duration<double>(now - last_print).count();
    if (tty || since >= log_every_s_) {
      const auto text = render();
      if (tty && drawn_lines_ > 0) std::cout << fmt::format("\033[{}A", drawn_lines_);
      std::cout << text << std::flush;
      drawn_lines_ = tty ? static_cast<int>(rows_.size()) + 1 : 0;
      last_print = now;
    }
    for (int i = 0; i < 10 && !stop_; ++i) std::this_thread::sleep_for(std::chrono::duration<double>(refresh_s_ / 10));
  }
}

}  // namespace stx::grid
