// stx/theory/theory_setting.h — Xiong et al. (ICML 2020) §3 theory setting, shared by the
// theorem1 and grad-profile experiments (docs/reference.md#theory-setting):
//   Xavier-normal weights, no biases (the theory's FFN is ReLU(x W¹) W², zero biases), LayerNorm
//   γ=1 β=0, W^Q = W^K = 0 (uniform attention), ReLU, d_F as given, Gaussian inputs
//   x_{1,i} ~ N(0, I_d) fed straight into the layers, and the tied-embedding loss
//   L̃ = −(1/n) Σ_i log softmax_{y_i}(x_{L+1,i} Eᵀ)   (E = embed_tokens.weight, rows ~ N(0, I/d)).
// The helper also computes ∂L̃_b/∂W^{2,l} for every sequence b of a batch separately, from one
// backward pass (sequences do not interact: attention stays inside a sequence).
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "stx/config/config.h"
#include "stx/config/schemes.h"
#include "stx/model/transformer.h"

namespace stx::theory {

struct TheorySpec {
  int64_t d = 128;
  int64_t d_ff = 128;  // the theorem's proof takes d_F = d
  int64_t layers = 6;  // L encoder layers
  Scheme scheme = Scheme::Post;
  bool sigma_reparam = false;  // σReparam on every linear (γ = σ(W₀): Ŵ = W₀ at init; γ_Q = γ_K = 0)
  int64_t vocab = 256;         // V of the tied softmax; independent of d (see theorem1 config)
  int64_t heads = 1;           // irrelevant with W^Q = W^K = 0 (every head attends uniformly)
  double norm_eps = 1e-6;      // the theory's ε → 0; negligible next to ‖x‖²/d ≈ 1
};

// The columns of the gradient experiments, from the scheme table (config/schemes.h): Theorem 1's
// rows, or the per-layer profile's (which adds Post-LN-init). key = JSON series name, title =
// table/plot name.
const std::vector<SchemeRow>& scheme_columns(bool with_post_init);

// The encoder-only ModelConfig of the theory setting.
ModelConfig theory_model_config(const TheorySpec& s);

// A freshly initialized model of the theory setting (eval mode: no dropout, no power
// iteration), converted to `dtype`.
Transformer make_theory_model(const TheorySpec& s, uint64_t seed, torch::Dtype dtype = torch::kFloat32);

struct TheoryBatch {
  torch::Tensor x;  // [B, n, d] Gaussian inputs x₁ ~ N(0, I)
  torch::Tensor y;  // [B, n] target ids, uniform in [0, V)
};
TheoryBatch gaussian_batch(int64_t B, int64_t n, int64_t d, int64_t vocab, uint64_t seed,
                           torch::Dtype dtype = torch::kFloat32);

// L̃_b for every sequence: [B]. taps (optional) records the forward.
torch::Tensor sequence_losses(Transformer& model, const TheoryBatch& batch, Taps* taps = nullptr);

struct W2Grads {
  torch::Tensor grad;       // [B, d, d_F]: ∂L̃_b/∂W^{2,l} of the raw parameter ffn.fc2.weight
  torch::Tensor norm;       // [B]: its Frobenius norm
  torch::Tensor ln_in_sq;   // [B]: mean_i ‖z_i‖²/d of the LN input before the loss
                            //      (Post: x^{post,5}_L; Pre: x^{pre}_{L+1}, the final LN's input)
  torch::Tensor relu_sq;    // [B]: mean_i ‖ReLU(x W^{1,l})_i‖²/d_F of layer l's FFN hidden
  torch::Tensor token_cos;  // [B]: mean over token pairs i ≠ j of cos(z_i, z_j), z as in ln_in_sq
};
// Per-sequence ∂L̃_b/∂W^{2,l} for encoder layer l (0-based; default the top layer), from the
// gradient g at the FFN output:  ∂L̃_b/∂Ŵ = Σ_i g_{b,i}ᵀ ReLU(u_{b,i} W¹)  (Ŵ: [d, d_F]).
// With σReparam (Ŵ = γ W/σ, σ = uᵀWv) the raw weight's gradient is
//   ∂L/∂W = (γ/σ) (∂L/∂Ŵ − ⟨∂L/∂Ŵ, W⟩/σ · u vᵀ).
W2Grads w2_grads_per_sequence(Transformer& model, const TheoryBatch& batch, int64_t layer = -1);

// Least-squares slope b of log m_k against log x_k with its sampling SE when the means m_k are
// independent (disjoint seeds per point): b = Σ_k w_k log m_k, w_k = (log x_k − mean)/Sxx, so by
// the delta method (SE of log m_k ≈ se_k/m_k) Var b = Σ_k w_k² (se_k/m_k)². resid_se: the usual
// OLS SE from the residuals (model misfit; needs ≥ 3 points).
struct SlopeFit {
  double slope = 0, intercept = 0, se = 0, resid_se = 0;
};
SlopeFit loglog_slope(const std::vector<double>& x, const std::vector<double>& mean, const std::vector<double>& se);

}  // namespace stx::theory
