// stx/model/norm.h — the per-sub-layer normalization: LayerNorm, RMSNorm or none.
//   LayerNorm: (x − mean) / sqrt(var + ε) · weight + bias          (Ba et al.; ε default 1e-5)
//   RMSNorm:   x / sqrt(mean(x²) + ε) · weight                      (Zhang & Sennrich 2019)
//   none:      identity (parameter-free)
#pragma once
#include <torch/torch.h>

#include "stx/config/config.h"

namespace stx {

class NormImpl : public torch::nn::Module {
 public:
  NormImpl(NormKind kind, int64_t d, double eps);
  torch::Tensor forward(const torch::Tensor& x);
  NormKind kind() const { return kind_; }
  double eps() const { return eps_; }

  torch::Tensor weight, bias;  // undefined when absent

 private:
  NormKind kind_;
  int64_t d_;
  double eps_;
};
TORCH_MODULE(Norm);

}  // namespace stx
