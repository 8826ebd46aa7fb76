// stx sweep — residual scheme × depth grid of `stx train` runs, resumable, with a DeepNet
// Table 1-style report (src/stx/sweep/: sweep_plan.h the grid, sweep_runner.h the runs; grid/:
// run_status.h / outcome.h each run's state and label; sweep_report.h / sweep_figures.h the
// outputs). Exit: 0 every run ended (whatever its label: trains, too slow, stalls, spiked and
// recovered, diverges); 1 a child crashed or was killed (rerun to retry); 2 bad input;
// 128+signal when stopped (rerun the same command to continue).
#include <filesystem>
#include <iostream>
#include <memory>

#include "command.h"
#include "stx/config/schemes.h"
#include "stx/core/error.h"
#include "stx/core/user_path.h"
#include "stx/sweep/sweep_runner.h"

namespace stx::cli {

void register_sweep(Registry& reg) {
  struct Opts {
    ConfigOptions cfg;
    std::string depths, schemes = scheme_names_text(kUseSweep, ","), out;
    int64_t steps = 0, early_steps = 0, jobs = 1;
    bool quiet = false, watch = false;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = reg.app.add_subcommand(
      "sweep",
      "train every residual scheme at every depth (one `stx train` per pair, resumable) and write DIR/sweep.md: a "
      "DeepNet "
      "Table 1-style table of final validation loss (BLEU for translation) or where each run diverged, and figures");
  o->cfg.add_to(sub, /*config_required=*/true);
  sub->add_option("--depths", o->depths,
                  "comma-separated layer counts, e.g. 6,18,50,100,200,1000 (encoder-decoder: L-L)")
      ->required();
  std::string rows;
  for (auto* r : schemes_used_by(kUseSweep)) rows += (rows.empty() ? "" : ", ") + r->name + " (" + r->title + ")";
  sub->add_option("--schemes", o->schemes, "comma-separated rows of the scheme table: " + rows)->capture_default_str();
  sub->add_option("--steps", o->steps, "updates per run (train.max_steps)")->required();
  sub->add_option("--out", o->out, "sweep directory: one run directory per pair, sweep.md, sweep.json, figures/")
      ->required();
  sub->add_option("--early-steps", o->early_steps,
                  "x range of the ΔF / gradient-norm figures (default: max(100, steps/10), at most steps)");
  sub->add_option("--jobs", o->jobs,
                  "runs at once, each with cores/jobs threads unless STX_THREADS is set (default 1)");
  sub->add_flag("--quiet", o->quiet, "no progress line on stderr (result lines still go to stdout)");
  sub->add_flag("--watch", o->watch,
                "a live table of the running runs (step, loss, gradient reach, largest attention logit, ‖ΔF‖) "
                "instead of one line per run; with --jobs ≥ the number of runs they train side by side");
  reg.add(sub, [o] {
    require_directory_or_missing(o->out, "--out");
    sweep::SweepOptions s;
    s.plan = sweep::make_plan(o->cfg.config, o->cfg.overrides, sweep::parse_schemes(o->schemes),
                              sweep::parse_depths(o->depths), o->steps);
    if (o->early_steps < 0)
      throw InputError("--early-steps " + std::to_string(o->early_steps) + ": must be ≥ 0 (0: automatic)");
    s.early_steps =
        o->early_steps > 0 ? o->early_steps : std::min<int64_t>(o->steps, std::max<int64_t>(100, (o->steps + 9) / 10));
    if (o->jobs < 1 || o->jobs > 64)
      throw InputError("--jobs " + std::to_string(o->jobs) + ": must be between 1 and 64");
    s.jobs = static_cast<int>(o->jobs);
    std::error_code ec;
    s.exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
    if (ec) throw InputError("cannot find the stx binary (/proc/self/exe): " + ec.message());
    s.out = o->out, s.command = command_line(), s.quiet = o->quiet, s.watch = o->watch;
    return sweep::run_sweep(s);
  });
}

}  // namespace stx::cli
