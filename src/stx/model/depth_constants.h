// stx/model/depth_constants.h — the constants a scheme derives from the depths N (encoder) and
// M (decoder) of its architecture, used by the layers (α) and by the initialization (β, γ):
//   DeepNet (Wang et al. 2022), Table/§4: encoder-only α=(2N)^¼ β=(8N)^−¼; decoder-only
//     α=(2M)^¼ β=(8M)^−¼; encoder-decoder encoder α=0.81(N⁴M)^{1/16} β=0.87(N⁴M)^{−1/16},
//     decoder α=(3M)^¼ β=(12M)^−¼.
//   Magneto / Sub-LN (Wang et al. 2022, torchscale): γ encoder-only √log 2N, decoder-only
//     √log 2M; encoder-decoder encoder √(log 3M · log 2N / 3), decoder √log 3M.
#pragma once
#include <cstdint>

#include "stx/config/config.h"

namespace stx {

struct DeepNormCoefficients {
  double encoder_alpha = 1, encoder_beta = 1, decoder_alpha = 1, decoder_beta = 1;
};

// α, β for an architecture with N encoder and M decoder layers (the paper's table).
DeepNormCoefficients deepnorm_coefficients(Arch arch, int64_t N, int64_t M);
// The coefficients the model uses: the table for scheme deepnorm, all ones otherwise.
DeepNormCoefficients deepnorm_coefficients(const ModelConfig& cfg);

// Sub-LN's γ for the encoder (encoder = true) or decoder of an architecture (1 when it has none).
double subln_gamma(Arch arch, int64_t N, int64_t M, bool encoder);

}  // namespace stx
