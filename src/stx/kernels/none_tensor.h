// stx/kernels/none_tensor.h — how an absent tensor (no key padding, no memory, no dropout mask)
// crosses torch::autograd::Function::apply and its saved variables: as a [0] tensor. apply()
// records each tensor argument's layout, device, dtype and sizes (VariableInfo), which an undefined
// tensor does not have. Used by the attention core, the tied projection and model/recompute.cpp's
// checkpointed layer; the fused sub-layers need none of it (their node is made by hand,
// fused_node.h, and holds undefined tensors as they are). One [0] tensor for the process, not a
// fresh TensorImpl and StorageImpl per use. Made outside inference mode, never written, never
// freed (no destructor runs after LibTorch's).
#pragma once
#include <torch/torch.h>

namespace stx {

inline const torch::Tensor& none_tensor() {
  static const torch::Tensor* none = [] {
    c10::InferenceMode normal(false);
    return new torch::Tensor(torch::empty({0}));
  }();
  return *none;
}
inline torch::Tensor pack_none(const torch::Tensor& t) { return t.defined() ? t : none_tensor(); }
inline torch::Tensor unpack_none(const torch::Tensor& t) {
  return !t.defined() || (t.dim() == 1 && t.numel() == 0) ? torch::Tensor() : t;
}

}  // namespace stx
