// stx/atlas/atlas_runner.cpp — see atlas_runner.h.
#include "stx/atlas/atlas_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "stx/atlas/atlas_figures.h"
#include "stx/atlas/atlas_report.h"
#include "stx/atlas/atlas_summary.h"
#include "stx/core/error.h"
#include "stx/core/run_dir.h"
#include "stx/core/runtime.h"
#include "stx/core/signals.h"
#include "stx/grid/grid_dir.h"
#include "stx/grid/grid_runner.h"
#include "stx/grid/train_child.h"
#include "stx/report/metrics_schema.h"

namespace stx::atlas {

namespace fs = std::filesystem;
using grid::Outcome;

namespace {

std::vector<metrics::Record> records_of(const std::string& dir) {
  try {
    return metrics::run_records(dir);
  } catch (const InputError&) {
    return {};
  }
}

// "CPU, BLAS kernel" of a hosts.jsonl line: two machines that name their CPU alike (a generic
// "Intel(R) Xeon(R) Processor") may still pick different kernels. OpenBLAS's config string
// ("OpenBLAS 0.3.21 … SkylakeX MAX_THREADS=64") names its kernel before MAX_THREADS.
std::string host_label(const nlohmann::json& j) {
  std::string label = j["cpu"].get<std::string>();
  if (!j.contains("blas") || !j["blas"].is_string()) return label;
  const std::string blas = j["blas"];
  std::istringstream words(blas);
  std::string w, before;
  while (words >> w && w.rfind("MAX_THREADS=", 0) != 0) before = w;
  return label + ", " +
         (blas.rfind("OpenBLAS", 0) == 0 && !before.empty() && w.rfind("MAX_THREADS=", 0) == 0 ? "OpenBLAS " + before
                                                                                               : blas);
}

// The distinct hosts (host_label) of RUN/hosts.jsonl in order (a torn or foreign line is skipped).
std::vector<std::string> hosts_of(const std::string& dir) {
  std::vector<std::string> out;
  std::ifstream in(fs::path(dir) / RunDir::kHosts);
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("cpu") || !j["cpu"].is_string()) continue;
    if (auto h = host_label(j); std::find(out.begin(), out.end(), h) == out.end()) out.push_back(h);
  }
  return out;
}

// atlas.json's outcome of an ended run: a label (grid/outcome.h), or a spelling from before the
// labels ("converged", "stalled", "diverged": a guard stop).
bool ended_outcome(const std::string& o) {
  const auto label = grid::outcome_from_string(o);
  return (label && grid::is_label(*label)) || o == "converged" || o == "stalled" || o == "diverged";
}

std::string result_text(const Entry& e) {
  const auto& g = e.reading;
  return grid::result_line(
      e.result, g.final_bpb ? fmt::format("  {:.3f} bits/byte", *g.final_bpb) : "",
      g.first_mover.empty() ? "" : fmt::format("  ({} moved first, at step {})", g.first_mover, *g.first_mover_step),
      e.skipped);
}

class Runner {
 public:
  explicit Runner(const AtlasOptions& o) : o_(o) {}

  int run() {
    if (o_.report_only && !fs::exists(fs::path(o_.out) / "atlas_plan.json"))
      throw InputError("--report-only: --out " + o_.out + " holds no atlas (no atlas_plan.json); run the atlas first");
    refuse_lost_results();
    const auto lock =
        o_.report_only  // a report changes nothing of the plan, but writes atlas.md and atlas.json
            ? std::make_shared<DirLock>(o_.out, "atlas directory")
            : grid::prepare_grid_dir({o_.out, "atlas_plan.json", "an atlas", "--config/--set/--steps/--warmup"},
                                     plan_json(o_.plan),
                                     [&](const nlohmann::json& stored) { return plan_mismatch(stored, o_.plan); });
    install_stop_handlers();
    try {
      unigram_ = outcome_entropy_bits(o_.plan);
    } catch (const InputError&) {
      unigram_ = init_loss_bits(o_.plan);  // the corpus is not readable here: log₂ V (grid/outcome.h)
    }
    const auto stored = stored_runs();
    for (auto& r : all_runs(o_.plan)) {
      Entry e{r};
      e.result = grid::read_run(dir_of(e), r.scheme, r.depth, o_.plan.steps);
      e.result.name = r.name;
      reread(e);
      if (!e.result.ended() && !fs::exists(dir_of(e)))
        if (auto it = stored.find(r.name); it != stored.end()) import(e, it->second);
      entries_.push_back(e);
    }
    figures_ = existing_figures(o_.out, o_.plan, entries_);
    command_ = o_.command;
    if (o_.report_only) return report_only();
    for (int pass = 0;; ++pass) {
      std::vector<size_t> pending;
      for (size_t i = 0; i < entries_.size(); ++i)
        if (!entries_[i].result.ended() && (pass == 0 || waiting(entries_[i]))) pending.push_back(i);
      if (pending.empty()) break;
      size_t waited = 0, ran = 0;
      if (int sig = run_pass(pending, waited, ran)) return stop(sig);
      // Another pass only for runs left waiting for a depth below that has since ended; when
      // nothing ran, what they wait for cannot end in this invocation (e.g. a failed child).
      if (waited == 0 || ran == 0) break;
    }
    draw();
    write();
    int failed = 0, ended = 0;
    std::vector<Outcome> outcomes;
    for (auto& e : entries_) {
      failed += e.result.outcome == Outcome::Failed;
      ended += e.result.ended();
      outcomes.push_back(e.result.outcome);
    }
    std::cout << fmt::format("atlas: {} runs ended ({}){}; report in {}", ended, grid::label_counts(outcomes),
                             failed ? fmt::format(", {} failed (rerun to retry)", failed) : "",
                             (fs::path(o_.out) / "atlas.md").string())
              << std::endl;
    return failed ? 1 : 0;
  }

