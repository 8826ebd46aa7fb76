// stx/collapse/collapse_runner.cpp — see collapse_runner.h.
#include "stx/collapse/collapse_runner.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "stx/collapse/collapse_figures.h"
#include "stx/collapse/collapse_report.h"
#include "stx/core/atomic_file.h"
#include "stx/core/error.h"
#include "stx/core/signals.h"
#include "stx/grid/grid_dir.h"
#include "stx/grid/grid_runner.h"
#include "stx/grid/train_child.h"
#include "stx/report/metrics_schema.h"

namespace stx::collapse {

namespace fs = std::filesystem;
using grid::Outcome;

namespace {

std::shared_ptr<DirLock> prepare_out(const ExperimentOptions& o) {
  return grid::prepare_grid_dir({o.out, "experiment_plan.json", "an experiment", "--config/--set/--steps/--sgd-lr"},
                                plan_json(o.plan),
                                [&](const nlohmann::json& stored) { return plan_mismatch(stored, o.plan); });
}

std::vector<metrics::Record> records_of(const std::string& dir) {
  try {
    return metrics::run_records(dir);
  } catch (const InputError&) {
    return {};
  }
}

std::string result_text(const Entry& e) {
  const auto& r = e.run;
  const auto& g = e.reading;
  std::string extra =
      g.min_entropy ? fmt::format("  lowest layer entropy {:.3f} @ {}", *g.min_entropy, g.min_entropy_step) : "";
  extra += g.collapse_step ? fmt::format("  collapsed @ {}", *g.collapse_step) : "";
  return grid::result_line(r, r.valid_loss ? fmt::format("  valid loss {:.4f}", *r.valid_loss) : "", extra, e.skipped);
}

class Runner {
 public:
  explicit Runner(const ExperimentOptions& o) : o_(o) {}

  int run() {
    const auto lock = prepare_out(o_);
    install_stop_handlers();
    const auto& p = o_.plan;
    for (auto& a : p.arms)
      for (double m : p.multipliers) {
        Entry e{a, m, run_lr(p, a, m)};
        e.run = grid::read_run(dir_of(e), a.name, 0, p.steps);
        e.run.name = run_name(a, m);
        reread(e);
        entries_.push_back(e);
      }
    figures_ = existing_figures(o_.out, p, entries_);
    const size_t total = entries_.size();
    auto tag = [&](size_t i) {
      return fmt::format("[{}/{}] {} (lr {:.3g})", i + 1, total, entries_[i].run.name, entries_[i].lr);
    };
    grid::RunnerHooks h;
    h.skip = [&](size_t i) -> std::string {  // one run at a time: the ladder reads the runs below
      auto& e = entries_[i];
      if (auto why = lower_blocks(i); !why.empty() && !e.run.ended()) {
        e.skipped = why;
        std::cout << tag(i) << ": not run: " << why << std::endl;
        write_report(o_.out, o_.command, p, entries_, figures_);
        return why;
      }
      if (e.run.ended()) {
        std::cout << tag(i) << ": " << result_text(e) << " (done before)" << std::endl;
        return "done before";
      }
      return "";
    };
    h.run = [&](size_t i) {
      auto& e = entries_[i];
      grid::TrainChild c;
      c.exe = o_.exe, c.dir = dir_of(e), c.tag = tag(i), c.steps = p.steps, c.quiet = o_.quiet,
      c.who = "stx experiment";
      c.fresh_args = {"--config", p.config_path};
      for (auto& s : p.overrides) c.fresh_args.insert(c.fresh_args.end(), {"--set", s});
      for (auto& s : run_overrides(p, e.arm, e.multiplier)) c.fresh_args.insert(c.fresh_args.end(), {"--set", s});
      e.run = grid::run_train_child(c, e.run);
    };
    h.ended = [&](size_t i) {
      reread(entries_[i]);
      std::cout << tag(i) << ": " << result_text(entries_[i]) << std::endl;
      if (!stop_signal()) write_report(o_.out, o_.command, p, entries_, figures_);
    };
    if (int sig = grid::run_grid(total, 1, h)) return stop(sig);
    draw();
    write_report(o_.out, o_.command, p, entries_, figures_);
    int failed = 0, collapsed = 0, ended = 0;
    std::vector<Outcome> outcomes;
    for (auto& e : entries_) {
      failed += e.run.outcome == Outcome::Failed ||
                (!e.skipped.empty() && !e.run.ended() && e.skipped.find("rerun") != std::string::npos);
      outcomes.push_back(e.run.outcome);
      ended += e.run.ended();
      collapsed += e.run.ended() && e.reading.collapse_step.has_value();
    }
    std::cout << fmt::format("entropy-collapse: {} runs ended ({}; {} with entropy collapse){}; report in {}", ended,
                             grid::label_counts(outcomes), collapsed,
                             failed ? fmt::format(", {} failed (rerun to retry)", failed) : "",
                             (fs::path(o_.out) / "report.md").string())
              << std::endl;
    return failed ? 1 : 0;
  }

 private:
  std::string dir_of(const Entry& e) const { return (fs::path(o_.out) / run_name(e.arm, e.multiplier)).string(); }

  void reread(Entry& e) {
    e.reading = read_collapse(records_of(dir_of(e)), e.run, o_.plan.threshold, o_.plan.spike_nats);
  }

  // Why entry i is not run: a lower multiplier of the same arm diverges (its label, grid/outcome.h:
  // the ladder ends there), or has not ended (it failed: a rerun retries it first, then decides).
  std::string lower_blocks(size_t i) const {
    for (size_t k = 0; k < i; ++k) {
      const auto& lo = entries_[k];
      if (lo.arm.name != entries_[i].arm.name) continue;
      if (lo.run.outcome == Outcome::Diverges)
        return fmt::format("lr {:.3g} (×{:g}) diverged ({})", lo.lr, lo.multiplier,
                           lo.run.guard_stop ? "the guard stopped it" : "a loss spike it did not come back from");
      if (!lo.run.ended()) return fmt::format("lr {:.3g} (×{:g}) has not ended; rerun to retry", lo.lr, lo.multiplier);
    }
    return "";
  }

  // The figures; a failure to draw (no gnuplot) is reported, not fatal: the runs are done.
  void draw() {
    try {
      figures_ = draw_figures(o_.out, o_.plan, entries_);
    } catch (const InputError& e) {
      std::cerr << "stx experiment: figures not drawn: " << e.what() << "\n";
    }
  }

  int stop(int sig) {
    std::cerr << fmt::format("stx experiment: stopped by signal {}; rerun the same command to continue\n", sig);
    draw();
    write_report(o_.out, o_.command, o_.plan, entries_, figures_);
    return 128 + sig;
  }

  const ExperimentOptions& o_;
  std::vector<Entry> entries_;
  std::vector<std::string> figures_;
};

}  // namespace

int run_entropy_collapse(const ExperimentOptions& o) { return Runner(o).run(); }

}  // namespace stx::collapse
