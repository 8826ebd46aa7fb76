// stx/core/device.h — where a run computes (train.device / --device): the CPU, or a CUDA GPU
// with bf16 autocast (matmuls and attention in bfloat16, reductions and the optimizer's master
// weights in float32). Builds against a CPU-only LibTorch compile and run: asking for cuda there
// is an input error, not a crash.
#pragma once
#include <torch/torch.h>

#include <string>

namespace stx {

// "cpu" or "cuda" (the current CUDA device); InputError naming what is allowed otherwise, or
// when this LibTorch/machine has no usable CUDA device.
torch::Device resolve_device(const std::string& name);

// Waits for queued device work (timing on CUDA); nothing on the CPU.
void synchronize(const torch::Device& device);

// bf16 autocast for the forward pass on CUDA while in scope; does nothing on the CPU.
class AutocastScope {
 public:
  explicit AutocastScope(const torch::Device& device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool on_ = false;
  bool was_enabled_ = false;
};

}  // namespace stx
