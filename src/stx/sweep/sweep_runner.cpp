// stx/sweep/sweep_runner.cpp — see sweep_runner.h.
#include "stx/sweep/sweep_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "stx/core/atomic_file.h"
#include "stx/core/error.h"
#include "stx/core/runtime.h"
#include "stx/core/signals.h"
#include "stx/grid/grid_dir.h"
#include "stx/grid/grid_runner.h"
#include "stx/grid/live_table.h"
#include "stx/grid/run_status.h"
#include "stx/grid/train_child.h"
#include "stx/sweep/sweep_figures.h"
#include "stx/sweep/sweep_report.h"

namespace stx::sweep {

namespace fs = std::filesystem;

namespace {

std::shared_ptr<DirLock> prepare_out(const SweepOptions& o) {
  return grid::prepare_grid_dir({o.out, "sweep_plan.json", "a sweep", "--config/--set/--steps"}, plan_json(o.plan),
                                [&](const nlohmann::json& stored) { return plan_mismatch(stored, o.plan); });
}

// The loss in the report's unit: bits per byte for a byte-level run, else nats per token.
std::string loss_text(const RunResult& r, double nats) {
  return r.bytes ? fmt::format("{:.3f} bits/byte", nats / std::log(2.0)) : fmt::format("{:.4f}", nats);
}

std::string result_text(const RunResult& r, bool translation) {
  const auto wall = r.seconds > 0 ? "  " + duration_text(r.seconds) : "";
  if (r.ended() && r.guard_stop)
    return fmt::format("diverges: the guard stopped it at step {}: {}", r.step, r.cause) + wall;
  switch (r.outcome) {
    case Outcome::Trains:
    case Outcome::TooSlow:
    case Outcome::Stalls:
    case Outcome::SpikedAndRecovered:
    case Outcome::Diverges: {
      std::string s = to_string(r.outcome) + fmt::format("  {} steps", r.step);
      if (r.spike_step) s += fmt::format("  loss spike at step {}", *r.spike_step);
      if (r.first_loss) {
        s += r.bytes ? fmt::format("  train {:.3f} → {:.3f} bits/byte", *r.first_loss / std::log(2.0),
                                   *r.end_loss / std::log(2.0))
                     : fmt::format("  train loss {:.3f} → {:.3f}", *r.first_loss, *r.end_loss);
      }
      if (r.bytes && r.valid_nll) s += "  valid " + loss_text(r, *r.valid_nll);
      else if (r.valid_loss) s += fmt::format("  valid loss {:.4f}", *r.valid_loss);
      if (r.valid_nll) s += fmt::format(" (ppl {:.4g})", std::exp(*r.valid_nll));
      if (translation && r.valid_bleu) s += fmt::format("  BLEU {:.2f}", *r.valid_bleu);
      return s + wall;
    }
    case Outcome::Failed: return "failed (" + r.cause + "); rerun the sweep to retry" + wall;
    case Outcome::Interrupted: return fmt::format("stopped at step {}; rerun the sweep to continue", r.step) + wall;
    case Outcome::NotStarted: return "not started";
  }
  return "?";
}

class Runner {
 public:
  explicit Runner(const SweepOptions& o) : o_(o) {}

