#include "stx/model/init.h"

#include <cmath>

#include "stx/model/transformer.h"

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

namespace {

void xavier(Linear& l, double gain) {
  torch::nn::init::xavier_normal_(l->weight, gain);
  if (l->bias.defined()) l->bias.zero_();
}

void init_attention(Attention& a, const ModelConfig& cfg, double beta) {
  xavier(a->q_proj, 1.0);
  xavier(a->k_proj, 1.0);
  if (cfg.qk_init == QKInit::Zero) {
    a->q_proj->weight.zero_();
    a->k_proj->weight.zero_();
  }
  xavier(a->v_proj, beta);
  xavier(a->out_proj, beta);
}

void init_stack(Stack& s, const ModelConfig& cfg, double beta) {
  const double d = static_cast<double>(cfg.d_model);
  const int64_t N = s->num_layers();
  for (int64_t i = 0; i < N; ++i) {
    auto& layer = s->layers[i];
    init_attention(layer->self_attn, cfg, beta);
    if (layer->encoder_attn) init_attention(layer->encoder_attn, cfg, beta);
    xavier(layer->ffn->fc1, beta);
    xavier(layer->ffn->fc2, beta);
    if (cfg.scheme == Scheme::PostInit) {
      const double k = static_cast<double>(N - (i + 1) + 1);  // k_l = N − l + 1, l 1-based
      for (auto& p : layer->named_parameters(true))
        if (p.key().size() >= 7 && p.key().compare(p.key().size() - 7, 7, ".weight") == 0 && p.value().dim() == 2)
          p.value().div_(k);
    }
  }
  if (s->embed_positions) torch::nn::init::normal_(s->embed_positions->weight, 0.0, 1.0 / std::sqrt(d));
  if (s->output_projection) xavier(s->output_projection, 1.0);
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
  if (model.encoder) init_stack(model.encoder, cfg, c.encoder_beta);
  if (model.decoder) init_stack(model.decoder, cfg, c.decoder_beta);
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
}

}  // namespace stx
