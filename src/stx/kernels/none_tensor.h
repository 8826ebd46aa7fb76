// stx/kernels/none_tensor.h — how an absent tensor (no bias, no key padding) crosses
// torch::autograd::Function::apply in stx's fused nodes: as a [0] tensor (LibTorch 1.13 rejected
// undefined ones; kept so that one convention serves every node).
#pragma once
#include <torch/torch.h>

namespace stx {

inline torch::Tensor pack_none(const torch::Tensor& t) { return t.defined() ? t : torch::empty({0}); }
inline torch::Tensor unpack_none(const torch::Tensor& t) {
  return !t.defined() || (t.dim() == 1 && t.numel() == 0) ? torch::Tensor() : t;
}

}  // namespace stx
