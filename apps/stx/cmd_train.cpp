// stx train — train a translation model or a language model on a corpus (docs/training.md).
// Exit: 0 finished; 1 diverged (train.on_divergence stop, or skips/rollbacks exhausted);
// 2 bad input (another process writing --out included); 4 a worker of a data-parallel job died or
// hung (docs/distributed.md); 5 the disk filled or failed (the log and last checkpoint stay consistent);
// 128+signal after a clean stop on SIGINT/SIGTERM (checkpoint written).
// Data parallel: --nproc N starts N local workers (parallel/launcher.h); a process started with
// torchrun's variables (WORLD_SIZE, RANK, MASTER_ADDR, MASTER_PORT) is one worker of a job.
#include <filesystem>
#include <iostream>
#include <memory>

#include "command.h"
#include "stx/config/config_io.h"
#include "stx/core/dir_lock.h"
#include "stx/core/error.h"
#include "stx/core/run_dir.h"
#include "stx/core/runtime.h"
#include "stx/core/user_path.h"
#include "stx/doctor/live_doctor.h"
#include "stx/parallel/launcher.h"
#include "stx/report/metrics_schema.h"
#include "stx/train/trainer.h"

namespace stx::cli {

namespace {

// --out is a directory or nothing yet, and the run files in it are regular files or absent: a
// symbolic link loop, a FIFO or a directory in their place is refused before anything opens them.
void check_run_paths(const std::string& out) {
  require_directory_or_missing(out, "--out");
  if (inspect_path(out).kind != PathKind::Directory) return;
  const RunDir dir(out);
  for (const char* f : {RunDir::kLast, RunDir::kPrev, RunDir::kBest, RunDir::kCorrupt, RunDir::kConfig,
                        RunDir::kMetrics, RunDir::kProbe, RunDir::kHosts})
    regular_file_if_present(dir.file(f), "run file");
}

}  // namespace

void register_train(Registry& reg) {
  struct Opts {
    ConfigOptions cfg;
    std::string out;
    bool resume = false, resume_prev = false, quiet = false;
    int nproc = 1;
  };
  auto o = std::make_shared<Opts>();
  auto* sub =
      reg.app.add_subcommand("train", "train on a corpus, logging the stability diagnostics to RUN/metrics.jsonl");
  o->cfg.add_to(sub, /*config_required=*/false);
  sub->get_option("--config")
      ->description(
          "YAML config file (configs/*.yaml); needed for a new run: `--config builtin` trains the built-in defaults, "
          "--resume the run's own config.yaml");
  sub->add_option("--out", o->out, "run directory (config, checkpoints, metrics.jsonl, SentencePiece models)")
      ->required();
  sub->add_flag("--resume", o->resume, "continue the run in --out from its last checkpoint (exactly)");
  sub->add_flag(
      "--resume-prev", o->resume_prev,
      "continue from the checkpoint before the last (checkpoint_prev), when the last is corrupt; the last is kept "
      "as checkpoint_last.corrupt.safetensors");
  sub->add_flag("--quiet", o->quiet, "no progress output");
  sub->add_option("--nproc", o->nproc,
                  "data parallel: start N local worker processes (c10d, Gloo), N·update_freq batches per update")
      ->check(CLI::Range(1, 256));
  reg.add(sub, [o] {
    TrainOptions t;
    if (o->resume_prev) o->resume = true;
    check_run_paths(o->out);
    if (!o->resume && o->cfg.config.empty())
      throw InputError(
          "a new run needs --config FILE, e.g. --config configs/demo.yaml (translation) or configs/atlas.yaml "
          "(language model); --config builtin trains the built-in defaults; --resume continues the run in --out");
    if (o->resume && o->cfg.config.empty()) {
      // Resume with the run's own config (plus any --set overrides).
      t.config = resolve_config(o->out + "/config.yaml", o->cfg.overrides);
    } else {
      t.config = resolve_config(o->cfg.config, o->cfg.overrides);
    }
    t.run_dir = o->out, t.resume = o->resume, t.resume_prev = o->resume_prev, t.quiet = o->quiet;
    use_default_threads(t.config.model.d_model,
                        t.config.train.max_tokens);  // unless STX_THREADS (--nproc, sweep --jobs, the user)
    t.world = parallel::env_from_environment();
    if (t.world && o->nproc > 1)
      throw InputError("--nproc starts local workers, but this process is already worker " +
                       std::to_string(t.world->rank) + " of a job of " + std::to_string(t.world->world_size) +
                       " (WORLD_SIZE is set); drop one of them");
    if (const auto w = training_warning(t.config); !w.empty() && o->nproc == 1 && (!t.world || t.world->rank == 0))
      std::cerr << "stx: warning: " << w << "\n";
    if (o->nproc > 1) {
      DirLock::check_free(o->out, "run directory");  // what rank 0 would refuse, before starting any worker
      RunDir(o->out).check_start(o->resume, o->resume_prev);
      parallel::LaunchOptions l;
      l.exe = "/proc/self/exe", l.nproc = o->nproc, l.run_dir = o->out;
      l.grace = std::chrono::seconds(10);  // after a failure; safe: checkpoints are written atomically
      l.args = {"train", "--out", o->out};
      if (!o->cfg.config.empty()) l.args.insert(l.args.end(), {"--config", o->cfg.config});
      for (auto& kv : o->cfg.overrides) l.args.insert(l.args.end(), {"--set", kv});
      if (o->resume) l.args.push_back(o->resume_prev ? "--resume-prev" : "--resume");
      if (o->quiet) l.args.push_back("--quiet");
      return parallel::launch_local(l);
    }
    if (t.config.train.doctor && (!t.world || t.world->rank == 0)) {  // rank 0 writes the log
      auto d =
          std::make_shared<doctor::LiveDoctor>(doctor::load_model(doctor::default_model_path()), t.config, t.quiet);
      if (t.resume) d->preload(metrics::run_records(t.run_dir));
      t.on_log = [d](nlohmann::json& line) { (*d)(line); };
    }
    auto r = train(t);
    const bool speak = !t.world || t.world->rank == 0;  // every rank ends alike; rank 0 says so
    switch (r.kind) {
      case TrainOutcome::Kind::Finished:
        if (speak) std::cout << r.message << "\n";
        return 0;
      case TrainOutcome::Kind::Interrupted:
        if (speak) std::cerr << r.message << "\n";
        return 128 + r.signal;
      case TrainOutcome::Kind::Diverged:
        if (speak) std::cerr << r.message << "\n";
        return 1;
    }
    return 1;
  });
}

}  // namespace stx::cli
