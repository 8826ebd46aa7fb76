// stx/parallel/grad_sync.h — gradient all-reduce for data parallelism, bucketed and overlapped with
// backward (the scheme of PyTorch's DistributedDataParallel, on c10d's process group; c10d's own
// Reducer cannot be used from Debian's LibTorch 1.13, whose headers lack a file it includes).
//
// Parameters are grouped, in reverse order of registration (≈ the order backward produces their
// gradients), into flat buckets of at most train.bucket_mb MB (the first 1 MB, so communication
// starts early). A hook on each parameter's gradient copies it, plus what earlier batches of the
// update accumulated, into its bucket slot; when a bucket is full its all-reduce (SUM) starts
// asynchronously while backward goes on. Buckets start strictly in index order, so every rank
// issues the same collectives in the same order. finish() waits and writes the sums back into
// every .grad. Each rank's loss is already divided by the token count of the whole update, so
// the sum is exactly the single-process gradient.
#pragma once
#include <torch/torch.h>

#include <vector>

#include "stx/parallel/world.h"

namespace stx::parallel {

class GradSync {
 public:
  // `params`: the model's trainable parameters, in the same order on every rank.
  GradSync(World& world, std::vector<torch::Tensor> params, double bucket_mb);

  // Before the backward whose gradients are to be summed over ranks (the update's last batch;
  // earlier batches of train.update_freq accumulate locally, like DDP's no_sync).
  void before_backward();
  // After that backward: starts what is left, waits for every bucket, writes .grad.
  void finish();

  int64_t buckets() const { return static_cast<int64_t>(buckets_.size()); }
  int64_t bytes() const { return bytes_; }  // gradient bytes all-reduced per update

 private:
  struct Bucket {
    std::vector<size_t> params;    // indices into params_
    std::vector<int64_t> offsets;  // of each in flat
    torch::Tensor flat;
    size_t ready = 0;
    c10::intrusive_ptr<c10d::Work> work;
  };
  void on_grad(size_t index, const torch::Tensor& grad);
  void launch_ready();

  World& world_;
  std::vector<torch::Tensor> params_;
  std::vector<std::pair<size_t, size_t>> slot_;  // param → (bucket, position in the bucket)
  std::vector<char> seen_;                       // param's gradient arrived in this backward
  std::vector<Bucket> buckets_;
  size_t next_launch_ = 0;
  bool armed_ = false;
  int64_t bytes_ = 0;
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
