// stx/kernels/none_tensor.h — how an absent tensor (no bias, no key padding) crosses
// torch::autograd::Function::apply in stx's fused nodes: as a [0] tensor (LibTorch 1.13 rejected
// undefined ones; kept so that one convention serves every node). One [0] tensor for the process:
// a fused sub-layer passes and saves some 30 of them, each a fresh TensorImpl and StorageImpl
// before (measured: within noise, ≤ 1 % of the d64 × 24 step). Made outside inference mode,
// never written, never freed (no destructor runs after LibTorch's).
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
