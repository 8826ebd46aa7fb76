// stx experiment — measured reproductions of a paper's experiment as a grid of `stx train` runs
// with an automatic reading and a report (src/stx/collapse/). One experiment so far:
//   entropy-collapse   Zhai et al. (ICML 2023): attention-entropy collapse vs divergence, and the
//                      learning-rate range of Post-LN/Pre-LN vs σReparam (with/without LayerNorm,
//                      Adam/SGD), all without warm-up (docs/sigma-reparam.md).
// Exit: 0 every run ended; 1 a child crashed or was killed (rerun to retry); 2 bad input;
// 128+signal when stopped (rerun the same command to continue).
#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "command.h"
#include "stx/collapse/collapse_runner.h"
#include "stx/config/config_io.h"
#include "stx/core/error.h"

namespace stx::cli {

void register_experiment(Registry& reg) {
  struct Opts {
    ConfigOptions cfg;
    std::string name, out, arms, multipliers;
    int64_t steps = -1;  // -1: not given
    double sgd_lr = 0.01, threshold = 0.1, spike_nats = 1.0;
    bool quick = false, quiet = false;
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
  sub->add_option("name", o->name, "the experiment: entropy-collapse")
      ->required()
      ->check(CLI::IsMember({"entropy-collapse"}));
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
  reg.add(sub, [o, all] {
    collapse::ExperimentOptions e;
    if (o->steps == 0 || o->steps < -1)
      throw InputError(fmt::format("--steps {}: must be a positive number of updates", o->steps));
    const int64_t steps =
        o->steps > 0 ? o->steps : (o->quick ? 60 : resolve_config(o->cfg.config, o->cfg.overrides).train.max_steps);
    const auto mult = !o->multipliers.empty() ? o->multipliers : (o->quick ? "1,8,64" : "1,4,16,64");
    e.plan =
        collapse::make_plan(o->cfg.config, o->cfg.overrides, collapse::parse_arms(o->arms.empty() ? all : o->arms),
                            collapse::parse_multipliers(mult), steps, o->sgd_lr, o->threshold, o->spike_nats, o->quick);
    std::error_code ec;
    e.exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
    if (ec) throw InputError("cannot find the stx binary (/proc/self/exe): " + ec.message());
    e.out = o->out, e.command = command_line(), e.quiet = o->quiet;
    return collapse::run_entropy_collapse(e);
  });
}

}  // namespace stx::cli
