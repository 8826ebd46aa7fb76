// stx/model/norm.h — the per-sub-layer normalization: LayerNorm, RMSNorm, Dynamic Tanh or none.
//   LayerNorm: (x − mean) / sqrt(var + ε) · weight + bias          (Ba et al.; ε default 1e-5)
//   RMSNorm:   x / sqrt(mean(x²) + ε) · weight                      (Zhang & Sennrich 2019)
//   DyT:       weight ⊙ tanh(alpha · x) + bias, scalar alpha        (Zhu et al. 2025)
//   none:      identity (parameter-free)
#pragma once
#include <torch/torch.h>

#include "stx/config/config.h"
#include "stx/kernels/fused_features.h"
#include "stx/kernels/fused_join.h"

namespace stx {

class NormImpl : public torch::nn::Module {
 public:
  // alpha0: Dynamic Tanh's initial α (model.dyt_alpha; unused by the other kinds).
  NormImpl(NormKind kind, int64_t d, double eps, double alpha0 = 0.5);
  torch::Tensor forward(const torch::Tensor& x);
  // The initialization: weight 1, bias 0, alpha α₀.
  void reset();
  NormKind kind() const { return kind_; }
  double eps() const { return eps_; }
  // What the fused path must implement to run this norm (kernels/fused_features.h).
  Feature fused_feature() const;

  torch::Tensor weight, bias, alpha;  // undefined when absent

 private:
  NormKind kind_;
  int64_t d_;
  double eps_, alpha0_;
};
TORCH_MODULE(Norm);

// A norm's parameters for the fused nodes (none: an absent or norm-free module).
NormWeights fused_weights(const Norm& n);

}  // namespace stx
