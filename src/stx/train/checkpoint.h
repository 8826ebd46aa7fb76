// stx/train/checkpoint.h — a training checkpoint in one safetensors file, written atomically
// (temporary name, fsync, rename; core/atomic_file.h):
//   tensors   model.<name> (TransformerImpl::state()), the optimizer's state() (optim.*),
//             rng.torch (uint8: the default CPU generator's state; of rank 0 in a data-parallel
//             job), rng.rank<r> (rank r > 0's generator, so every rank resumes its own stream)
//   metadata  stx.format = "stx-checkpoint/1", stx.config (config_to_json), stx.train (the
//             trainer's JSON: step, data position, guard window, best valid loss, …)
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "stx/config/config.h"
#include "stx/core/run_dir.h"
#include "stx/model/transformer.h"
#include "stx/train/optimizer.h"

namespace stx {

inline constexpr const char* kCheckpointFormat = "stx-checkpoint/1";

// `rank_rngs`: the generator states of ranks 1..N−1 of a data-parallel job (empty otherwise).
void save_checkpoint(const std::string& path, TransformerImpl& model, const Optimizer& opt, const Config& cfg,
                     const nlohmann::json& train_state, const std::vector<torch::Tensor>& rank_rngs = {});

struct Checkpoint {
  Config config;
  nlohmann::json train_state;
  NamedTensors model;                    // names without the "model." prefix
  NamedTensors optimizer;                // optim.* as stored
  torch::Tensor rng;                     // uint8
  std::vector<torch::Tensor> rank_rngs;  // rng.rank1, rng.rank2, … (data-parallel runs)
};
// Reads and checks a checkpoint: not a safetensors file, a wrong or missing stx.format, bad
// JSON metadata or a missing rng.torch are InputErrors (one line naming the file and problem).
Checkpoint read_checkpoint(const std::string& path);

// The step a checkpoint's trainer state records (0 when it records none).
int64_t checkpoint_step(const Checkpoint& ck);

// The run's checkpoint_last, read and verified. When it is corrupt, the InputError (prefixed
// with `why`) says whether checkpoint_prev is intact, and at which step.
Checkpoint read_last_checkpoint(const RunDir& dir, const std::string& why = "");

// Restores model weights, optimizer state and the CPU generator (rank `rank`'s) from `ck`
// (shapes checked: InputError naming the tensor).
void restore_checkpoint(const Checkpoint& ck, TransformerImpl& model, Optimizer& opt, const std::string& what,
                        int rank = 0);

// "" when a run with config `now` may resume from a checkpoint written with `saved`; otherwise
// one line naming the first key that differs, e.g. "model.d_model is 256 in the checkpoint but
// 512 now". Every model.* and data.* key and the train keys that change the trajectory must
// match; train.max_steps, log_every, eval_every, checkpoint_every, valid_bleu_sentences and the
// divergence guard's keys (on_divergence, spike_window, spike_zscore, max_skips, max_rollbacks,
// rollback_lr_factor) and the data-parallel bucket_mb and dist_timeout_s may differ.
std::string resume_incompatibility(const Config& saved, const Config& now);

// Before a resume does any work: `cfg` takes the run's vocabulary (model.vocab_size, pad_id) from
// checkpoint `ck`; InputError when `world_size` processes differ from the ones that trained the
// run (the batches of an update and their order depend on it) or resume_incompatibility objects.
void adopt_resumed_config(const Checkpoint& ck, Config& cfg, int world_size, const RunDir& dir);

}  // namespace stx
