// stx/train/train_state.h — the trainer's state beside the weights and the optimizer: what a
// checkpoint's "stx.train" metadata holds (train/checkpoint.h) and what resume and rollback
// restore, in one struct with one JSON form.
#pragma once
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>

#include "stx/data/batcher.h"

namespace stx {

// Sums since the last log line (checkpointed, so a resumed log equals an uninterrupted one).
struct LogWindow {
  double loss = 0, nll = 0;
  int64_t tokens = 0, sentences = 0, updates = 0;
};

struct TrainState {
  int64_t step = 0;      // accepted updates
  BatchPosition data;    // the next batch of the training stream
  nlohmann::json guard;  // DivergenceGuard::state(): the loss window
  LogWindow window;
  double lr_scale = 1.0;         // on_divergence rollback: the product of rollback_lr_factor so far
  double best_valid = INFINITY;  // lowest validation loss so far
  int64_t skips_in_row = 0;      // on_divergence skip: consecutive skipped updates
  int64_t rollbacks = 0;         // on_divergence rollback: rollbacks so far
  int world_size = 1;            // processes of the job that wrote it

  nlohmann::json to_json() const;
  // InputError naming `what` and the field when one is missing or of the wrong type. Fields
  // newer than a checkpoint (skips_in_row, rollbacks, world_size) default.
  static TrainState from_json(const nlohmann::json& j, const std::string& what);

  // Rollback: the trajectory (step, data position, guard window, log window) from `saved`;
  // the policy's counters (lr_scale, rollbacks, skips, best validation loss) stay.
  void rewind_to(const TrainState& saved);
};

// When an update is followed by a log line with diagnostics, a validation and a checkpoint.
struct Cadence {
  int64_t log_every = 10, eval_every = 200, checkpoint_every = 200, max_steps = 1000;
  bool logs(int64_t step) const { return step % log_every == 0; }
  bool validates(int64_t step) const { return step % eval_every == 0 || step == max_steps; }
  bool saves(int64_t step) const { return step % checkpoint_every == 0 || step == max_steps; }
};

}  // namespace stx
