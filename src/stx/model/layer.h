// stx/model/layer.h — one Transformer layer: self-attention, (decoder with an encoder:)
// cross-attention, FFN; each a residual sub-layer of the configured scheme (residual.h).
// Tap points follow Xiong et al.: x^{post,1..5} / x^{pre,1..5}, cross1..3 for cross-attention,
// "output" for x_{l+1}.
#pragma once
#include <torch/torch.h>

#include <string>

#include "stx/config/config.h"
#include "stx/kernels/fused_features.h"
#include "stx/model/attention.h"
#include "stx/model/ffn.h"
#include "stx/model/incremental.h"
#include "stx/model/norm.h"
#include "stx/model/residual.h"

namespace stx {

// How a layer runs: its sub-layers as one fused node each (kernels/fused_sublayer.h) or composed
// of its modules (model/residual.h). The capability gate (kernels/fused_features.h) chooses.
enum class LayerPath { Fused, Composed };

struct PathChoice {
  LayerPath path = LayerPath::Composed;
  std::string why;  // "every feature the sub-layers ask is implemented" or what is missing
};

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
  // The initialization of the scheme's own parameters: ReZero's α_l = 0, LayerScale's λ_l = ε,
  // Admin's ω = 1 (before profiling), NormFormer's c_attn = w_resid = 1.
  void reset_gains();
  // The path forward() takes on tensors like x (device, type) with `tap` watching, and why.
  PathChoice path_choice(const torch::Tensor& x, const TapSite& tap = {}) const;
  // What each sub-layer asks of the fused path (kernels/fused_features.h) on tensors like x.
  struct Asks {
    Features self, cross, ffn;
  };
  // Compose the sub-layers even where the fused kernels implement them (`stx bench --kernels
  // composed`; the tests that hold the two paths equal).
  void set_composed(bool on) { composed_ = on; }

  Attention self_attn{nullptr}, encoder_attn{nullptr};
  FFN ffn{nullptr};
  Norm self_attn_layer_norm{nullptr}, encoder_attn_layer_norm{nullptr}, final_layer_norm{nullptr};
  // Peri-LN: the norms of the branches' outputs.
  Norm self_attn_out_layer_norm{nullptr}, encoder_attn_out_layer_norm{nullptr}, ffn_out_layer_norm{nullptr};
  // ReZero's α (self_attn_resweight, …) or LayerScale's λ (CaiT's gamma_1, gamma_2; gamma_cross).
  torch::Tensor self_attn_gain, encoder_attn_gain, ffn_gain;
  // Admin's ω [d] per sub-layer, Transformer-Clinic's names: attention_ratio_change (encoder) /
  // self_ratio_change (decoder), encoder_ratio_change (cross-attention), fc_ratio_change (FFN).
  torch::Tensor self_attn_skip, encoder_attn_skip, ffn_skip;
  // NormFormer (Shleifer et al. 2021), fairseq's names and placement: the self-attention output
  // (after out_proj) × c_attn [h] head by head, then attn_ln; ffn_layernorm over d_ff after the
  // activation; the FFN sub-layer's skip path × w_resid [d].
  Norm attn_ln{nullptr}, ffn_layernorm{nullptr};
  torch::Tensor c_attn, w_resid;
  // Set by admin_profile() (admin_pass.h) for the duration of its pass.
  AdminProfile* admin_profile = nullptr;

 private:
  enum Which { kSelf, kCross, kFFN };
  SubLayer sub(Which w);
  torch::Tensor self_attn_out(const torch::Tensor& a);  // NormFormer's c_attn and attn_ln

  Asks asks(const torch::Tensor& x, const TapSite& tap) const;
  torch::Tensor fused_self_attn(const Features& ask, const torch::Tensor& x, const torch::Tensor& self_pad);
  torch::Tensor fused_cross_attn(const Features& ask, const torch::Tensor& x, const torch::Tensor& memory,
                                 const torch::Tensor& memory_pad);
  torch::Tensor fused_ffn(const Features& ask, const torch::Tensor& x);
  torch::Tensor cross_attn(const torch::Tensor& x, const torch::Tensor& memory, const torch::Tensor& memory_pad,
                           const TapSite& tap);

  ResidualSpec spec_;
  bool causal_;
  bool composed_ = false;
  double gain_init_ = 0.0;
  int64_t l_ = 0, heads_ = 1;
  std::string self_skip_name_, cross_skip_name_, ffn_skip_name_;
};
TORCH_MODULE(Layer);

// LayerScale's ε for a stack of L layers: model.layerscale_init, or with 0 CaiT's rule
// (Touvron et al. 2021: 0.1 up to depth 18, 1e-5 up to 24, 1e-6 beyond).
double layerscale_epsilon(const ModelConfig& cfg, int64_t L);

}  // namespace stx
