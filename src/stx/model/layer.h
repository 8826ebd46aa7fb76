// stx/model/layer.h — one Transformer layer: self-attention, (decoder with an encoder:)
// cross-attention, FFN; each a residual sub-layer of the configured scheme (residual.h).
// Tap points follow Xiong et al.: x^{post,1..5} / x^{pre,1..5}, cross1..3 for cross-attention,
// "output" for x_{l+1}.
#pragma once
#include <torch/torch.h>

#include <string>

#include "stx/config/config.h"
#include "stx/model/attention.h"
#include "stx/model/ffn.h"
#include "stx/model/incremental.h"
#include "stx/model/norm.h"
#include "stx/model/residual.h"

namespace stx {

class LayerImpl : public torch::nn::Module {
 public:
  // causal: decoder self-attention; cross: has encoder_attn; alpha: DeepNorm's α (else 1);
  // l: this layer's 0-based index in a stack of L layers (Mix-LN, LayerNorm Scaling, depth-scaled).
  LayerImpl(const ModelConfig& cfg, bool causal, bool cross, double alpha, int64_t l, int64_t L);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& self_pad, const torch::Tensor& memory,
                        const torch::Tensor& memory_pad, const TapSite& tap = {});
  // Incremental decoding (eval): x [B, t, d] the newest positions; see AttentionImpl::forward_step.
  torch::Tensor forward_step(const torch::Tensor& x, const torch::Tensor& memory, const torch::Tensor& memory_pad,
                             LayerCache& cache);
  // The initialization of the scheme's own parameters: ReZero's α_l = 0, LayerScale's λ_l = ε.
  void reset_gains();

  Attention self_attn{nullptr}, encoder_attn{nullptr};
  FFN ffn{nullptr};
  Norm self_attn_layer_norm{nullptr}, encoder_attn_layer_norm{nullptr}, final_layer_norm{nullptr};
  // Peri-LN: the norms of the branches' outputs.
  Norm self_attn_out_layer_norm{nullptr}, encoder_attn_out_layer_norm{nullptr}, ffn_out_layer_norm{nullptr};
  // ReZero's α (self_attn_resweight, …) or LayerScale's λ (CaiT's gamma_1, gamma_2; gamma_cross).
  torch::Tensor self_attn_gain, encoder_attn_gain, ffn_gain;

 private:
  enum Which { kSelf, kCross, kFFN };
  SubLayer sub(Which w);

  ResidualSpec spec_;
  bool causal_;
  double gain_init_ = 0.0;
};
TORCH_MODULE(Layer);

// LayerScale's ε for a stack of L layers: model.layerscale_init, or with 0 CaiT's rule
// (Touvron et al. 2021: 0.1 up to depth 18, 1e-5 up to 24, 1e-6 beyond).
double layerscale_epsilon(const ModelConfig& cfg, int64_t L);

}  // namespace stx
