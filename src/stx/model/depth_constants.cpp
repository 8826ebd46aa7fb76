#include "stx/model/depth_constants.h"

#include <cmath>

namespace stx {

DeepNormCoefficients deepnorm_coefficients(Arch arch, int64_t N, int64_t M) {
  DeepNormCoefficients c;
  const double n = static_cast<double>(N), m = static_cast<double>(M);
  switch (arch) {
    case Arch::Encoder:
      c.encoder_alpha = std::pow(2 * n, 0.25);
      c.encoder_beta = std::pow(8 * n, -0.25);
      break;
    case Arch::Decoder:
      c.decoder_alpha = std::pow(2 * m, 0.25);
      c.decoder_beta = std::pow(8 * m, -0.25);
      break;
    case Arch::EncoderDecoder:
      c.encoder_alpha = 0.81 * std::pow(std::pow(n, 4) * m, 1.0 / 16);
      c.encoder_beta = 0.87 * std::pow(std::pow(n, 4) * m, -1.0 / 16);
      c.decoder_alpha = std::pow(3 * m, 0.25);
      c.decoder_beta = std::pow(12 * m, -0.25);
      break;
  }
  return c;
}

DeepNormCoefficients deepnorm_coefficients(const ModelConfig& cfg) {
  if (cfg.scheme != Scheme::DeepNorm) return {};
  return deepnorm_coefficients(cfg.arch, cfg.encoder_layers, cfg.decoder_layers);
}

double subln_gamma(Arch arch, int64_t N, int64_t M, bool encoder) {
  const double n = static_cast<double>(N), m = static_cast<double>(M);
  switch (arch) {
    case Arch::Encoder: return encoder ? std::sqrt(std::log(2 * n)) : 1.0;
    case Arch::Decoder: return encoder ? 1.0 : std::sqrt(std::log(2 * m));
    case Arch::EncoderDecoder:
      return encoder ? std::sqrt(std::log(3 * m) * std::log(2 * n) / 3) : std::sqrt(std::log(3 * m));
  }
  return 1.0;
}

}  // namespace stx
