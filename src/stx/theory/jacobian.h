// stx/theory/jacobian.h — the Jacobian of a normalization, explicitly (autograd, one backward pass
// per output row, float64) and in closed form; used by lemma3 (Xiong et al. 2020, Lemma 3) and
// reusable by any experiment that needs ∂Norm(x)/∂x.
//
// Closed forms (γ = 1, β = 0; x ∈ R^d a row vector; derivation in the .cpp):
//   LayerNorm  y = x − mean(x),  P = I − 11ᵀ/d,  s = sqrt(‖y‖²/d + ε)
//              J_LN = (1/s) (I − y yᵀ/(d s²)) P,      ‖J_LN‖₂ = 1/s = √d / sqrt(‖y‖² + dε)   (d ≥ 3)
//              ε = 0:  ‖J_LN‖₂ = √d / ‖x − mean(x)‖ exactly
//   RMSNorm    r = sqrt(‖x‖²/d + ε)
//              J_RMS = (1/r) (I − x xᵀ/(d r²)),       ‖J_RMS‖₂ = 1/r = √d / sqrt(‖x‖² + dε)   (d ≥ 2)
//   The paper's Lemma 3 states ‖J_LN(x)‖₂ = O(√d/‖x‖), which equals the exact value only when
//   mean(x) is small relative to ‖x‖/√d (‖x‖² = ‖y‖² + d·mean²).
#pragma once
#include <torch/torch.h>

#include <functional>

#include "stx/config/config.h"

namespace stx::theory {

// J[i][j] = ∂f_i/∂x_j of f: R^d → R^d at x (a 1-D tensor), by torch::autograd::grad once per
// output row. Computed in float64 whatever x's dtype.
torch::Tensor autograd_jacobian(const std::function<torch::Tensor(const torch::Tensor&)>& f, const torch::Tensor& x);

// The stx model's own norm (stx::Norm: LayerNorm or RMSNorm, weight 1, bias 0, eps) as a function
// of a 1-D float64 x — so the Jacobian measured is the one of the code the models run.
std::function<torch::Tensor(const torch::Tensor&)> norm_function(NormKind kind, int64_t d, double eps);

// autograd_jacobian(norm_function(kind, x.numel(), eps), x).
torch::Tensor norm_jacobian_autograd(NormKind kind, const torch::Tensor& x, double eps);

// The closed-form matrices above (float64 [d, d]).
torch::Tensor layer_norm_jacobian(const torch::Tensor& x, double eps);
torch::Tensor rms_norm_jacobian(const torch::Tensor& x, double eps);
torch::Tensor norm_jacobian_formula(NormKind kind, const torch::Tensor& x, double eps);

// Closed-form spectral norms: LayerNorm √d/sqrt(‖x − mean‖² + dε), RMSNorm √d/sqrt(‖x‖² + dε).
double layer_norm_jacobian_norm(const torch::Tensor& x, double eps);
double rms_norm_jacobian_norm(const torch::Tensor& x, double eps);
double norm_jacobian_norm_closed(NormKind kind, const torch::Tensor& x, double eps);

// The paper's expression √d/‖x‖ (Xiong et al. Lemma 3, before the O(·)).
double paper_jacobian_norm(const torch::Tensor& x);

// Largest singular value of a matrix (at::linalg_svdvals), as a double.
double spectral_norm(const torch::Tensor& J);

}  // namespace stx::theory
