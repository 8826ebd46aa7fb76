// stx/kernels/dropout.h — dropout (Srivastava et al. 2014) as one autograd node on the CPU:
//   y_i = x_i · m_i / (1 − p),   m_i = [u_i ≥ p],   u_i = fmix32(fmix32(i ⊕ k₀) + k₁) / 2³²
// (murmur3's finalizer twice, keyed by the halves of a 64-bit seed)
// A counter-based mask: the seed is one draw from the default CPU generator (which checkpoints,
// exact resume and activation recomputation save and restore), and backward recomputes the
// mask from it instead of storing it. Same distribution as torch::dropout (keep probability
// 1 − p to within 2⁻³²), a different random stream. Elsewhere (CUDA, other dtypes, or
// kernels = Reference) it is torch::dropout.
#pragma once
#include <torch/torch.h>

namespace stx {

torch::Tensor dropout(const torch::Tensor& x, double p, bool training);

}  // namespace stx
