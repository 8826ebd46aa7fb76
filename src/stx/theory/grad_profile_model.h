// stx/theory/grad_profile_model.h — one N-N encoder-decoder of the grad-profile experiment
// (grad_profile.cpp, Xiong et al. 2020 Figure 3): its settings and the per-layer W^{2,l} gradient
// norms at initialization, by both measures, over S seeds.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "stx/config/schemes.h"

namespace stx::theory::grad_profile {

struct Settings {
  int64_t d, d_ff, heads, S, K, B, T;
};

// Per-layer W^{2,l} gradient norms of one N-N model: [stack][layer] → per-seed values.
struct Profile {
  std::vector<std::vector<double>> avg[2], mean[2];  // measure (1), (2); stack 0 = encoder, 1 = decoder
};

// S seeds (base + s: fresh init, fresh byte-text batches) of the N-N model of scheme row c; each
// seed averages its K mini-batches: (1) ‖(1/K) Σ_k g_k‖_F, (2) (1/K) Σ_k ‖g_k‖_F.
Profile measure_profile(const Settings& st, const SchemeRow& c, int64_t N, const torch::Tensor& bytes, uint64_t base);

}  // namespace stx::theory::grad_profile
