// stx/kernels/residual_norm.h — the Post-LN / DeepNorm residual join as one autograd node:
//   y = N(α·x + g),   N = LayerNorm: ŝ = (s − mean s)·r,  r = 1/√(var s + ε),  y = ŝ·w + b
//                      N = RMSNorm:   ŝ = s·r,             r = 1/√(mean s² + ε), y = ŝ·w
// (Xiong et al. eq. 1 with α = 1; DeepNet eq. 4). Backward, per row with u = dy·w:
//   ds = r·(u − mean(u) − ŝ·mean(u·ŝ))   (RMSNorm: without the mean(u) term)
//   dx = α·ds,  dg = ds,  dw = Σ_rows dy·ŝ,  db = Σ_rows dy.
// One pass over each row forward and backward, where LibTorch runs the scale, the add, the norm
// and their backward nodes separately. Equal to them (residual.cpp's reference path) up to rounding.
#pragma once
#include <torch/torch.h>

#include "stx/config/config.h"

namespace stx {

// True when the fused join runs: CPU float32/float64, contiguous, a LayerNorm or RMSNorm, and
// kernels() == Fused.
bool residual_norm_available(const torch::Tensor& x, NormKind kind);

// x, g: [..., d]; weight [d]; bias [d] (LayerNorm) or undefined (RMSNorm).
torch::Tensor residual_norm(const torch::Tensor& x, const torch::Tensor& g, double alpha, NormKind kind,
                            const torch::Tensor& weight, const torch::Tensor& bias, double eps);

}  // namespace stx
