// stx/data/batcher.h — token-budget batching (fairseq's max_tokens): examples bucketed by
// length, batches of at most max_tokens tokens counting padding, the batch order shuffled every
// epoch with a generator seeded by (seed, epoch), so the position (epoch, index) determines the
// next batch exactly (resume).
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace stx {

// One tokenized example. Translation: src = x ids + [eos]; tgt = y ids (no bos/eos).
// LM: src empty; tgt = the segment's ids.
struct Example {
  std::vector<int32_t> src, tgt;
};

struct Batch {
  torch::Tensor src;      // [B, S] int64, padded with pad_id; undefined for LM batches
  torch::Tensor tgt_in;   // [B, T] int64: [bos] + tgt, padded with pad_id
  torch::Tensor tgt_out;  // [B, T] int64: tgt + [eos], padded with pad_id (ignored by the loss)
  int64_t sentences = 0;
  int64_t src_tokens = 0, tgt_tokens = 0;  // non-pad tokens (tgt: of tgt_out)
};

struct BatchPosition {
  int64_t epoch = 0;  // 0-based
  int64_t index = 0;  // next batch within the epoch's order
};

// How examples become batches.
struct BatcherOptions {
  int64_t max_tokens = 4096;  // a batch's cost B · max(S, T) never exceeds it
  int64_t max_len = 1024;     // tokens per side, bos/eos included
  int64_t pad_id = 0, bos_id = 1, eos_id = 2;
  uint64_t seed = 0;     // the per-epoch shuffle's seed
  bool shuffle = false;  // false: a fixed order (validation, evaluation)
};

class Batcher {
 public:
  // Examples with an empty tgt, or with more than max_len tokens on a side (after adding
  // bos/eos), are dropped and counted (dropped()). A batch's cost is B · max(S, T) tokens and
  // never exceeds max_tokens (an example alone over max_tokens is dropped too). Batches are
  // formed once, from examples sorted by (max(S, T), then input order); with shuffle=false the
  // order is fixed (validation, evaluation). InputError if no example survives.
  Batcher(std::vector<Example> examples, const BatcherOptions& o);

  Batch next();  // the batch at position(), then advances (a new epoch after the last batch)
  BatchPosition position() const;
  void seek(BatchPosition p);  // InputError if p.index is out of range
  int64_t batches_per_epoch() const;
  Batch batch(int64_t i) const;  // the i-th batch in unshuffled order (evaluation)
  int64_t dropped() const;
  int64_t examples() const;

 private:
  bool lm_ = false;  // every example has an empty src
  int64_t pad_ = 0, bos_ = 0, eos_ = 0;
  uint64_t seed_ = 0;
  bool shuffle_ = false;
  int64_t dropped_ = 0, examples_ = 0;
  // Surviving examples in sorted order: example k's tokens are src_[src_off_[k] .. src_off_[k+1]).
  std::vector<int32_t> src_, tgt_;
  std::vector<int64_t> src_off_{0}, tgt_off_{0};
  // Batch b holds sorted examples [first_[b], first_[b+1]) with padded widths width_s_[b], width_t_[b].
  std::vector<int64_t> first_{0}, width_s_, width_t_;
  int64_t epoch_ = 0, index_ = 0;
  std::vector<int64_t> order_;  // epoch_'s batch order
};

}  // namespace stx
