// stx/model/layer.h — one Transformer layer: self-attention, (decoder with an encoder:)
// cross-attention, FFN; each a residual sub-layer of the configured scheme (residual.h).
// Tap points follow Xiong et al.: x^{post,1..5} / x^{pre,1..5}, cross1..3 for cross-attention,
// "output" for x_{l+1}.
#pragma once
#include <torch/torch.h>

#include "stx/config/config.h"
#include "stx/model/attention.h"
#include "stx/model/ffn.h"
#include "stx/model/incremental.h"
#include "stx/model/norm.h"
#include "stx/model/residual.h"

namespace stx {

class LayerImpl : public torch::nn::Module {
 public:
  // causal: decoder self-attention; cross: has encoder_attn; alpha: DeepNorm's α (else 1).
  LayerImpl(const ModelConfig& cfg, bool causal, bool cross, double alpha);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& self_pad, const torch::Tensor& memory,
                        const torch::Tensor& memory_pad, const TapSite& tap = {});
  // Incremental decoding (eval): x [B, t, d] the newest positions; see AttentionImpl::forward_step.
  torch::Tensor forward_step(const torch::Tensor& x, const torch::Tensor& memory, const torch::Tensor& memory_pad,
                             LayerCache& cache);

  Attention self_attn{nullptr}, encoder_attn{nullptr};
  FFN ffn{nullptr};
  Norm self_attn_layer_norm{nullptr}, encoder_attn_layer_norm{nullptr}, final_layer_norm{nullptr};

 private:
  ResidualSpec spec_;
  bool causal_;
};
TORCH_MODULE(Layer);

}  // namespace stx
