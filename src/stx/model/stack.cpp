#include "stx/model/stack.h"

#include "stx/config/schemes.h"
#include "stx/model/recompute.h"

namespace stx {

StackImpl::StackImpl(const ModelConfig& cfg, Side side, double alpha, Table shared_tokens, bool output_head)
    : side_(side), name_(side == Side::Encoder ? "encoder" : "decoder"), pad_id_(cfg.pad_id), embed_(cfg) {
  embed_tokens = shared_tokens ? shared_tokens : register_module("embed_tokens", Table(cfg.vocab_size, cfg.d_model));
  if (cfg.positions == Positions::Learned)
    embed_positions = register_module("embed_positions", Table(cfg.max_len, cfg.d_model));
  const bool decoder = side == Side::Decoder;
  const bool cross = decoder && cfg.arch == Arch::EncoderDecoder;
  const int64_t n = decoder ? cfg.decoder_layers : cfg.encoder_layers;
  layer_list_ = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < n; ++i) {
    layers.push_back(Layer(cfg, /*causal=*/decoder, cross, alpha, i, n));
    layer_list_->push_back(layers.back());
  }
  if (has_final_norm(cfg.scheme))
    layer_norm = register_module("layer_norm", Norm(cfg.norm, cfg.d_model, cfg.norm_eps, cfg.dyt_alpha));
  if (output_head)
    output_projection = register_module(
        "output_projection", Linear(cfg.d_model, cfg.vocab_size, LinearOptions{/*bias=*/false, cfg.sigma_reparam}));
}

torch::Tensor StackImpl::padding_mask(const torch::Tensor& tokens) const {
  if (pad_id_ < 0) return {};
  return tokens.eq(pad_id_);
}

torch::Tensor StackImpl::forward(const torch::Tensor& tokens, const torch::Tensor& memory,
                                 const torch::Tensor& memory_pad, Taps* taps) {
  auto x =
      embed_(tokens, embed_tokens->weight, embed_positions ? embed_positions->weight : torch::Tensor(), is_training());
  if (taps) taps->record(name_ + ".embed", x);
  return run_layers(x, padding_mask(tokens), memory, memory_pad, taps);
}

torch::Tensor StackImpl::step(const torch::Tensor& tokens, const torch::Tensor& memory, const torch::Tensor& memory_pad,
                              DecoderCache& cache) {
  if (cache.layers.empty()) {
    cache.layers.resize(layers.size());
    cache.memory_pad = memory_pad;
  }
  auto x = embed_(tokens, embed_tokens->weight, embed_positions ? embed_positions->weight : torch::Tensor(), false,
                  cache.length);
  for (size_t i = 0; i < layers.size(); ++i) x = layers[i]->forward_step(x, memory, cache.memory_pad, cache.layers[i]);
  if (layer_norm) x = layer_norm->forward(x);
  cache.length += tokens.size(1);
  return x;
}

torch::Tensor StackImpl::run_layers(torch::Tensor x, const torch::Tensor& self_pad, const torch::Tensor& memory,
                                    const torch::Tensor& memory_pad, Taps* taps) {
  const TapSite site{taps, name_ + "."};
  if (checkpoint_activations_ && is_training() && torch::GradMode::is_enabled() && !taps) {
    for (auto& layer : layers) x = checkpointed_layer(*layer, x, self_pad, memory, memory_pad);
  } else {
    for (size_t i = 0; i < layers.size(); ++i)
      x = layers[i]->forward(x, self_pad, memory, memory_pad, site.sub("layers." + std::to_string(i)));
  }
  if (layer_norm) {
    site("layer_norm.input", x);
    x = layer_norm->forward(x);
  }
  site("out", x);
  return x;
}

}  // namespace stx
