// stx/model/init.h — initialization schemes.
//   Xavier normal N(0, gain²·2/(fan_in+fan_out)) for every linear weight, zero biases.
//   deepnorm: gain β on ffn.fc1, ffn.fc2, v_proj, out_proj (every attention); α, β from
//     DeepNet (Wang et al. 2022) Table/§4: encoder-only α=(2N)^¼ β=(8N)^−¼; decoder-only
//     α=(2M)^¼ β=(8M)^−¼; encoder-decoder encoder α=0.81(N⁴M)^{1/16} β=0.87(N⁴M)^{−1/16},
//     decoder α=(3M)^¼ β=(12M)^−¼.
//   post-init: DeepNet §3 Post-LN-init, layer l's linear weights divided by N−l+1.
//   sub-ln: Magneto's (Wang et al. 2022, torchscale) gain γ on fc1, fc2, v_proj, out_proj:
//     encoder-only √log 2N, decoder-only √log 2M; encoder-decoder encoder √(log 3M · log 2N / 3),
//     decoder √log 3M; cross-attention is not scaled (torchscale skips encoder_attn).
//   admin: after the weights, the profiling pass (admin.h) on random tokens sets every ω.
//   σReparam last: u, v from an exact SVD, γ = σ(W₀) or 1.
#pragma once
#include <cstdint>

#include "stx/config/config.h"

namespace stx {

class TransformerImpl;

struct DeepNormCoefficients {
  double encoder_alpha = 1, encoder_beta = 1, decoder_alpha = 1, decoder_beta = 1;
};

// α, β for an architecture with N encoder and M decoder layers (the paper's table).
DeepNormCoefficients deepnorm_coefficients(Arch arch, int64_t N, int64_t M);
// The coefficients the model uses: the table for scheme deepnorm, all ones otherwise.
DeepNormCoefficients deepnorm_coefficients(const ModelConfig& cfg);

// Sub-LN's γ for the encoder (encoder = true) or decoder of an architecture (1 when it has none).
double subln_gamma(Arch arch, int64_t N, int64_t M, bool encoder);

// Admin's profiling batch in initialize(): kAdminProfileBatch sequences of
// min(kAdminProfileLen, model.max_len) random tokens.
inline constexpr int64_t kAdminProfileBatch = 16, kAdminProfileLen = 64;

// Seeds the global generator with `seed` and initializes every parameter and buffer.
void initialize(TransformerImpl& model, uint64_t seed);

}  // namespace stx
