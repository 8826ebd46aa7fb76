// stx/model/transformer.h — the whole model for each architecture:
//   encoder-only: logits = Enc(src) W_outᵀ
//   decoder-only (causal LM): logits = Dec(tgt) W_outᵀ
//   encoder-decoder: logits = Dec(tgt, Enc(src)) W_outᵀ
// W_out is the tied embedding or an untied output_projection (σReparam-capable).
#pragma once
#include <torch/torch.h>

#include "stx/config/config.h"
#include "stx/model/stack.h"
#include "stx/model/taps.h"

namespace stx {

class TransformerImpl : public torch::nn::Module {
 public:
  explicit TransformerImpl(const ModelConfig& cfg);

  // Final hidden state (before the vocabulary projection): [B, T, d].
  torch::Tensor hidden(const torch::Tensor& src, const torch::Tensor& tgt, Taps* taps = nullptr);
  // Logits [B, T, V] over src (encoder-only) or tgt positions; recorded as tap "logits".
  // Padding (model.pad_id) on the right only (model/attention.h).
  torch::Tensor forward(const torch::Tensor& src, const torch::Tensor& tgt, Taps* taps = nullptr);
  torch::Tensor project(const torch::Tensor& h);  // h W_outᵀ

  const ModelConfig& config() const { return cfg_; }
  // train.checkpoint_activations: per-layer activation checkpointing in every stack.
  void set_checkpoint_activations(bool on) {
    if (encoder) encoder->set_checkpoint_activations(on);
    if (decoder) decoder->set_checkpoint_activations(on);
  }
  // Every layer composed (LayerPath::Composed: `stx bench --kernels composed`, tests), or each
  // where the capability gate allows fused (the default).
  void set_layer_path(LayerPath p);
  // The path a training step's layers take on tensors like `like` (device, type; no taps), and
  // why: fused when every layer runs fused, else the first composed layer's reason.
  PathChoice layer_path(const torch::Tensor& like) const;
  // Parameters and buffers under their docs/model.md names, in registration order.
  std::vector<std::pair<std::string, torch::Tensor>> state() const;

  Stack encoder{nullptr}, decoder{nullptr};

 private:
  Stack& output_stack() { return decoder ? decoder : encoder; }
  ModelConfig cfg_;
};
TORCH_MODULE(Transformer);

}  // namespace stx
