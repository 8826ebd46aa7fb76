#include "stx/model/norm.h"

namespace stx {

NormImpl::NormImpl(NormKind kind, int64_t d, double eps, double alpha0)
    : kind_(kind), d_(d), eps_(eps), alpha0_(alpha0) {
  if (kind_ == NormKind::None) return;
  weight = register_parameter("weight", torch::ones({d}));
  if (kind_ == NormKind::LayerNorm || kind_ == NormKind::DyT) bias = register_parameter("bias", torch::zeros({d}));
  if (kind_ == NormKind::DyT) alpha = register_parameter("alpha", torch::full({1}, alpha0));
}

void NormImpl::reset() {
  torch::NoGradGuard no_grad;
  if (weight.defined()) weight.fill_(1.0);
  if (bias.defined()) bias.zero_();
  if (alpha.defined()) alpha.fill_(alpha0_);
}

Feature NormImpl::fused_feature() const {
  switch (kind_) {
    case NormKind::LayerNorm: return Feature::LayerNorm;
    case NormKind::RMSNorm: return Feature::RMSNorm;
    case NormKind::DyT: return Feature::DynamicTanh;
    case NormKind::None: return Feature::NoNorm;
  }
  return Feature::MixedNorms;  // a kind this list does not name: no kernel implements it
}

NormWeights fused_weights(const Norm& n) { return n ? NormWeights{n->weight, n->bias, n->alpha} : NormWeights{}; }

torch::Tensor NormImpl::forward(const torch::Tensor& x) {
  switch (kind_) {
    case NormKind::LayerNorm: return torch::layer_norm(x, {d_}, weight, bias, eps_);
    case NormKind::RMSNorm: return x * torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps_) * weight;
    case NormKind::DyT: return torch::tanh(alpha * x) * weight + bias;
    case NormKind::None: return x;
  }
  return x;
}

}  // namespace stx