  int run() {
    const auto lock = prepare_out(o_);
    install_stop_handlers();
    const auto& p = o_.plan;
    for (auto& s : p.schemes)
      for (auto d : p.depths) runs_.push_back(grid::read_run(run_dir(s, d), s, d, p.steps));
    std::vector<size_t> order;  // by depth, then scheme
    for (size_t di = 0; di < p.depths.size(); ++di)
      for (size_t si = 0; si < p.schemes.size(); ++si) order.push_back(si * p.depths.size() + di);
    figures_ = existing_figures(o_.out, p);
    std::vector<Slot> pending;
    for (size_t i = 0; i < order.size(); ++i) {
      const auto& r = runs_[order[i]];
      const auto tag = fmt::format("[{}/{}] {}", i + 1, order.size(), r.name);
      if (r.ended()) std::cout << tag << ": " << result_text(r, mt()) << " (done before)" << std::endl;
      else pending.push_back({order[i], tag});
    }
    std::unique_ptr<grid::LiveTable> table;
    if (o_.watch && !pending.empty()) {
      std::vector<grid::LiveRow> rows;
      for (auto& sl : pending) {
        const auto& r = runs_[sl.run];
        rows.push_back({scheme_row(r.scheme).title + " " + depth_label(p.base, r.depth), run_dir(r.scheme, r.depth)});
      }
      table = std::make_unique<grid::LiveTable>(rows, p.steps, p.base.data.tokenizer == TokenizerKind::Bytes);
    }
    const int sig = run_all(pending);
    table.reset();  // the final table
    if (sig) return stop(sig);
    figures_ = draw_figures(o_.out, p, runs_, o_.early_steps);
    report();
    std::vector<Outcome> outcomes;
    for (auto& r : runs_) outcomes.push_back(r.outcome);
    const auto failed = std::count(outcomes.begin(), outcomes.end(), Outcome::Failed);
    std::cout << fmt::format("sweep: {}{}; report in {}", grid::label_counts(outcomes),
                             failed ? fmt::format(", {} failed (rerun to retry)", failed) : "",
                             (fs::path(o_.out) / "sweep.md").string())
              << std::endl;
    return failed ? 1 : 0;
  }

 private:
  bool mt() const { return o_.plan.base.data.task == Task::Translation; }
  std::string run_dir(const std::string& s, int64_t d) const { return (fs::path(o_.out) / run_name(s, d)).string(); }

  void report() { write_report(o_.out, {o_.command, &o_.plan, runs_, figures_}); }

  int stop(int sig) {
    std::cerr << fmt::format("stx sweep: stopped by signal {}; rerun the same command to continue\n", sig);
    try {
      figures_ = draw_figures(o_.out, o_.plan, runs_, o_.early_steps);
    } catch (const InputError& e) {
      std::cerr << "stx sweep: figures not drawn: " << e.what() << "\n";
    }
    report();
    return 128 + sig;
  }

  struct Slot {
    size_t run;       // index into runs_
    std::string tag;  // "[3/20] post-L18"
  };

  // Runs `pending` in order, o_.jobs children at a time (grid/grid_runner.h); runs_, stdout and
  // the report are updated under the runner's lock. Returns the stop signal (0: all ran).
  int run_all(const std::vector<Slot>& pending) {
    grid::RunnerHooks h;
    std::vector<RunResult> before(pending.size()), after(pending.size());
    h.skip = [&](size_t i) {
      before[i] = runs_[pending[i].run];
      return std::string();
    };
    h.started = [&](size_t i) {
      if (!o_.watch) std::cout << pending[i].tag << ": started" << std::endl;
    };
    h.run = [&](size_t i) { after[i] = run_one(before[i], pending[i].tag); };
    h.ended = [&](size_t i) {
      runs_[pending[i].run] = after[i];
      if (!o_.watch) std::cout << pending[i].tag << ": " << result_text(after[i], mt()) << std::endl;
      if (!stop_signal()) report();
    };
    return grid::run_grid(pending.size(), o_.jobs, h);
  }

  RunResult run_one(const RunResult& before, const std::string& tag) {
    grid::TrainChild c;
    c.exe = o_.exe, c.dir = run_dir(before.scheme, before.depth), c.tag = tag, c.steps = o_.plan.steps,
    c.quiet = o_.quiet || o_.watch;
    c.live = o_.jobs <= 1 && !o_.watch;
    if (o_.jobs > 1 && !std::getenv("STX_THREADS")) {  // the cores shared out, unless the user chose
      const int threads = std::max(1, physical_cores() / o_.jobs);
      c.env = {"STX_THREADS=" + std::to_string(threads)};
    }
    c.fresh_args = {"--config", o_.plan.config_path};
    for (auto& s : o_.plan.overrides) c.fresh_args.insert(c.fresh_args.end(), {"--set", s});
    for (auto& s : run_overrides(o_.plan, before.scheme, before.depth))
      c.fresh_args.insert(c.fresh_args.end(), {"--set", s});
    return grid::run_train_child(c, before);
  }

  const SweepOptions& o_;
  std::vector<RunResult> runs_;
  std::vector<std::string> figures_;
};

}  // namespace

int run_sweep(const SweepOptions& o) { return Runner(o).run(); }

}  // namespace stx::sweep
