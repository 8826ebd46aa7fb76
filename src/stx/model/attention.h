// stx/model/attention.h — multi-head attention (Vaswani et al. 2017):
//   A = softmax(q kᵀ / √d_h + mask),  out = concat_h(A v) W_outᵀ + b_out
// Heads split the feature axis contiguously. Masked scores are replaced by −1e9.
// QK-LayerNorm (Dehghani et al. 2023; Wortsman et al. 2023): q and k each pass a LayerNorm
// over d_h (q_norm, k_norm, shared by the heads) before the product. Soft-capping (Gemma 2):
// scores z ← c·tanh(z/c) before the mask. Sub-LN (Wang et al. 2022, Magneto): a norm
// `inner_attn_ln` over the concatenated heads before out_proj (torchscale: self-attention only).
#pragma once
#include <torch/torch.h>

#include "stx/kernels/fused_features.h"
#include "stx/kernels/fused_sublayer.h"
#include "stx/model/linear.h"
#include "stx/model/norm.h"
#include "stx/model/taps.h"

namespace stx {

class AttentionImpl : public torch::nn::Module {
 public:
  // model.d_model, n_heads, bias, sigma_reparam, attention_dropout, qk_norm, attn_softcap;
  // inner_norm: Sub-LN's inner_attn_ln (model.norm).
  explicit AttentionImpl(const ModelConfig& m, bool inner_norm = false);
  // x: [B, Tq, d] queries; memory: [B, Tk, d] keys/values (x itself for self-attention).
  // key_pad: [B, Tk] bool, true where the key is padding (undefined: none). causal: mask
  // keys after the query. Records "probs" at `tap` when asked. Padding must be on the right
  // (as stx's batches are): causal self-attention through SDPA (cuda) leaves key_pad to the
  // causal mask, so outputs at padded positions — and at any position after a pad — differ
  // from the CPU path's.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& memory, const torch::Tensor& key_pad, bool causal,
                        const TapSite& tap = {});
  // Incremental decoding (eval): x [B, t, d] are the newest t positions. Self-attention
  // (memory undefined): their keys/values are appended to k, v [B, H, L, d_h] (undefined at
  // first) and query i attends to keys 0 … L+i. Cross-attention: k, v are computed from memory
  // when undefined, then reused. Equals forward() on the whole prefix up to rounding.
  torch::Tensor forward_step(const torch::Tensor& x, const torch::Tensor& memory, const torch::Tensor& key_pad,
                             torch::Tensor& k, torch::Tensor& v);

  // The init rule (model/init.h): Xavier on q, k (zero with model.qk_init: zero), and on v, out
  // with gain `beta` (DeepNet's β, T-Fixup's and Sub-LN's factors; 1 otherwise).
  void reset_weights(double beta);

  // The fused path (kernels/fused_sublayer.h): what this branch asks of it, and the branch as the
  // fused node takes it (causal: self-attention's band; dropout only when training).
  Features fused_features(bool training) const;
  AttentionBranch fused_branch(bool causal, bool training);

  Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, out_proj{nullptr};
  Norm q_norm{nullptr}, k_norm{nullptr};  // QK-LayerNorm only
  Norm inner_attn_ln{nullptr};            // Sub-LN only

 private:
  torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                       const torch::Tensor& mask, const TapSite& tap);  // [B,H,Tq,d_h] → [B,Tq,d]
  torch::Tensor attend_sdpa(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                            const torch::Tensor& key_pad, bool causal);  // no taps, no soft-capping
  // [B, T, d] → [B, H, T, d_h], through q_norm / k_norm when given.
  torch::Tensor heads(const torch::Tensor& t, Norm& norm);
  torch::Tensor project_out(const torch::Tensor& heads_out);  // [B, T, d] → (inner_attn_ln) → out_proj
  const ModelConfig cfg_;  // the options the component reads (a new one needs no new member)
  int64_t heads_, d_head_;
};
TORCH_MODULE(Attention);

}  // namespace stx
