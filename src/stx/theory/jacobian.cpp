// stx/theory/jacobian.cpp — explicit and closed-form Jacobians of LayerNorm and RMSNorm
// (Xiong et al. 2020, Lemma 3 and its proof; RMSNorm: Zhang & Sennrich 2019).
//
// Derivation (γ = 1, β = 0). LayerNorm: LN(x) = y/s with y = P x, P = I − 11ᵀ/d,
// s = sqrt(‖y‖²/d + ε). ∂y/∂x = P and ∂s/∂x = yᵀP/(d s) = yᵀ/(d s), so
//   J = P/s − y yᵀ/(d s³) = (1/s)(I − y yᵀ/(d s²)) P          (y yᵀ P = y yᵀ since y ⊥ 1).
// J is symmetric; its eigenvalues are 0 on 1, (1/s)·ε/s² on y, and 1/s on the (d−2)-dimensional
// complement of {1, y}. Hence ‖J‖₂ = 1/s for d ≥ 3, = √d/‖y‖ when ε = 0.
// RMSNorm: f(x) = x/r, r = sqrt(‖x‖²/d + ε): J = (1/r)(I − x xᵀ/(d r²)), eigenvalues (1/r)·ε/r² on
// x and 1/r on x's complement, so ‖J‖₂ = 1/r = √d/sqrt(‖x‖² + dε) for d ≥ 2.
#include "stx/theory/jacobian.h"

#include <cmath>
#include <stdexcept>

#include "stx/model/norm.h"

namespace stx::theory {

namespace {
torch::Tensor as_f64(const torch::Tensor& x) {
  if (x.dim() != 1) throw std::invalid_argument("jacobian: x must be a 1-D tensor");
  return x.detach().to(torch::kFloat64);
}
}  // namespace

torch::Tensor autograd_jacobian(const std::function<torch::Tensor(const torch::Tensor&)>& f, const torch::Tensor& x) {
  torch::AutoGradMode grad_on(true);
  auto xin = as_f64(x).clone().requires_grad_(true);
  auto y = f(xin);
  if (y.dim() != 1) throw std::invalid_argument("autograd_jacobian: f must return a 1-D tensor");
  const int64_t m = y.numel(), n = xin.numel();
  auto J = torch::zeros({m, n}, torch::kFloat64);
  for (int64_t i = 0; i < m; ++i) {  // row i = ∇_x f_i, one backward pass each
    auto g = torch::autograd::grad({y[i]}, {xin}, /*grad_outputs=*/{}, /*retain_graph=*/true,
                                   /*create_graph=*/false, /*allow_unused=*/true)[0];
    if (g.defined()) J[i].copy_(g);
  }
  return J;
}

std::function<torch::Tensor(const torch::Tensor&)> norm_function(NormKind kind, int64_t d, double eps) {
  if (kind == NormKind::None) throw std::invalid_argument("norm_function: no Jacobian to study for norm 'none'");
  Norm norm(kind, d, eps);  // weight 1, bias 0 — γ = 1, β = 0 as in the lemma
  norm->to(torch::kFloat64);
  return [norm](const torch::Tensor& x) mutable { return norm->forward(x); };
}

torch::Tensor norm_jacobian_autograd(NormKind kind, const torch::Tensor& x, double eps) {
  return autograd_jacobian(norm_function(kind, x.numel(), eps), x);
}

torch::Tensor layer_norm_jacobian(const torch::Tensor& x, double eps) {
  auto v = as_f64(x);
  const int64_t d = v.numel();
  auto I = torch::eye(d, torch::kFloat64);
  auto P = I - torch::full({d, d}, 1.0 / d, torch::kFloat64);  // P = I − 11ᵀ/d
  auto y = v - v.mean();
  const double s2 = y.dot(y).item<double>() / d + eps;  // s² = ‖y‖²/d + ε
  const double s = std::sqrt(s2);
  return (I - torch::outer(y, y) / (d * s2)).matmul(P) / s;
}

torch::Tensor rms_norm_jacobian(const torch::Tensor& x, double eps) {
  auto v = as_f64(x);
  const int64_t d = v.numel();
  const double r2 = v.dot(v).item<double>() / d + eps;  // r² = ‖x‖²/d + ε
  return (torch::eye(d, torch::kFloat64) - torch::outer(v, v) / (d * r2)) / std::sqrt(r2);
}

torch::Tensor norm_jacobian_formula(NormKind kind, const torch::Tensor& x, double eps) {
  return kind == NormKind::RMSNorm ? rms_norm_jacobian(x, eps) : layer_norm_jacobian(x, eps);
}

double layer_norm_jacobian_norm(const torch::Tensor& x, double eps) {
  auto v = as_f64(x);
  const double d = static_cast<double>(v.numel());
  auto y = v - v.mean();
  return std::sqrt(d) / std::sqrt(y.dot(y).item<double>() + d * eps);
}

double rms_norm_jacobian_norm(const torch::Tensor& x, double eps) {
  auto v = as_f64(x);
  const double d = static_cast<double>(v.numel());
  return std::sqrt(d) / std::sqrt(v.dot(v).item<double>() + d * eps);
}

double norm_jacobian_norm_closed(NormKind kind, const torch::Tensor& x, double eps) {
  return kind == NormKind::RMSNorm ? rms_norm_jacobian_norm(x, eps) : layer_norm_jacobian_norm(x, eps);
}

double paper_jacobian_norm(const torch::Tensor& x) {
  auto v = as_f64(x);
  return std::sqrt(static_cast<double>(v.numel())) / v.norm().item<double>();
}

double spectral_norm(const torch::Tensor& J) {
  return at::linalg_svdvals(J.to(torch::kFloat64), c10::nullopt).max().item<double>();
}

}  // namespace stx::theory
