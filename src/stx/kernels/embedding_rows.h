// stx/kernels/embedding_rows.h — the token embedding's lookup x[n] = s·E[tok[n]] (s = √d with
// embed_scale, Vaswani et al. 2017 §3.4) as one autograd node whose backward adds each token's
// Σ_n s·dx[n] straight into E.grad() (kernels/direct_grads.h). Through autograd the lookup was an
// embedding node (a dense [V, d] gradient: zero fill, then a row add per token), a scale node,
// and one more [V, d] add for E's AccumulateGrad (with the tied projection's dE summed in first);
// here only the rows of the batch's tokens are touched.
// The sums are those of LibTorch's embedding backward (each token's rows in n order, from zero),
// added to .grad() after the tied projection's dE as autograd's input buffer adds them: the same
// bits (tests/test_direct_grads.cpp).
#pragma once
#include <torch/torch.h>

namespace stx {

// E [V, d] (a parameter), tokens [B, T] int64 → [B, T, d]. Only where direct_grad_targets(E, {E})
// holds a .grad() (the caller checks: `grad`); E keeps its autograd edge, which receives an
// undefined gradient, so that the output requires grad.
torch::Tensor embedding_rows(const torch::Tensor& E, const torch::Tensor& tokens, double scale,
                             const torch::Tensor& grad);

}  // namespace stx
