#include "stx/model/init.h"

#include <algorithm>
#include <cmath>

#include "stx/model/admin_pass.h"
#include "stx/model/depth_constants.h"
#include "stx/model/transformer.h"

namespace stx {

namespace {

// DS-Init (Zhang, Titov, Sennrich 2019): every weight of layer l drawn from U(−b, b),
// b = √(6/(fan_in + fan_out)) · l^(−e) (the paper e = 1/2; its code's variance scaling e = 1/4).
void ds_init_layer(Layer& layer, double e, int64_t l) {
  const double scale = std::pow(static_cast<double>(l), -e);
  for (auto& m : layer->modules(/*include_self=*/false))
    if (auto* lin = dynamic_cast<LinearImpl*>(m.get())) {
      const double fan_out = lin->weight.size(0), fan_in = lin->weight.size(1);
      const double b = std::sqrt(6.0 / (fan_in + fan_out)) * scale;
      lin->weight.uniform_(-b, b);
    }
}

void init_stack(Stack& s, const ModelConfig& cfg, double beta, Side side) {
  const double d = static_cast<double>(cfg.d_model);
  const int64_t N = s->num_layers();
  // T-Fixup (Huang et al. 2020, Algorithm 2): v, out, fc1, fc2 × 0.67·N^(−1/4) in an encoder of
  // N layers, × (9M)^(−1/4) in a decoder of M layers (cross-attention included).
  const double tfix = cfg.scheme != Scheme::TFixup ? 1.0
                      : side == Side::Encoder      ? 0.67 * std::pow(static_cast<double>(N), -0.25)
                                                   : std::pow(9.0 * static_cast<double>(N), -0.25);
  // Sub-LN (Magneto): the same four weights × γ (subln_gamma), cross-attention excepted.
  const double sub = cfg.scheme != Scheme::SubLN
                         ? 1.0
                         : subln_gamma(cfg.arch, cfg.encoder_layers, cfg.decoder_layers, side == Side::Encoder);
  const double g = beta * tfix * sub;
  for (int64_t i = 0; i < N; ++i) {
    auto& layer = s->layers[i];
    layer->self_attn->reset_weights(g);
    // Sub-LN leaves cross-attention out of γ (torchscale skips every "encoder_attn" parameter).
    if (layer->encoder_attn) layer->encoder_attn->reset_weights(beta * tfix);
    layer->ffn->reset_weights(g);
    if (cfg.scheme == Scheme::DSInit) ds_init_layer(layer, cfg.ds_init_exponent, i + 1);
    if (cfg.scheme == Scheme::PostInit) {
      const double k = static_cast<double>(N - (i + 1) + 1);  // k_l = N − l + 1, l 1-based
      for (auto& p : layer->named_parameters(true))
        if (p.key().size() >= 7 && p.key().compare(p.key().size() - 7, 7, ".weight") == 0 && p.value().dim() == 2)
          p.value().div_(k);
    }
  }
  if (s->embed_positions) torch::nn::init::normal_(s->embed_positions->weight, 0.0, 1.0 / std::sqrt(d));
  if (s->output_projection) s->output_projection->reset_xavier(1.0);
}

}  // namespace

void initialize(TransformerImpl& model, uint64_t seed) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(seed);
  const auto& cfg = model.config();
  const auto c = deepnorm_coefficients(cfg);
  const double d = static_cast<double>(cfg.d_model);
  // Token embeddings first (encoder's is the shared one when tied), then each stack.
  if (model.encoder) torch::nn::init::normal_(model.encoder->embed_tokens->weight, 0.0, 1.0 / std::sqrt(d));
  if (model.decoder && !(model.encoder && cfg.tie_embeddings))
    torch::nn::init::normal_(model.decoder->embed_tokens->weight, 0.0, 1.0 / std::sqrt(d));
  if (model.encoder) init_stack(model.encoder, cfg, c.encoder_beta, Side::Encoder);
  if (model.decoder) init_stack(model.decoder, cfg, c.decoder_beta, Side::Decoder);
  if (cfg.scheme == Scheme::TFixup) {  // T-Fixup: embeddings × (9N)^(−1/4) / (9M)^(−1/4); a tied
    // encoder-decoder matrix serves as the decoder's input and output: the decoder's factor.
    const double N = static_cast<double>(cfg.encoder_layers), M = static_cast<double>(cfg.decoder_layers);
    if (model.encoder && !(model.decoder && cfg.tie_embeddings))
      model.encoder->embed_tokens->weight.mul_(std::pow(9.0 * N, -0.25));
    if (model.decoder) model.decoder->embed_tokens->weight.mul_(std::pow(9.0 * M, -0.25));
  }
  // Norms: weight 1, bias 0, Dynamic Tanh α₀; ReZero's α 0, LayerScale's λ ε (set at
  // construction; reset here so re-initialization is complete).
  for (auto& m : model.modules(/*include_self=*/false)) {
    if (auto* n = dynamic_cast<NormImpl*>(m.get())) n->reset();
    if (auto* l = dynamic_cast<LayerImpl*>(m.get())) l->reset_gains();
  }
  // σReparam last, so γ and u, v see the final W₀.
  if (cfg.sigma_reparam)
    for (auto& m : model.modules(/*include_self=*/false))
      if (auto* lin = dynamic_cast<LinearImpl*>(m.get())) lin->reset_sigma(cfg.gamma_init);
  // Admin (Liu et al. 2020) last, as it runs the model: ω from the profiling pass on random
  // tokens; the trainer repeats it on its first batch (train/trainer.cpp).
  if (cfg.scheme == Scheme::Admin)
    admin_profile_random(model, kAdminProfileBatch, std::min(kAdminProfileLen, cfg.max_len));
}

}  // namespace stx
