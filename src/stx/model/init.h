// stx/model/init.h — initialization schemes.
//   Xavier normal N(0, gain²·2/(fan_in+fan_out)) for every linear weight, zero biases.
//   deepnorm: gain β on ffn.fc1, ffn.fc2, v_proj, out_proj (every attention); β from
//     depth_constants.h.
//   post-init: DeepNet §3 Post-LN-init, layer l's linear weights divided by N−l+1.
//   sub-ln: Magneto's (Wang et al. 2022, torchscale) gain γ (depth_constants.h) on fc1, fc2,
//     v_proj, out_proj; cross-attention is not scaled (torchscale skips encoder_attn).
//   admin: after the weights, the profiling pass (admin_pass.h) on random tokens sets every ω.
//   σReparam last: u, v from an exact SVD, γ = σ(W₀) or 1.
#pragma once
#include <cstdint>

namespace stx {

class TransformerImpl;

// Admin's profiling batch in initialize(): kAdminProfileBatch sequences of
// min(kAdminProfileLen, model.max_len) random tokens.
inline constexpr int64_t kAdminProfileBatch = 16, kAdminProfileLen = 64;

// Seeds the global generator with `seed` and initializes every parameter and buffer.
void initialize(TransformerImpl& model, uint64_t seed);

}  // namespace stx
