// stx/kernels/fused_sublayer.h — a whole sub-layer as one autograd node on the CPU: the norm, the
// projections, the attention core (or the FFN and its activation), the branch's dropout and the
// residual join, forward and backward by hand, products straight to BLAS (kernels/blas.h).
//   Post-LN style:  y = N(α·x + drop(G(x)))                 (Xiong et al. eq. 1; DeepNet eq. 4)
//   Pre-LN style:   y = x + drop(c · G(s · N(x)))            (Xiong et al.; residual.h's c, s)
//   self-attention: G(h) = attn(h W_qkvᵀ + b_qkv) W_oᵀ + b_o     (attention_core.h)
//   FFN:            G(h) = act(h W₁ᵀ + b₁) W₂ᵀ + b₂,  act = ReLU or GELU (erf form)
// Backward, with g the branch's output and drop's mask m/(1 − p):
//   dg = dy (Pre) or ds = N'(dy) (Post: dx = α·ds);  dW = dGᵀ·h, db = Σ_rows dG, dh = dG·W for
//   each product in reverse; the norm's backward as norm_rows.h; dx = dy + N'(s·dh) (Pre) or
//   α·ds + dh (Post).
// It replaces some 170 LibTorch ops and autograd nodes per sub-layer with one node, where the
// framework's per-op cost is what separates a small model's step from its products
// (docs/performance.md#fused-layer). The weights are inputs (step_weight(): σReparam's W/σ
// passes through), so autograd still reaches every parameter. Dropout draws its seed where
// stx::dropout would, and the attention core its mask where attention_core.h does, so the
// result equals the composed path (model/residual.cpp, kernels = Fused) up to rounding:
// tests/test_kernels.cpp checks float64 to 1e-12 and float32 to 2e-5.
#pragma once
#include <torch/torch.h>

#include "stx/config/config.h"

namespace stx {

// The residual join around G (residual.h's ResidualSpec, for the schemes without gains, skip
// weights or output norms).
struct FusedJoin {
  bool pre = false;           // Pre-LN style (else Post-LN style)
  bool centered = true;       // LayerNorm (else RMSNorm)
  double eps = 1e-5;          // the norm's ε
  double alpha = 1.0;         // Post-LN style: DeepNorm's α
  double norm_scale = 1.0;    // Pre-LN style: s (LayerNorm Scaling)
  double branch_scale = 1.0;  // Pre-LN style: c (depth-scaled)
  double dropout = 0.0;       // on the branch's output; 0 outside training
};

// True when the fused sub-layer can run on x: CPU float32/float64, kernels() == Fused and
// layer_path() == Fused (kernels.h), stx built
// with BLAS, and a LayerNorm or RMSNorm.
bool fused_sublayer_available(const torch::Tensor& x, NormKind kind);

// Self-attention. x [B, T, d]; key_pad [B, T] bool (true at padding) or undefined; norm_b and
// every bias undefined when absent. attention_dropout: on P (0 outside training).
torch::Tensor fused_attention_sublayer(const torch::Tensor& x, const torch::Tensor& key_pad, int64_t heads, bool causal,
                                       double attention_dropout, const FusedJoin& join, const torch::Tensor& norm_w,
                                       const torch::Tensor& norm_b, const torch::Tensor& wq, const torch::Tensor& wk,
                                       const torch::Tensor& wv, const torch::Tensor& bq, const torch::Tensor& bk,
                                       const torch::Tensor& bv, const torch::Tensor& wo, const torch::Tensor& bo);

// Feed-forward. w1 [d_ff, d], w2 [d, d_ff]; gelu: GELU (erf form), else ReLU.
torch::Tensor fused_ffn_sublayer(const torch::Tensor& x, bool gelu, const FusedJoin& join, const torch::Tensor& norm_w,
                                 const torch::Tensor& norm_b, const torch::Tensor& w1, const torch::Tensor& b1,
                                 const torch::Tensor& w2, const torch::Tensor& b2);

}  // namespace stx
