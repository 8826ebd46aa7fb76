// stx/model/stack.h — an encoder or decoder stack: embedding, N layers, the final norm (Pre-LN
// only) and, on the output side of an untied model, the output projection.
#pragma once
#include <torch/torch.h>

#include <string>
#include <vector>

#include "stx/config/config.h"
#include "stx/model/embedding.h"
#include "stx/model/layer.h"
#include "stx/model/linear.h"
#include "stx/model/norm.h"
#include "stx/model/taps.h"

namespace stx {

enum class Side { Encoder, Decoder };

class StackImpl : public torch::nn::Module {
 public:
  // alpha: DeepNorm's α for this side (1 otherwise). shared_tokens: the tied encoder-decoder
  // embedding owned by the encoder (not registered here). output_head: create an untied
  // output_projection in this stack.
  StackImpl(const ModelConfig& cfg, Side side, double alpha, Table shared_tokens, bool output_head);

  // tokens [B, T] → hidden [B, T, d]. memory/memory_pad: the encoder output and its padding
  // mask (decoder of an encoder-decoder model only).
  torch::Tensor forward(const torch::Tensor& tokens, const torch::Tensor& memory, const torch::Tensor& memory_pad,
                        Taps* taps = nullptr);
  // The layers (and final norm) on an already embedded x₀ [B, T, d] — the theory experiments
  // feed Gaussian inputs here. self_pad: [B, T] padding mask or undefined.
  torch::Tensor run_layers(torch::Tensor x, const torch::Tensor& self_pad, const torch::Tensor& memory,
                           const torch::Tensor& memory_pad, Taps* taps = nullptr);
  // Incremental decoding (decoder, eval): hidden [B, t, d] of the next t tokens [B, t] at
  // positions cache.length …; memory/memory_pad are read on the first step only (cached).
  torch::Tensor step(const torch::Tensor& tokens, const torch::Tensor& memory, const torch::Tensor& memory_pad,
                     DecoderCache& cache);
  // Key-padding mask of tokens ([B, T] bool, true at padding), undefined when pad_id < 0.
  torch::Tensor padding_mask(const torch::Tensor& tokens) const;

  Side side() const { return side_; }
  const std::string& name() const { return name_; }
  int64_t num_layers() const { return static_cast<int64_t>(layers.size()); }
  // Recompute each layer's activations in backward (model/recompute.h) when training
  // with gradients and no taps.
  void set_checkpoint_activations(bool on) { checkpoint_activations_ = on; }

  Table embed_tokens{nullptr}, embed_positions{nullptr};
  std::vector<Layer> layers;  // registered as layers.{i}
  Norm layer_norm{nullptr};   // Pre-LN final norm
  Linear output_projection{nullptr};

 private:
  Side side_;
  std::string name_;
  int64_t pad_id_;
  bool checkpoint_activations_ = false;
  Embedder embed_;
  torch::nn::ModuleList layer_list_;
};
TORCH_MODULE(Stack);

}  // namespace stx
