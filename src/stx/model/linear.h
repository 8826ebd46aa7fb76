// stx/model/linear.h — y = x Wᵀ + b, with optional σReparam (Zhai et al. 2023, eq. 2):
//   Ŵ = (γ / σ(W)) · W,   σ(W) = uᵀ W v
// u, v are buffers. A training forward first runs one power iteration under no-grad,
//   v ← normalize(Wᵀ u),  u ← normalize(W v),
// then computes σ with gradient into W (u, v constant). Eval mode does no iteration.
#pragma once
#include <torch/torch.h>

#include "stx/config/config.h"

namespace stx {

// How a projection is built: with a bias, and with σReparam.
struct LinearOptions {
  bool bias = true;
  bool sigma_reparam = false;
  // model.bias and model.sigma_reparam.
  static LinearOptions of(const ModelConfig& m) { return {m.bias, m.sigma_reparam}; }
};

class LinearImpl : public torch::nn::Module {
 public:
  LinearImpl(int64_t in, int64_t out, LinearOptions o = {});
  torch::Tensor forward(const torch::Tensor& x);

  // The weight a training step's forward uses: in training mode with σReparam, first one power
  // iteration (as forward does), then effective_weight(). For callers that fuse several
  // projections into one product (the attention's q, k, v).
  torch::Tensor step_weight();
  // The weight the forward uses: W, or γ·W/σ(W) with the current u, v (no iteration).
  torch::Tensor effective_weight();
  // σ(W) = uᵀ W v with the current buffers.
  torch::Tensor sigma();
  // σReparam set-up after W is initialized: u, v from an exact SVD of W, and γ = σ(W)
  // (gamma_init: sigma, so Ŵ = W at init) or γ = 1 (gamma_init: one).
  void reset_sigma(GammaInit gamma_init);
  // Xavier normal N(0, gain²·2/(fan_in+fan_out)) for W (Glorot & Bengio 2010), b = 0.
  void reset_xavier(double gain);
  bool reparam() const { return sigma_reparam_; }

  torch::Tensor weight, bias, gamma, u, v;  // bias/gamma/u/v undefined when absent

 private:
  bool sigma_reparam_;
};
TORCH_MODULE(Linear);

}  // namespace stx
