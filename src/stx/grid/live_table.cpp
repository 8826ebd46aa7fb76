// stx/grid/live_table.cpp — see live_table.h.
#include "stx/grid/live_table.h"

#include <fmt/format.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "stx/grid/outcome.h"
#include "stx/grid/run_status.h"

namespace stx::grid {

namespace fs = std::filesystem;

namespace {

// The last training line, every train loss in bits, and whether the run stopped at a divergence event.
struct Last {
  std::optional<nlohmann::json> line;
  bool diverged = false;
  std::optional<double> valid_nll;
  std::vector<double> train_bits;
};

Last read_last(const std::string& dir) {
  Last out;
  std::ifstream in(fs::path(dir) / "metrics.jsonl");
  for (std::string s; std::getline(in, s);) {
    if (s.empty() || s.back() != '}') continue;  // a line being written
    try {
      auto j = nlohmann::json::parse(s);
      if (j.contains("event")) out.diverged = j.value("action", "") == "stop";
      else if (j.contains("valid_nll") && j["valid_nll"].is_number()) out.valid_nll = j["valid_nll"].get<double>();
      else if (j.contains("loss")) {
        out.train_bits.push_back(j["loss"].is_number() ? j["loss"].get<double>() / std::log(2.0) : NAN);
        out.line = std::move(j);
      }
    } catch (const std::exception&) {
    }
  }
  return out;
}

std::optional<double> max_under(const nlohmann::json& j) {
  if (j.is_number()) return j.get<double>();
  std::optional<double> m;
  if (j.is_object() || j.is_array())
    for (auto& v : j)
      if (auto x = max_under(v)) m = m ? std::max(*m, *x) : *x;
  return m;
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
  const double to_bits = bits_ ? 1.0 / std::log(2.0) : 1.0;
  std::ostringstream s;
  s << fmt::format("{:<22} {:>6} {:>9} {:>10} {:>9} {:>9} {:>8}  {}\n", "scheme", "step", bits_ ? "bits/byte" : "loss",
                   "grad reach", "max logit", "‖ΔF‖", "valid", "state");
  for (auto& r : rows_) {
    const auto last = read_last(r.dir);
    std::optional<double> loss, reach, logit, df;
    int64_t step = 0;
    if (last.line) {
      const auto& j = *last.line;
      step = j.value("step", int64_t{0});
      if (j["loss"].is_number()) loss = j["loss"].get<double>() * to_bits;
      if (j.contains("grad_norm_layer") && j["grad_norm_layer"].contains("decoder")) {
        const auto& g = j["grad_norm_layer"]["decoder"];
        if (g.is_array() && !g.empty() && g.back().is_number() && g.back().get<double>() > 0)
          reach = g.front().get<double>() / g.back().get<double>();
      }
      if (j.contains("attn_max_logit")) logit = max_under(j["attn_max_logit"]);
      if (j.contains("delta_f") && j["delta_f"].is_number()) df = j["delta_f"].get<double>();
    }
    std::string state = last.line ? "training" : "starting";
    if (last.diverged || step >= steps_) {  // ended: its label (grid/outcome.h)
      OutcomeEvidence e;
      e.guard_stop = last.diverged, e.train_bits = last.train_bits;
      if (last.valid_nll) e.valid_bits = *last.valid_nll / std::log(2.0);
      e.unigram_bits = unigram_of(r.dir);
      state = to_string(classify_outcome(e));
    }
    std::optional<double> valid;
    if (last.valid_nll) valid = *last.valid_nll * to_bits;
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
