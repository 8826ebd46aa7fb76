// stx train — train a translation model or a language model on a corpus (docs/training.md).
// Exit: 0 finished; 1 diverged (train.on_divergence stop, or skips/rollbacks exhausted);
// 2 bad input; 128+signal after a clean stop on SIGINT/SIGTERM (checkpoint written).
#include <iostream>
#include <memory>

#include "command.h"
#include "stx/io/config_io.h"
#include "stx/train/trainer.h"

namespace stx::cli {

void register_train(Registry& reg) {
  struct Opts {
    ConfigOptions cfg;
    std::string out;
    bool resume = false, quiet = false;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = reg.app.add_subcommand("train", "train on a corpus, logging the stability diagnostics to RUN/metrics.jsonl");
  o->cfg.add_to(sub, /*config_required=*/false);
  sub->add_option("--out", o->out, "run directory (config, checkpoints, metrics.jsonl, SentencePiece models)")->required();
  sub->add_flag("--resume", o->resume, "continue the run in --out from its last checkpoint (exactly)");
  sub->add_flag("--quiet", o->quiet, "no progress output");
  reg.add(sub, [o] {
    TrainOptions t;
    if (o->resume && o->cfg.config.empty()) {
      // Resume with the run's own config (plus any --set overrides).
      t.config = resolve_config(o->out + "/config.yaml", o->cfg.overrides);
    } else {
      t.config = resolve_config(o->cfg.config, o->cfg.overrides);
    }
    t.run_dir = o->out, t.resume = o->resume, t.quiet = o->quiet;
    auto r = train(t);
    switch (r.kind) {
      case TrainOutcome::Kind::Finished: std::cout << r.message << "\n"; return 0;
      case TrainOutcome::Kind::Interrupted: std::cerr << r.message << "\n"; return 128 + r.signal;
      case TrainOutcome::Kind::Diverged: std::cerr << r.message << "\n"; return 1;
    }
    return 1;
  });
}

}  // namespace stx::cli
