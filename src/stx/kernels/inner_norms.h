// stx/kernels/inner_norms.h — the norms a fused sub-layer (fused_sublayer.cpp) applies inside G,
// forward and backward on fused_join.h's norm rows:
//   InnerNorm: Sub-LN's (Magneto, Wang et al. 2022) on the attention core's output before W_o,
//              Sub-LN's and NormFormer's on the FFN's activation before W₂;
//   QKNorm:    QK-LayerNorm (Dehghani et al. 2023), a LayerNorm over each head's d_h columns of
//              the queries and of the keys before the scores, with its own weight and bias [d_h].
// Each holds what its backward needs (the node keeps the object: fused_node.h).
#pragma once
#include <torch/torch.h>

#include <vector>

#include "stx/kernels/fused_join.h"

namespace stx {

// The norm Sub-LN (Magneto, Wang et al. 2022) and NormFormer put inside G: on the attention
// core's output before W_o, on the FFN's activation before W₂; the kind and ε of the join's norm.
// Absent: the identity.
struct InnerNorm {
  torch::Tensor w, b, a;               // weight, bias, Dynamic Tanh's α (w undefined: absent)
  torch::Tensor out, xhat, rstd;       // its output and saved rows
  torch::Tensor dw, db, da;            // its gradients, when not direct
  static constexpr size_t kCount = 3;  // its parameters among the node's inputs

  torch::Tensor forward(const torch::Tensor& x, const FusedJoin& j) {
    if (!w.defined()) return x;
    return out = norm_forward(x, {}, 1.0, w, b, a, j.centered, j.eps, xhat, rstd);
  }
  // The input of the product after it: its output, or x.
  const torch::Tensor& output(const torch::Tensor& x) const { return w.defined() ? out : x; }
  // Its input's gradient from its output's; its parameters' gradients added to the node's direct
  // targets g[at], g[at + 1], g[at + 2] (g empty: into dw, db, da).
  torch::Tensor backward(const torch::Tensor& dy, const FusedJoin& j, const std::vector<torch::Tensor>& g, size_t at) {
    if (!w.defined()) return dy;
    const torch::Tensor none;
    const auto target = [&](size_t i) -> const torch::Tensor& { return g.empty() ? none : g[at + i]; };
    return norm_backward(dy, xhat, rstd, w, b.defined(), a, j.centered, target(0), target(1), target(2), dw, db, da);
  }
};

// QK-LayerNorm on the packed [B, T, 3d] projections: the q and k parts, each [N, h, d_h], normalized
// row by row of d_h; v passes through. Absent (qw undefined): qkv itself.
struct QKNorm {
  torch::Tensor qw, qb, kw, kb;            // the two norms' weights and biases
  torch::Tensor qhat, qrstd, khat, krstd;  // their saved rows
  torch::Tensor dqw, dqb, dkw, dkb;        // their gradients, when not direct
  static constexpr size_t kCount = 4;      // its parameters among the node's inputs

  // The part p (0: q, 1: k, 2: v) of qkv as contiguous [N·h, d_h] rows.
  static torch::Tensor part(const torch::Tensor& qkv, int64_t p, int64_t heads) {
    const int64_t d3 = qkv.size(-1), dh = d3 / 3 / heads;
    return qkv.reshape({-1, 3, heads, dh}).select(1, p).reshape({-1, dh});
  }
  torch::Tensor forward(const torch::Tensor& qkv, int64_t heads, double eps) {
    if (!qw.defined()) return qkv;
    const torch::Tensor none;
    auto q = norm_forward(part(qkv, 0, heads), none, 1.0, qw, qb, none, true, eps, qhat, qrstd);
    auto k = norm_forward(part(qkv, 1, heads), none, 1.0, kw, kb, none, true, eps, khat, krstd);
    return join_parts(q, k, part(qkv, 2, heads), qkv, heads);
  }
  // dqkv of the normalized projections → of the projections; the norms' parameter gradients into
  // the node's direct targets g[at …] (g empty: into dqw, dqb, dkw, dkb).
  torch::Tensor backward(const torch::Tensor& dqkv, int64_t heads, const std::vector<torch::Tensor>& g, size_t at) {
    if (!qw.defined()) return dqkv;
    const torch::Tensor none;
    const auto target = [&](size_t i) -> const torch::Tensor& { return g.empty() ? none : g[at + i]; };
    torch::Tensor da;
    auto dq = norm_backward(part(dqkv, 0, heads), qhat, qrstd, qw, qb.defined(), none, true, target(0), target(1), none,
                            dqw, dqb, da);
    auto dk = norm_backward(part(dqkv, 1, heads), khat, krstd, kw, kb.defined(), none, true, target(2), target(3), none,
                            dkw, dkb, da);
    return join_parts(dq, dk, part(dqkv, 2, heads), dqkv, heads);
  }

 private:
  static torch::Tensor join_parts(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                  const torch::Tensor& like, int64_t heads) {
    const int64_t dh = q.size(-1);
    auto out = torch::empty_like(like);
    auto parts = out.view({-1, 3, heads, dh});
    parts.select(1, 0).copy_(q.view({-1, heads, dh}));
    parts.select(1, 1).copy_(k.view({-1, heads, dh}));
    parts.select(1, 2).copy_(v.view({-1, heads, dh}));
    return out;
  }
};

}  // namespace stx
