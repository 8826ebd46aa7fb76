#include "stx/core/device.h"

#include <ATen/autocast_mode.h>
#include <torch/cuda.h>

#include "stx/core/error.h"

namespace stx {

torch::Device resolve_device(const std::string& name) {
  if (name == "cpu") return torch::Device(torch::kCPU);
  if (name == "cuda") {
    if (!torch::cuda::is_available())
      throw InputError("device cuda requested, but this LibTorch build (" TORCH_VERSION
                       ") or machine has no usable CUDA device (stx --version says which); use cpu");
    return torch::Device(torch::kCUDA, 0);
  }
  throw InputError("device '" + name + "' is not supported (allowed: cpu, cuda)");
}

void synchronize(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

AutocastScope::AutocastScope(const torch::Device& device) : on_(device.is_cuda()) {
  if (!on_) return;
  was_enabled_ = at::autocast::is_autocast_enabled(at::kCUDA);
  at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
  at::autocast::set_autocast_enabled(at::kCUDA, true);
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!on_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(at::kCUDA, was_enabled_);
}

}  // namespace stx