 private:
  std::string dir_of(const Entry& e) const { return (fs::path(o_.out) / "runs" / e.run.name).string(); }

  // The results already in --out are never dropped or mixed: a rerun with other --steps,
  // --warmup or config is refused when any run has results (ended in atlas.json — all a fresh
  // clone has — or begun under runs/), and so is a grid that leaves out a run atlas.json records
  // as ended (atlas.json is rewritten from the grid's runs alone).
  void refuse_lost_results() const {
    const fs::path plan_file = fs::path(o_.out) / "atlas_plan.json";
    if (!fs::exists(plan_file)) return;  // prepare_grid_dir judges the directory
    std::set<std::string> ended;
    for (auto& [name, _] : stored_runs()) ended.insert(name);
    size_t begun = 0;
    std::error_code ec;
    for (auto& d : fs::directory_iterator(fs::path(o_.out) / "runs", ec))
      begun += d.is_directory() && fs::exists(metrics::path_in(d.path().string())) &&
               !ended.count(d.path().filename().string());
    if (ended.empty() && begun == 0) return;
    std::set<std::string> held = ended;
    nlohmann::json stored;
    try {
      std::ifstream(plan_file) >> stored;
    } catch (const std::exception&) {
      return;  // prepare_grid_dir names the problem
    }
    if (const auto why = plan_mismatch(stored, o_.plan); !why.empty())
      throw InputError("--out " + o_.out + " holds " + std::to_string(ended.size() + begun) +
                       " atlas runs made with a different setup: " + why +
                       "; rerun it with the same --config/--set/--steps/--warmup or choose another --out");
    for (auto& r : all_runs(o_.plan)) held.erase(r.name);
    if (!held.empty())
      throw InputError(fmt::format(
          "--out {} holds {} run(s) outside this grid (e.g. {}); atlas.json would lose them: rerun with a grid "
          "that includes them (the --schemes/--depths/--lrs/--seeds of atlas_plan.json, widened as you like) or "
          "choose another --out",
          o_.out, held.size(), *held.begin()));
  }

  // The runs DIR/atlas.json records as ended: a copy of the atlas without its run directories
  // (the repository keeps atlas.json, not runs/) carries on from them. Both the outcome labels and
  // the spellings before them (converged, stalled, diverged) count as ended.
  std::map<std::string, nlohmann::json> stored_runs() const {
    std::map<std::string, nlohmann::json> out;
    std::ifstream in(fs::path(o_.out) / "atlas.json");
    if (!in) return out;
    try {
      nlohmann::json j;
      in >> j;
      for (auto& r : j.value("runs", nlohmann::json::array())) {
        if (r.contains("outcome") && r["outcome"].is_string() && ended_outcome(r["outcome"]))
          out[r.value("name", "")] = r;
      }
    } catch (const std::exception&) {
      out.clear();  // unreadable: rerun what has no directory
    }
    return out;
  }

