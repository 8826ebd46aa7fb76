// stx/kernels/fused_sublayer.h — a whole sub-layer as one autograd node on the CPU: the norm, the
// projections, the attention core (or the FFN and its activation), the branch's dropout and the
// residual join, forward and backward by hand, products straight to BLAS (kernels/blas.h).
//   Post-LN style:  y = N(α·ω ⊙ x + drop(G(x)))          (Xiong et al. eq. 1; DeepNet eq. 4; Admin)
//   Pre-LN style:   y = x + drop(c·γ ⊙ N_out(G(s·N(x))))  (Xiong et al.; ReZero, LayerScale, Peri-LN)
//   (the join and its backward: fused_join.h)
//   self-attention: G(h) = M(attn(h W_qkvᵀ + b_qkv)) W_oᵀ + b_o     (attention_core.h)
//   FFN:            G(h) = M(act(h W₁ᵀ + b₁)) W₂ᵀ + b₂,  act = ReLU or GELU (erf form)
//   M: Sub-LN's inner norm (Magneto), else the identity
// Backward: the join's gives dG from dy; dW = dGᵀ·h, db = Σ_rows dG, dh = dG·W for each product
//   in reverse; the join's again adds dh to dx (through N, Pre-LN style).
// It replaces some 170 LibTorch ops and autograd nodes per sub-layer with one node, where the
// framework's per-op cost is what separates a small model's step from its products
// (docs/performance.md#what-the-cpu-step-is-made-of). The weights are inputs (step_weight(): σReparam's W/σ
// passes through), so autograd still reaches every parameter. Dropout draws its seed where
// stx::dropout would, and the attention core its mask where attention_core.h does, so the
// result equals the composed path (model/residual.cpp, kernels = Fused) up to rounding:
// tests/test_kernels.cpp checks float64 to 1e-12 and float32 to 2e-5.
#pragma once
#include <torch/torch.h>

#include "stx/config/config.h"
#include "stx/kernels/fused_features.h"
#include "stx/kernels/fused_join.h"

namespace stx {

// What each fused sub-layer implements (fused_features.h): the joins, the norms, the branch's
// options below, on CPU float32/float64 tensors; nothing when stx was built without BLAS. Each
// kernel takes the layer's ask and refuses one outside its set.
const Features& fused_attention_implements();
const Features& fused_cross_attention_implements();
const Features& fused_ffn_implements();

// Self-attention. x [B, T, d]; key_pad [B, T] bool (true at padding) or undefined; every bias
// undefined when absent. attention_dropout: on P (0 outside training). softcap: Gemma 2's c on the
// scores (0: none; attention_core.h). inner: Sub-LN's norm on
// the core's output before W_o; q_norm, k_norm: QK-LayerNorm's over each head's queries and keys
// (undefined: none; kernels/inner_norms.h).
torch::Tensor fused_attention_sublayer(const Features& asked, const torch::Tensor& x, const torch::Tensor& key_pad,
                                       int64_t heads, bool causal, double attention_dropout, double softcap,
                                       const FusedJoin& join, const JoinWeights& jw, const NormWeights& inner,
                                       const NormWeights& q_norm, const NormWeights& k_norm, const torch::Tensor& wq,
                                       const torch::Tensor& wk, const torch::Tensor& wv, const torch::Tensor& bq,
                                       const torch::Tensor& bk, const torch::Tensor& bv, const torch::Tensor& wo,
                                       const torch::Tensor& bo);

// Cross-attention (a decoder layer's, fused_cross_attention.cpp): queries from x [B, T, d], keys
// and values from memory [B, Tk, d] (the encoder's output), memory_pad [B, Tk] bool or undefined;
// no causal band; inner: Sub-LN's norm before W_o; q_norm, k_norm: QK-LayerNorm's.
torch::Tensor fused_cross_attention_sublayer(const Features& asked, const torch::Tensor& x, const torch::Tensor& memory,
                                             const torch::Tensor& memory_pad, int64_t heads, double attention_dropout,
                                             double softcap, const FusedJoin& join, const JoinWeights& jw,
                                             const NormWeights& inner, const NormWeights& q_norm,
                                             const NormWeights& k_norm, const torch::Tensor& wq,
                                             const torch::Tensor& wk, const torch::Tensor& wv, const torch::Tensor& bq,
                                             const torch::Tensor& bk, const torch::Tensor& bv, const torch::Tensor& wo,
                                             const torch::Tensor& bo);

// Feed-forward. w1 [d_ff, d], w2 [d, d_ff]; gelu: GELU (erf form), else ReLU. mid: Sub-LN's
// or NormFormer's norm on the activation before W₂ (undefined: none).
torch::Tensor fused_ffn_sublayer(const Features& asked, const torch::Tensor& x, bool gelu, const FusedJoin& join,
                                 const JoinWeights& jw, const NormWeights& mid, const torch::Tensor& w1,
                                 const torch::Tensor& b1, const torch::Tensor& w2, const torch::Tensor& b2);

}  // namespace stx
