// stx/train/trainer.h — `stx train`: the training loop on a real corpus with the papers'
// stability diagnostics logged as it trains (docs/training.md, docs/metrics.md).
//
// The run directory's files are listed in core/run_dir.h; every file is written atomically, and
// the checkpoint before the last is kept as checkpoint_prev.safetensors.
// Per update (Vaswani et al. 2017; fairseq semantics):
//   loss = Σ_batches Σ_t label-smoothed loss / Σ target tokens  over train.update_freq batches
//   clip ‖g‖₂ to train.clip_norm, optimizer step with lr = schedule(step)·lr_scale
// Divergence (non-finite loss/gradient, or a loss z-score spike) → train.on_divergence.
// Data parallel (docs/distributed.md): with `world` set, every rank reads the same batch stream
// and takes batches rank, rank+N, … of each update's N·update_freq; gradients are summed by a
// bucketed all-reduce overlapped with backward (parallel/grad_sync.h), losses and the stop flag
// all-reduced, so every rank takes the same decisions; rank 0 alone validates, logs and writes.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "stx/config/config.h"
#include "stx/parallel/world.h"

namespace stx {

struct TrainOptions {
  Config config;             // resolved and validated (model.vocab_size is replaced by the tokenizer's)
  std::string run_dir;       // created if absent
  bool resume = false;       // continue from run_dir/checkpoint_last.safetensors
  bool resume_prev = false;  // with resume: from checkpoint_prev (the last is kept as checkpoint_last.corrupt)
  bool quiet = false;        // no progress line / log lines on stderr
  std::optional<parallel::Env> world;  // a worker of a data-parallel job (torchrun's variables)
  // Stop after this many updates with the schedule of train.max_steps unchanged (stx doctor's
  // probe: the first K steps of the real run); the outcome is Finished, no final checkpoint.
  std::optional<int64_t> stop_after;
  // Called with every training line before it is written (rank 0): may add keys (train.doctor).
  std::function<void(nlohmann::json&)> on_log;
};

// Result of a run, for the CLI's exit code.
struct TrainOutcome {
  enum class Kind { Finished, Interrupted, Diverged } kind = Kind::Finished;
  int64_t step = 0;
  std::string message;  // one line
  int signal = 0;       // Interrupted: the signal
};

// Trains; throws InputError on bad input (corpus, config, run directory, checkpoint).
TrainOutcome train(const TrainOptions& o);

}  // namespace stx
