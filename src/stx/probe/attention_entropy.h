// stx/probe/attention_entropy.h — attention entropy and its lower bound (Zhai et al., ICML 2023,
// "Stabilizing Transformer Training by Preventing Attention Entropy Collapse", §3, Theorem 3.1).
//
//   Ent(A_i) = −Σ_j A_ij log A_ij            (0·log 0 = 0; uniform attention gives log T)
//   Ent(A)   = mean over queries (and heads, examples) of Ent(A_i)
//
// Theorem 3.1: for a logit row a ∈ ℝ^T with ‖a‖₂ ≤ 𝛔 (in a layer 𝛔 = σ σ_x, σ = ‖W_K W_Qᵀ‖₂,
// σ_x = ‖X Xᵀ‖₂) and β = exp(−𝛔 √(T/(T−1))),
//   Ent(softmax(a)) ≥ log(1 + (T−1)β) + 𝛔 √(T(T−1)) β / (1 + (T−1)β),
// with equality for the extremal row a* = (𝛔√((T−1)/T), −𝛔/√(T(T−1)), …) — one logit high,
// the other T−1 equal, zero mean, ‖a*‖ = 𝛔 (its gap a₁ − a_j = 𝛔√(T/(T−1)) gives β = e^{−gap}).
#pragma once
#include <torch/torch.h>

#include <cstdint>

namespace stx::probe {

// Row entropies of probabilities A [..., T] over the last axis → [...]. Safe at A = 0.
torch::Tensor row_entropy(const torch::Tensor& A);
// Row entropies of softmax(logits) over the last axis, computed stably via log_softmax → [...].
torch::Tensor row_entropy_from_logits(const torch::Tensor& logits);
// Mean row entropy of A [..., T] (averaged over queries, heads and examples), as a double.
double attention_entropy(const torch::Tensor& A);

// Theorem 3.1's lower bound on Ent(softmax(a)) over rows with ‖a‖₂ ≤ sigma, T ≥ 2 keys.
// Equals log T at sigma = 0 and decreases like 𝛔√(T(T−1)) e^{−𝛔√(T/(T−1))} for large 𝛔.
double entropy_lower_bound(double sigma, int64_t T);
// The extremal logit row [T] (float64) that attains the bound: zero mean, norm sigma.
torch::Tensor extremal_logits(double sigma, int64_t T);

}  // namespace stx::probe