  // An ended run of atlas.json. Its label is recomputed from its reading (the entries before the
  // labels say "diverged" for a guard stop, "stalled" also in the reading's failure: cleared, the
  // label says it now).
  void import(Entry& e, const nlohmann::json& r) const {
    const auto o = r.value("outcome", "");
    e.result.step = r.value("step", int64_t{0});
    e.result.cause = r.value("cause", "");
    e.result.seconds = r.value("seconds", 0.0);
    if (r.contains("reading")) e.reading = reading_from_json(r["reading"]);
    if (e.reading.failure == "stalled") e.reading.failure.clear();
    e.result.guard_stop = r.contains("guard_stop") && r["guard_stop"].is_boolean()
                              ? r["guard_stop"].get<bool>()
                              : o == "diverged" || e.reading.failure.rfind("diverged", 0) == 0;
    e.result.outcome = outcome_of(e.reading, e.result.guard_stop, unigram_);
    for (auto& h : r.value("hosts", nlohmann::json::array()))
      if (h.is_string()) e.hosts.push_back(h.get<std::string>());
  }
  // The reading of a run from its directory; an ended run's label from that reading, as an
  // imported run's (outcome_of).
  void reread(Entry& e) {
    e.reading = read_atlas(records_of(dir_of(e)), e.result);
    e.hosts = hosts_of(dir_of(e));
    if (e.result.ended()) e.result.outcome = outcome_of(e.reading, e.result.guard_stop, unigram_);
  }
  static bool waiting(const Entry& e) { return is_waiting(e); }

  // Why run e is not run now ("" to run it): deep rows follow the best rate of the depth below.
  std::string rule_out(const Entry& e) const {
    const auto& r = e.run;
    if (r.seed > 0) return rule_out_seed(e);
    if (r.depth_index < 2) return "";
    const int64_t below = o_.plan.depths[r.depth_index - 1];
    std::optional<double> best;
    std::optional<size_t> best_i;
    for (auto& x : entries_) {
      if (x.run.scheme != r.scheme || x.run.depth != below || !x.run.warmup || x.run.seed != 0) continue;
      if (!x.result.ended()) {
        // A run of the depth below that is ruled out for good (from the third depth below on) is not
        // one to wait for: without this, a fourth depth would wait forever for runs that never start.
        const auto why = rule_out(x);
        if (!why.empty() && why.rfind("waiting", 0) != 0) continue;
        return fmt::format("waiting for {} at {} layers to end", r.scheme, below);
      }
      const auto l = loss_of(x);
      if (learned(o_.plan, x) && (!best || *l < *best)) best = l, best_i = x.run.lr_index;
    }
    if (!best_i) return fmt::format("no run of {} learned at {} layers", r.scheme, below);
    const auto lo = *best_i >= static_cast<size_t>(o_.plan.neighbours) ? *best_i - o_.plan.neighbours : 0;
    const auto hi = *best_i + o_.plan.neighbours;
    if (r.warmup && (r.lr_index < lo || r.lr_index > hi))
      return fmt::format("outside the best rate at {} layers ({:g}) ± {}", below, o_.plan.lrs[*best_i],
                         o_.plan.neighbours);
    return "";
  }

  // Seeds 1, 2, … run every rate at the shallowest depth (the learning-rate sensitivity over the
  // whole grid); deeper, they follow seed 0 at the same depth: the rates within `neighbours` grid
  // points of its best (a scheme that learned at no rate: the config's rate), where it ended.
  std::string rule_out_seed(const Entry& e) const {
    const auto& r = e.run;
    if (r.depth_index == 0) return "";
    std::optional<double> best;
    std::optional<size_t> best_i;
    bool seed0_ended = false;
    for (auto& x : entries_) {
      if (x.run.scheme != r.scheme || x.run.depth != r.depth || !x.run.warmup || x.run.seed != 0) continue;
      if (!x.result.ended()) {
        const auto why = rule_out(x);
        if (!why.empty() && why.rfind("waiting", 0) != 0) continue;
        return fmt::format("waiting for {} at {} layers, seed 0, to end", r.scheme, r.depth);
      }
      seed0_ended |= x.run.lr_index == r.lr_index;
      const auto l = loss_of(x);
      if (learned(o_.plan, x) && (!best || *l < *best)) best = l, best_i = x.run.lr_index;
    }
    if (!seed0_ended) return fmt::format("seed 0 did not run {} at {} layers and this rate", r.scheme, r.depth);
    const size_t centre = best_i ? *best_i : nearest_rate(o_.plan.lrs, o_.plan.base.train.lr);
    const auto n = static_cast<size_t>(o_.plan.neighbours);
    if (r.lr_index + n < centre || r.lr_index > centre + n)
      return fmt::format("outside seed 0's {} rate at {} layers ({:g}) ± {}", best_i ? "best" : "configured", r.depth,
                         o_.plan.lrs[centre], n);
    return "";
  }

