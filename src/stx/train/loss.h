// stx/train/loss.h — the training loss: cross-entropy with label smoothing as fairseq's
// label_smoothed_cross_entropy (Szegedy et al. 2016):
//   ε_i = ε/(V−1),  loss_t = (1 − ε − ε_i)·(−log p_t[y_t]) + ε_i·Σ_v (−log p_t[v])
// summed over non-pad target positions. nll (the unsmoothed part) is what perplexity uses.
#pragma once
#include <torch/torch.h>

namespace stx {

struct LossSums {
  torch::Tensor loss;  // scalar: Σ_t loss_t (with grad)
  torch::Tensor nll;   // scalar: Σ_t −log p_t[y_t] (detached)
  int64_t tokens = 0;  // non-pad target positions
};

// logits [B, T, V], target [B, T]; positions with target == pad_id (pad_id ≥ 0) are ignored.
LossSums label_smoothed_loss(const torch::Tensor& logits, const torch::Tensor& target, double epsilon, int64_t pad_id);

// z-loss (PaLM, Chowdhery et al. 2022): Σ_t log²Z_t over the non-pad targets, Z_t = Σ_v exp z_tv.
// train.z_loss = c adds c times this to the training loss (the reported NLL is unchanged).
torch::Tensor z_loss_sum(const torch::Tensor& logits, const torch::Tensor& target, int64_t pad_id);

}  // namespace stx
