// stx experiment — measured reproductions of a paper's experiment as a grid of `stx train` runs
// with an automatic reading and a report:
//   entropy-collapse   Zhai et al. (ICML 2023): attention-entropy collapse vs divergence, and the
//                      learning-rate range of Post-LN/Pre-LN vs σReparam (with/without LayerNorm,
//                      Adam/SGD), all without warm-up (docs/sigma-reparam.md; src/stx/collapse/).
//   atlas              every stabilizer × depth × learning rate on a byte-level LM: which trains,
//                      which fails first and how (docs/atlas.md; src/stx/atlas/).
// Exit: 0 every run ended; 1 a child crashed or was killed (rerun to retry); 2 bad input;
// 128+signal when stopped (rerun the same command to continue).
#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "command.h"
#include "stx/atlas/atlas_runner.h"
#include "stx/collapse/collapse_runner.h"
#include "stx/config/config_io.h"
#include "stx/config/schemes.h"
#include "stx/core/error.h"
#include "stx/core/user_path.h"
#include "stx/sweep/sweep_plan.h"

namespace stx::cli {

void register_experiment(Registry& reg) {
  struct Opts {
    ConfigOptions cfg;
    std::string name, out, arms, multipliers;
    int64_t steps = -1;  // -1: not given
    double sgd_lr = 0.01, threshold = 0.1, spike_nats = 1.0;
    bool quick = false, quiet = false;
    // atlas
    std::string schemes, depths, lrs;
    int64_t seeds = -1, warmup = -1, neighbours = 1, max_depth = 0;
    double nowarm_lr = -1;
    int jobs = 2;
    bool report_only = false;
  };
  auto o = std::make_shared<Opts>();
  std::string all;
  for (auto& a : collapse::all_arms()) all += (all.empty() ? "" : ",") + a.name;
  auto* sub = reg.app.add_subcommand(
      "experiment",
      "run a paper's experiment as a grid of `stx train` runs (resumable) and write DIR/report.md with figures; "
      "entropy-collapse: attention-entropy collapse vs divergence and the learning-rate range of Post-LN/Pre-LN vs "
      "σReparam "
      "(Zhai et al. 2023), no warm-up");
  sub->add_option("name", o->name, "the experiment: entropy-collapse | atlas")
      ->required()
      ->check(CLI::IsMember({"entropy-collapse", "atlas"}));
  o->cfg.add_to(sub, /*config_required=*/true);
  sub->add_option("--out", o->out, "experiment directory: one run directory per cell, report.md, report.json, figures/")
      ->required();
  sub->add_flag("--quick", o->quick, "a small grid in minutes: 60 updates per run, multipliers 1,8,64 (unless given)");
  sub->add_option("--steps", o->steps, "updates per run (default: the config's train.max_steps; quick: 60)");
  sub->add_option("--arms", o->arms, "comma-separated configurations (default: all): " + all);
  sub->add_option(
      "--multipliers", o->multipliers,
      "learning-rate multipliers, increasing (default 1,4,16,64; quick 1,8,64); an arm stops climbing at its "
      "first divergence");
  sub->add_option("--sgd-lr", o->sgd_lr, "base learning rate of the SGD arms (Adam arms: train.lr)")
      ->capture_default_str();
  sub->add_option("--collapse-threshold", o->threshold, "entropy collapse: lowest layer entropy below this many nats")
      ->capture_default_str();
  sub->add_option("--spike-nats", o->spike_nats, "loss spike: a train loss this far above the lowest before it")
      ->capture_default_str();
  sub->add_flag("--quiet", o->quiet, "no progress line on stderr (result lines still go to stdout)");
  sub->add_option("--schemes", o->schemes,
                  "atlas: comma-separated rows of the scheme table (default: all; quick: post,pre,deepnorm)");
  sub->add_option("--depths", o->depths, "atlas: depths (default 6,24,96; quick 2,8)");
  sub->add_option("--lrs", o->lrs,
                  "atlas: learning rates, increasing (default 7 over 1e-4 … 1e-1; quick 1e-3,3e-3,1e-2)");
  sub->add_option("--seeds", o->seeds,
                  "atlas: seeds per cell: seed 0 at every planned rate; the others at every rate of the shallowest "
                  "depth and deeper at seed 0's best rate ± --neighbours (default 2; quick 1)");
  sub->add_option("--warmup", o->warmup, "atlas: warm-up steps (default: the config's train.warmup_steps)");
  sub->add_option("--nowarm-lr", o->nowarm_lr,
                  "atlas: the no-warm-up column's rate (default: the config's train.lr; 0: no such column)");
  sub->add_option("--neighbours", o->neighbours,
                  "atlas: from the third depth on, the rates within this many grid points of the best below")
      ->capture_default_str();
  sub->add_option("--jobs", o->jobs, "atlas: runs at once, one thread each")->capture_default_str();
  sub->add_option("--max-depth", o->max_depth,
                  "atlas: start no run deeper than this now; they stay in the plan for a later invocation (0: all)")
      ->capture_default_str();
  sub->add_flag("--report-only", o->report_only,
                "atlas: rewrite atlas.md, atlas.json and the figures from the runs that ended; start nothing");
  reg.add(sub, [o, all, sub] {
    // An option of the other experiment is a mistake, not something to ignore.
    const std::vector<std::string> atlas_only{"--schemes",   "--depths",     "--lrs",  "--seeds",       "--warmup",
                                              "--nowarm-lr", "--neighbours", "--jobs", "--report-only", "--max-depth"};
    const std::vector<std::string> collapse_only{"--arms", "--multipliers", "--sgd-lr", "--collapse-threshold",
                                                 "--spike-nats"};
    for (auto& opt : o->name == "atlas" ? collapse_only : atlas_only)
      if (sub->count(opt))
        throw InputError(opt + " is an option of " + (o->name == "atlas" ? "entropy-collapse" : "atlas") + ", not of " +
                         o->name);
    require_directory_or_missing(o->out, "--out");
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
    if (ec) throw InputError("cannot find the stx binary (/proc/self/exe): " + ec.message());
    if (o->name == "atlas") {
      if (o->jobs < 1) throw InputError(fmt::format("--jobs {}: must be at least 1", o->jobs));
      if (o->max_depth < 0)
        throw InputError(
            fmt::format("--max-depth {}: must be a number of layers ≥ 1, or 0 for every depth", o->max_depth));
      const auto base = resolve_config(o->cfg.config, o->cfg.overrides);
      atlas::AtlasOptions a;
      const int64_t steps = o->steps > 0 ? o->steps : (o->quick ? 60 : base.train.max_steps);
      if (o->steps == 0 || o->steps < -1)
        throw InputError(fmt::format("--steps {}: must be a positive number of updates", o->steps));
      const auto schemes = !o->schemes.empty() ? sweep::parse_schemes(o->schemes)
                           : o->quick          ? std::vector<std::string>{"post", "pre", "deepnorm"}
                                               : sweep::parse_schemes(scheme_names_text(kUseSweep, ","));
      const auto depths = sweep::parse_depths(!o->depths.empty() ? o->depths : o->quick ? "2,8" : "6,24,96");
      const auto lrs = atlas::parse_rates(!o->lrs.empty() ? o->lrs
                                          : o->quick      ? "1e-3,3e-3,1e-2"
                                                          : "1e-4,3e-4,1e-3,3e-3,1e-2,3e-2,1e-1");
      const int64_t warmup = o->warmup >= 0 ? o->warmup : std::min(base.train.warmup_steps, steps / 2);
      const double nowarm = o->nowarm_lr >= 0 ? o->nowarm_lr : base.train.lr;
      a.plan = atlas::make_plan(o->cfg.config, o->cfg.overrides, schemes, depths, lrs,
                                o->seeds > 0 ? o->seeds : (o->quick ? 1 : 2), steps, warmup, nowarm, o->neighbours,
                                o->quick);
      a.exe = exe, a.out = o->out, a.command = command_line(), a.quiet = o->quiet, a.jobs = o->jobs;
      a.report_only = o->report_only, a.max_depth = o->max_depth;
      return atlas::run_atlas(a);
    }
    collapse::ExperimentOptions e;
    if (o->steps == 0 || o->steps < -1)
      throw InputError(fmt::format("--steps {}: must be a positive number of updates", o->steps));
    const int64_t steps =
        o->steps > 0 ? o->steps : (o->quick ? 60 : resolve_config(o->cfg.config, o->cfg.overrides).train.max_steps);
    const auto mult = !o->multipliers.empty() ? o->multipliers : (o->quick ? "1,8,64" : "1,4,16,64");
    e.plan =
        collapse::make_plan(o->cfg.config, o->cfg.overrides, collapse::parse_arms(o->arms.empty() ? all : o->arms),
                            collapse::parse_multipliers(mult), steps, o->sgd_lr, o->threshold, o->spike_nats, o->quick);
    e.exe = exe;
    e.out = o->out, e.command = command_line(), e.quiet = o->quiet;
    return collapse::run_entropy_collapse(e);
  });
}

}  // namespace stx::cli