  int run_pass(const std::vector<size_t>& pending, size_t& waited, size_t& ran) {
    const size_t total = entries_.size();
    auto tag = [&](size_t i) {
      return fmt::format("[{}/{}] {}", pending[i] + 1, total, entries_[pending[i]].run.name);
    };
    grid::RunnerHooks h;
    h.skip = [&](size_t i) -> std::string {
      auto& e = entries_[pending[i]];
      if (e.result.ended()) return "done before";
      e.skipped = rule_out(e);
      if (e.skipped.empty() && o_.max_depth > 0 && e.run.depth > o_.max_depth)
        e.skipped = fmt::format("waiting for a run without --max-depth {}", o_.max_depth);
      if (!e.skipped.empty()) {
        waited += waiting(e) && !(o_.max_depth > 0 && e.run.depth > o_.max_depth);  // the latter cannot end now
        if (!waiting(e)) std::cout << tag(i) << ": not run: " << e.skipped << std::endl;
        return e.skipped;
      }
      return "";
    };
    h.started = [&](size_t i) {
      if (!o_.quiet) std::cout << tag(i) << ": started" << std::endl;
    };
    h.run = [&](size_t i) {
      auto& e = entries_[pending[i]];
      fs::create_directories(fs::path(o_.out) / "runs");
      grid::TrainChild c;
      c.exe = o_.exe, c.dir = dir_of(e), c.tag = tag(i), c.steps = o_.plan.steps, c.quiet = o_.quiet;
      c.who = "stx experiment atlas";
      c.live = o_.jobs <= 1;
      if (!std::getenv("STX_THREADS")) {  // the cores shared out, unless the user chose
        const int threads = std::max(1, physical_cores() / std::max(1, o_.jobs));
        c.env = {"STX_THREADS=" + std::to_string(threads)};
      }
      c.fresh_args = {"--config", o_.plan.config_path};
      for (auto& s : o_.plan.overrides) c.fresh_args.insert(c.fresh_args.end(), {"--set", s});
      for (auto& s : run_overrides(o_.plan, e.run)) c.fresh_args.insert(c.fresh_args.end(), {"--set", s});
      auto res = grid::run_train_child(c, e.result);
      e.result = res;
    };
    h.ended = [&](size_t i) {  // under the runner's lock
      ++ran;
      auto& e = entries_[pending[i]];
      reread(e);
      if (e.result.ended()) prune(e);
      std::cout << tag(i) << ": " << result_text(e) << std::endl;
      if (!stop_signal()) write();
    };
    return grid::run_grid(pending.size(), o_.jobs, h);
  }

  // An ended run needs its log, config and status, not its weights: the checkpoints and the
  // probe snapshot go (a 96-layer run's are ~60 MB).
  void prune(const Entry& e) const {
    std::error_code ec;
    for (const char* f : {"checkpoint_last.safetensors", "checkpoint_prev.safetensors", "checkpoint_best.safetensors",
                          "probe.safetensors"})
      fs::remove(fs::path(dir_of(e)) / f, ec);
  }

  void write() { write_report(o_.out, command_, o_.plan, entries_, figures_); }

  // --report-only: the report of what has ended, under the command that ran it (atlas.json's),
  // e.g. to commit figures while the atlas runs on; the runs not ended say why they wait.
  int report_only() {
    std::ifstream in(fs::path(o_.out) / "atlas.json");
    try {
      nlohmann::json j;
      if (in && (in >> j) && j.contains("command") && j["command"].is_string()) command_ = j["command"];
    } catch (const std::exception&) {
    }
    if (const auto at = command_.find(" --report-only"); at != std::string::npos) command_.erase(at, 14);
    int ended = 0;
    for (auto& e : entries_) ended += e.result.ended();
    settle_skips();
    draw();
    write();
    std::cout << fmt::format("atlas: report of {} ended runs of {} rewritten (nothing run); {}", ended, entries_.size(),
                             (fs::path(o_.out) / "atlas.md").string())
              << std::endl;
    return 0;
  }

  // Before a report: why each run not ended is not run now (a dot on the map only for the runs
  // that will run or wait; a run ruled out for good is left blank). Recomputed for all: a run
  // that waited in an earlier pass may have its depth below ended since.
  void settle_skips() {
    for (auto& e : entries_)
      if (!e.result.ended()) e.skipped = rule_out(e);
  }

  void draw() {
    try {
      figures_ = draw_figures(o_.out, o_.plan, entries_);
    } catch (const InputError& e) {
      std::cerr << "stx experiment atlas: figures not drawn: " << e.what() << "\n";
    }
  }

  int stop(int sig) {
    std::cerr << fmt::format("stx experiment atlas: stopped by signal {}; rerun the same command to continue\n", sig);
    settle_skips();
    draw();
    write();
    return 128 + sig;
  }

  const AtlasOptions& o_;
  double unigram_ = 0;  // H of the outcome rules (outcome_entropy_bits)
  std::string command_;
  std::vector<Entry> entries_;
  std::vector<std::string> figures_;
};

}  // namespace

int run_atlas(const AtlasOptions& o) { return Runner(o).run(); }

}  // namespace stx::atlas
