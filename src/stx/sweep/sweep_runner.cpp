// stx/sweep/sweep_runner.cpp — see sweep_runner.h.
#include "stx/sweep/sweep_runner.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "stx/core/atomic_file.h"
#include "stx/core/error.h"
#include "stx/sweep/run_status.h"
#include "stx/sweep/sweep_figures.h"
#include "stx/sweep/sweep_report.h"
#include "stx/sweep/train_child.h"
#include "stx/train/signals.h"

namespace stx::sweep {

namespace fs = std::filesystem;

namespace {

// DIR must be new, empty, or a sweep of the same config and steps; then it holds this plan.
void prepare_out(const SweepOptions& o) {
  const fs::path dir(o.out), plan_file = dir / "sweep_plan.json";
  std::error_code ec;
  if (fs::exists(dir) && !fs::is_directory(dir)) throw InputError("--out " + o.out + " exists and is not a directory");
  if (fs::exists(plan_file)) {
    nlohmann::json stored;
    try {
      std::ifstream(plan_file) >> stored;
    } catch (const std::exception&) {
      throw InputError(plan_file.string() + " is not valid JSON; is --out " + o.out + " a sweep directory?");
    }
    // A sweep none of whose runs got as far as a checkpoint (e.g. stopped by a bad --set) may be
    // redone with another setup.
    bool trained = false;
    for (auto& e : fs::directory_iterator(dir, ec))
      trained |= e.is_directory() && fs::exists(e.path() / "checkpoint_last.safetensors");
    const auto why = plan_mismatch(stored, o.plan);
    if (!why.empty() && trained)
      throw InputError("--out " + o.out + " holds a sweep with a different setup: " + why +
                       "; rerun it with the same --config/--set/--steps or choose another --out");
  } else if (fs::exists(dir) && !fs::is_empty(dir, ec)) {
    throw InputError("--out " + o.out + " exists and is not a sweep directory (no sweep_plan.json); choose a new or empty directory");
  }
  fs::create_directories(dir, ec);
  if (ec) throw InputError("cannot create --out " + o.out + ": " + ec.message());
  write_atomically(plan_file.string(), [&](const std::string& tmp) { std::ofstream(tmp) << plan_json(o.plan).dump(2) << "\n"; });
}

std::string result_text(const RunResult& r, bool translation) {
  const auto wall = r.seconds > 0 ? "  " + duration_text(r.seconds) : "";
  switch (r.outcome) {
    case Outcome::Converged:
    case Outcome::Stalled: {
      std::string s = to_string(r.outcome) + fmt::format("  {} steps", r.step);
      if (r.first_loss) s += fmt::format("  train loss {:.3f} → {:.3f}", *r.first_loss, *r.end_loss);
      if (r.valid_loss) s += fmt::format("  valid loss {:.4f}", *r.valid_loss);
      if (r.valid_nll) s += fmt::format(" (ppl {:.4g})", std::exp(*r.valid_nll));
      if (translation && r.valid_bleu) s += fmt::format("  BLEU {:.2f}", *r.valid_bleu);
      return s + wall;
    }
    case Outcome::Diverged: return fmt::format("diverged at step {}: {}", r.step, r.cause) + wall;
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
    prepare_out(o_);
    install_stop_handlers();
    const auto& p = o_.plan;
    for (auto& s : p.schemes)
      for (auto d : p.depths) runs_.push_back(read_run(run_dir(s, d), s, d, p.steps));
    std::vector<size_t> order;  // by depth, then scheme
    for (size_t di = 0; di < p.depths.size(); ++di)
      for (size_t si = 0; si < p.schemes.size(); ++si) order.push_back(si * p.depths.size() + di);
    figures_ = existing_figures(o_.out, p);
    for (size_t i = 0; i < order.size(); ++i) {
      auto& r = runs_[order[i]];
      const auto tag = fmt::format("[{}/{}] {}", i + 1, order.size(), r.name);
      if (r.ended()) {
        std::cout << tag << ": " << result_text(r, mt()) << " (done before)" << std::endl;
        continue;
      }
      if (int sig = stop_signal()) return stop(sig);
      r = run_one(r, tag);
            std::cout << tag << ": " << result_text(r, mt()) << std::endl;
      if (int sig = stop_signal()) return stop(sig);
      report();
    }
    figures_ = draw_figures(o_.out, p, runs_, o_.early_steps);
    report();
    int counts[6] = {};
    for (auto& r : runs_) ++counts[static_cast<int>(r.outcome)];
    std::cout << fmt::format("sweep: {} converged, {} stalled, {} diverged{}; report in {}", counts[int(Outcome::Converged)],
                             counts[int(Outcome::Stalled)], counts[int(Outcome::Diverged)],
                             counts[int(Outcome::Failed)] ? fmt::format(", {} failed (rerun to retry)", counts[int(Outcome::Failed)]) : "",
                             (fs::path(o_.out) / "sweep.md").string())
              << std::endl;
    return counts[int(Outcome::Failed)] ? 1 : 0;
  }

 private:
  bool mt() const { return o_.plan.base.data.task == "translation"; }
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

  RunResult run_one(const RunResult& before, const std::string& tag) {
    TrainChild c;
    c.exe = o_.exe, c.dir = run_dir(before.scheme, before.depth), c.tag = tag, c.steps = o_.plan.steps, c.quiet = o_.quiet;
    c.fresh_args = {"--config", o_.plan.config_path};
    for (auto& s : o_.plan.overrides) c.fresh_args.insert(c.fresh_args.end(), {"--set", s});
    for (auto& s : run_overrides(o_.plan, before.scheme, before.depth)) c.fresh_args.insert(c.fresh_args.end(), {"--set", s});
    return run_train_child(c, before);
  }

  const SweepOptions& o_;
  std::vector<RunResult> runs_;
  std::vector<std::string> figures_;
};

}  // namespace

int run_sweep(const SweepOptions& o) { return Runner(o).run(); }

}  // namespace stx::sweep
