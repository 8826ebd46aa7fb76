// stx/kernels/adam.h — one pass of Adam / AdamW over contiguous float32 buffers, in
// torch.optim.Adam's order of operations (Kingma & Ba 2015, Alg. 1; AdamW: Loshchilov & Hutter
// 2019):
//   g ← g + λ·p (Adam with L2);   p ← p·(1 − lr·λ) (AdamW)
//   m ← β₁m + (1 − β₁)g,   v ← β₂v + (1 − β₂)g²,   p ← p − step_size · m / (√v / √bc₂ + ε)
// with step_size = lr / bc₁. One read of p, g, m, v and one write of p, m, v per element, where
// the LibTorch ops take eight passes; equal to them up to rounding (no fused multiply-adds here,
// where LibTorch's vectorized add may use them).
#pragma once
#include <torch/torch.h>

namespace stx {

// Each coefficient is rounded to float once from its double value (as LibTorch's scalar
// arguments are): 1 − β₂ in float arithmetic would be off by 1e-5 relative.
struct AdamCoefficients {
  float beta1, one_minus_beta1, beta2, one_minus_beta2, eps, step_size, bias_correction2_sqrt;
  float l2 = 0;     // Adam's weight decay (added to the gradient)
  float decay = 1;  // AdamW's 1 − lr·λ
};

// True when adam_update can take these tensors: CPU, float32, contiguous, kernels() == Fused.
bool adam_fused_available(const torch::Tensor& p);

void adam_update(torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m, torch::Tensor& v,
                 const AdamCoefficients& c);

}  // namespace stx
