// stx/kernels/adam.h — one pass of Adam / AdamW over contiguous float32 buffers, in
// torch.optim.Adam's (2.11, single-tensor path) order of operations (Kingma & Ba 2015, Alg. 1;
// AdamW: Loshchilov & Hutter 2019):
//   g ← g + λ·p (Adam with L2);   p ← p·(1 − lr·λ) (AdamW)
//   m ← m + (1 − β₁)(g − m),   v ← β₂v + (1 − β₂)g²,   p ← p − step_size · m / (√v / √bc₂ + ε)
// with step_size = lr / bc₁. One read of p, g, m, v and one write of p, m, v per element, where
// the LibTorch ops take eight passes — and bit-equal to them: the same fused multiply-adds
// where ATen's kernels use them (lerp, addcmul, add with alpha) and the same square root
// (adam_loop.cpp); tests/ref/test_optimizer_parity.py checks every element.
#pragma once
#include <torch/torch.h>

#include "stx/kernels/adam_loop.h"

namespace stx {

// True when adam_update can take these tensors: CPU, float32, contiguous, kernels() == Fused.
bool adam_fused_available(const torch::Tensor& p);

void adam_update(torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m, torch::Tensor& v,
                 const AdamCoefficients& c);

}  // namespace stx
