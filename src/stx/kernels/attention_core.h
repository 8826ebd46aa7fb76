// stx/kernels/attention_core.h — the core of multi-head attention as one autograd node on the
// CPU. Per batch row b and head h (columns h·d_h … (h+1)·d_h of the projections):
//   S = q_h k_hᵀ / √d_h,   S_ij = −1e9 where key j is masked (causal: j > i; key padding),
//   P = softmax(S),   D = dropout(P),   out_h = D v_h                    (Vaswani et al. eq. 1)
// (soft-capped, softcap = c > 0: S ← c·tanh(S/c) before the mask, Gemma 2; softcap_rows.h)
// and by hand in backward, with dP = dD ∘ (dropout mask)/(1 − p):
//   dD = dout_h v_hᵀ,  dv_h = Dᵀ dout_h,  dS = P ∘ (dP − rowsum(dP ∘ P)),
//   dq_h = dS k_h / √d_h,  dk_h = dSᵀ q_h / √d_h.
// The products go to stx's band kernel (band_gemm.h: the causal band only) or, with
// head_products() == Blas, one BLAS gemm per head — either way reading the heads in place through
// the leading dimension: no split, transpose or concat copies, no per-head dispatch. Softmax and
// its backward are row loops over the visible keys only (vec_math.h's exp), head by head while
// the scores are in cache; with dropout, D is formed per head right before D v_h. The
// attention-dropout mask is drawn exactly as torch::dropout draws it (the same generator calls,
// made before the heads), so the result equals the reference path (AttentionImpl, kernels =
// Reference) up to rounding.
#pragma once
#include <torch/torch.h>

namespace stx {

// True when the fused core can run on q: a CPU float32/float64 tensor, and stx was built
// with BLAS (STX_HAVE_BLAS: sgemm_/dgemm_ from libtorch_cpu, kernels/blas.h).
bool attention_core_available(const torch::Tensor& q);

// q: [B, Tq, d], k, v: [B, Tk, d] (row-major; any row stride); key_pad: [B, Tk] bool, true at
// padding (undefined: none). Returns [B, Tq, d]. If `probs` is given it receives P [B, H, Tq, Tk]
// (before dropout; no gradient flows through it). softcap: c (0: none).
torch::Tensor attention_core(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             const torch::Tensor& key_pad, int64_t heads, bool causal, double dropout,
                             torch::Tensor* probs = nullptr, double softcap = 0.0);

// Self-attention on the fused projection qkv = x [W_q; W_k; W_v]ᵀ + b: [B, T, 3d]. Its
// gradient is written as one [B, T, 3d] tensor (no slicing on the way back).
torch::Tensor attention_core_packed(const torch::Tensor& qkv, const torch::Tensor& key_pad, int64_t heads, bool causal,
                                    double dropout, torch::Tensor* probs = nullptr, double softcap = 0.0);

// The same core without an autograd node, for a caller that is itself one (fused_sublayer.h).
// `saved` keeps what the backward pass needs: P [B, H, Tq, Tk], the dropout noise (undefined at
// p = 0), the rows that see no key, and with soft-capping tanh(S/c) [B, H, Tq, Tk] and c.
struct AttentionCoreSaved {
  torch::Tensor probs, noise, blind, capped;
  double softcap = 0.0;
};
torch::Tensor attention_core_packed_forward(const torch::Tensor& qkv, const torch::Tensor& key_pad, int64_t heads,
                                            bool causal, double dropout, AttentionCoreSaved& saved,
                                            double softcap = 0.0);
// The same on separate q [B, Tq, d] and k, v [B, Tk, d] (cross-attention; any row stride, unit
// feature stride), and its backward: dq, dk, dv (new contiguous tensors) from dout [B, Tq, d].
torch::Tensor attention_core_forward(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                     const torch::Tensor& key_pad, int64_t heads, bool causal, double dropout,
                                     AttentionCoreSaved& saved, double softcap = 0.0);
void attention_core_backward(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             const AttentionCoreSaved& saved, int64_t heads, bool causal, const torch::Tensor& dout,
                             torch::Tensor& dq, torch::Tensor& dk, torch::Tensor& dv);
// d(qkv) [B, T, 3d] from dout [B, T, d].
torch::Tensor attention_core_packed_backward(const torch::Tensor& qkv, const AttentionCoreSaved& saved, int64_t heads,
                                             bool causal, const torch::Tensor& dout);

}  // namespace stx
