#include "stx/model/linear.h"

#include "stx/model/recomputing.h"

namespace stx {

LinearImpl::LinearImpl(int64_t in, int64_t out, LinearOptions o) : sigma_reparam_(o.sigma_reparam) {
  weight = register_parameter("weight", torch::empty({out, in}));
  if (o.bias) bias = register_parameter("bias", torch::zeros({out}));
  if (sigma_reparam_) {
    gamma = register_parameter("gamma", torch::ones({1}));
    u = register_buffer("u", torch::zeros({out}));
    v = register_buffer("v", torch::zeros({in}));
  }
}

void LinearImpl::reset_sigma(GammaInit gamma_init) {
  if (!sigma_reparam_) return;
  torch::NoGradGuard no_grad;
  // Exact top singular pair: W = U S Vᵀ, u = U[:,0], v = V[:,0].
  auto svd = at::linalg_svd(weight, /*full_matrices=*/false, /*driver=*/std::nullopt);
  u.copy_(std::get<0>(svd).select(1, 0));
  v.copy_(std::get<2>(svd).select(0, 0));
  auto s = std::get<1>(svd).select(0, 0);
  gamma.fill_(gamma_init == GammaInit::Sigma ? s.item<double>() : 1.0);
}

void LinearImpl::reset_xavier(double gain) {
  torch::NoGradGuard no_grad;
  torch::nn::init::xavier_normal_(weight, gain);
  if (bias.defined()) bias.zero_();
}

torch::Tensor LinearImpl::sigma() { return torch::dot(u, torch::mv(weight, v)); }

torch::Tensor LinearImpl::effective_weight() {
  if (!sigma_reparam_) return weight;
  return weight * (gamma / sigma());
}

torch::Tensor LinearImpl::forward(const torch::Tensor& x) {
  if (x.dim() <= 2 || !x.is_contiguous()) return torch::nn::functional::linear(x, step_weight(), bias);
  // [.., in] as one matrix: addmm adds the bias inside the product (LibTorch's linear on a 3-D
  // input is a matmul and a separate bias add, forward and backward).
  auto sizes = x.sizes().vec();
  sizes.back() = weight.size(0);
  return torch::nn::functional::linear(x.view({-1, x.size(-1)}), step_weight(), bias).view(sizes);
}

torch::Tensor LinearImpl::step_weight() {
  if (sigma_reparam_ && is_training() && !recomputing_activations()) {  // once per step
    torch::NoGradGuard no_grad;  // one power iteration (the buffers are constants for autograd)
    v.copy_(torch::nn::functional::normalize(torch::mv(weight.t(), u),
                                             torch::nn::functional::NormalizeFuncOptions().dim(0)));
    u.copy_(
        torch::nn::functional::normalize(torch::mv(weight, v), torch::nn::functional::NormalizeFuncOptions().dim(0)));
  }
  return effective_weight();
}

}  // namespace stx
