#include "stx/model/norm.h"

namespace stx {

NormImpl::NormImpl(NormKind kind, int64_t d, double eps) : kind_(kind), d_(d), eps_(eps) {
  if (kind_ == NormKind::None) return;
  weight = register_parameter("weight", torch::ones({d}));
  if (kind_ == NormKind::LayerNorm) bias = register_parameter("bias", torch::zeros({d}));
}

torch::Tensor NormImpl::forward(const torch::Tensor& x) {
  switch (kind_) {
    case NormKind::LayerNorm: return torch::layer_norm(x, {d_}, weight, bias, eps_);
    case NormKind::RMSNorm: return x * torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps_) * weight;
    case NormKind::None: return x;
  }
  return x;
}

}  // namespace stx
