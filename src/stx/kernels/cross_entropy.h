// stx/kernels/cross_entropy.h — label-smoothed cross-entropy (train/loss.h's formula) as one
// autograd node: with e = exp(l − max l), s = Σ_v e_v, lse = max l + log s per row,
//   nll_t = lse − l[y_t],   smooth_t = V·lse − Σ_v l_v,
//   loss = Σ_t (1 − ε − ε_i)·nll_t + ε_i·smooth_t          (ε_i = ε/(V−1), pad rows skipped)
// and in backward, from the saved e (no second exp pass, no log-probability tensor):
//   ∂loss/∂l_v = (1 − ε − ε_i + ε_i·V)·e_v/s − ε_i − (1 − ε − ε_i)·[v = y_t].
// Replaces log_softmax → index_select of the non-pad rows → gather and their three backward
// passes over the [tokens, V] logits: each row is read once forward (max, exp and sums while it
// is in cache; exp from vec_math.h) and once backward. Equals the reference (train/loss.cpp) up
// to rounding.
#pragma once
#include <torch/torch.h>

namespace stx {

// True when the fused loss runs: CPU float32/float64 logits and kernels() == Fused.
bool fused_cross_entropy_available(const torch::Tensor& logits);

struct CrossEntropySums {
  torch::Tensor loss;  // scalar Σ_t loss_t, differentiable in logits
  torch::Tensor nll;   // scalar Σ_t nll_t, detached
  int64_t tokens = 0;  // non-pad positions
};

// logits [N, V] (any leading shape flattened by the caller), target [N]; pad_id < 0: none.
CrossEntropySums fused_cross_entropy(const torch::Tensor& logits, const torch::Tensor& target, double epsilon,
                                     int64_t pad_id);

}  // namespace stx
