// stx/theory/deepnet_update_model.h — the model runs of the deepnet-update experiment
// (deepnet_update.cpp, DeepNet Figures 4–5 and Theorem 4.2): the setup, (A) Adam training curves
// of ‖ΔF‖ on the fixed probe batch, and (B) one SGD step on the sub-layer weights.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "stx/config/config.h"

namespace stx::theory::deepnet_update {

struct Setup {
  Arch arch = Arch::Decoder;
  int64_t d = 64, d_ff = 128, heads = 2, T = 32, B = 8, probe_B = 4;
  std::vector<int64_t> depths;
  int64_t steps = 20, seeds = 4;
  double lr = 5e-4, sgd_lr = 1e-2;
  uint64_t seed = 1;
};

struct Curve {
  std::vector<double> dF, inc, loss, ln_max, ln_mean, grad_bottom;
};

// (A) Adam, fixed lr, no warm-up. Entry t (1-based step) of dF/inc: after update t; of
// loss/ln_*/grad_bottom: the forward/backward of update t (parameters θ_{t−1}).
Curve train_adam(const Setup& s, const torch::Tensor& bytes, Scheme scheme, int64_t depth);

// (B) One SGD step on the sub-layer weights only (the theorem's θ_i). Returns ‖ΔF₁‖/η and the
// theorem's right-hand side Σ_i sqrt(v_i² + w_i²)/α ‖θ_i* − θ_i‖ divided by η.
std::pair<double, double> sgd_first_step(const Setup& s, const torch::Tensor& bytes, Scheme scheme, int64_t depth,
                                         uint64_t seed);

}  // namespace stx::theory::deepnet_update
