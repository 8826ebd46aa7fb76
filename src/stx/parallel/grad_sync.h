// stx/parallel/grad_sync.h — gradient all-reduce for data parallelism through c10d's own Reducer,
// the engine of PyTorch's DistributedDataParallel, driven from C++ (docs/distributed.md).
//
// Parameters are grouped as DDP groups them: c10d::compute_bucket_assignment_by_size fills flat
// buckets in order of registration — the first at most 1 MB, the others train.bucket_mb — and the
// bucket list is reversed, so that buckets go out in about the order backward completes them and
// the last all-reduce, of the first-registered parameters, is a small one. The Reducer hooks
// every parameter's gradient accumulator; in the backward that is armed with backward(), a full
// bucket's all-reduce starts asynchronously while backward goes on, and when backward ends the
// sums are in every .grad. The all-reduce is a SUM, not DDP's mean: each rank's loss is already
// divided by the token count of the whole update, so the sum is the single-process gradient.
// Earlier batches of an update (train.update_freq) run a plain backward and accumulate locally,
// like DDP's no_sync. Until the move to PyTorch 2.11 stx bucketed by hand (LibTorch 1.13's headers
// lacked a file the Reducer includes).
#pragma once
#include <torch/torch.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "stx/parallel/world.h"

namespace c10d {
class Reducer;
}

namespace stx::parallel {

class GradSync {
 public:
  // `params`: the model's trainable parameters with their names, in the same order on every rank.
  GradSync(World& world, std::vector<std::pair<std::string, torch::Tensor>> params, double bucket_mb);
  ~GradSync();

  // The backward of the update's last batch: its gradients (plus what earlier batches
  // accumulated) are summed over the ranks into every .grad. DistError when a peer fails.
  void backward(const torch::Tensor& loss);

  int64_t buckets() const { return buckets_; }
  int64_t bytes() const { return bytes_; }  // gradient bytes all-reduced per update
  // "data parallel: N processes, … MB all-reduced per update", for the run's first lines.
  std::string summary(int64_t update_freq, int64_t max_tokens) const;

 private:
  World& world_;
  std::unique_ptr<c10d::Reducer> reducer_;
  int64_t buckets_ = 0, bytes_ = 0;
};

// Overwrites every rank's tensors (parameters, buffers) with rank 0's: one flattened broadcast
// per dtype, as DDP does when it wraps a module.
void broadcast_from_main(World& world, const std::vector<torch::Tensor>& tensors);
// The same for every parameter and buffer of a module.
void broadcast_module(World& world, torch::nn::Module& module);

// Collective: the default CPU generator states of ranks 1…N−1 (for rank 0's checkpoint, so that
// every rank resumes its own random stream).
std::vector<torch::Tensor> other_ranks_generator_states(World& world);

}  // namespace stx::parallel
