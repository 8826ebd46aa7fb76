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

// The attention branch G of a sub-layer, self or cross: its options and its parameters (the
// products' as step_weight() gives them: σReparam's W/σ passes through). Undefined: absent.
struct AttentionBranch {
  int64_t heads = 1;
  bool causal = false;   // the causal band (self-attention only)
  double dropout = 0.0;  // on P (0 outside training)
  double softcap = 0.0;  // Gemma 2's c on the scores (0: none; attention_core.h)
  torch::Tensor wq, wk, wv, bq, bk, bv, wo, bo;
  NormWeights inner;           // Sub-LN's norm on the core's output before W_o
  NormWeights q_norm, k_norm;  // QK-LayerNorm's over each head's queries and keys (inner_norms.h)
};

// The FFN branch G(h) = M(act(h W₁ᵀ + b₁)) W₂ᵀ + b₂.
struct FFNBranch {
  bool gelu = false;             // GELU (erf form), else ReLU
  torch::Tensor w1, b1, w2, b2;  // w1 [d_ff, d], w2 [d, d_ff]
  NormWeights mid;               // M: Sub-LN's or NormFormer's norm on the activation before W₂
};

// Self-attention. x [B, T, d]; key_pad [B, T] bool (true at padding) or undefined.
torch::Tensor fused_attention_sublayer(const Features& asked, const torch::Tensor& x, const torch::Tensor& key_pad,
                                       const FusedJoin& join, const JoinWeights& jw, const AttentionBranch& g);

// Cross-attention (a decoder layer's, fused_cross_attention.cpp): queries from x [B, T, d], keys
// and values from memory [B, Tk, d] (the encoder's output), memory_pad [B, Tk] bool or undefined;
// g.causal must be false.
torch::Tensor fused_cross_attention_sublayer(const Features& asked, const torch::Tensor& x, const torch::Tensor& memory,
                                             const torch::Tensor& memory_pad, const FusedJoin& join,
                                             const JoinWeights& jw, const AttentionBranch& g);

// Feed-forward.
torch::Tensor fused_ffn_sublayer(const Features& asked, const torch::Tensor& x, const FusedJoin& join,
                                 const JoinWeights& jw, const FFNBranch& g);

}  // namespace stx
