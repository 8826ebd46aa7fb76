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

// For a caller that is itself one autograd node (fused_sublayer.h): the seed one dropout draws,
// and its mask applied in place to a contiguous float32/float64 tensor — forward on the branch,
// backward on its gradient — equal to dropout() on the same element order.
uint64_t dropout_seed();
void dropout_apply_(torch::Tensor& x, uint64_t seed, double p);

}  // namespace stx
