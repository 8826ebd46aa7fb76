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
// row by row of d_h; v passes through. Absent (qw undefined): qkv itself. Cross-attention's
// separate q and k: forward_q, forward_k.
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
  // Cross-attention's separate q [.., d] and k [.., d] (contiguous): each head's d_h columns
  // normalized, as the packed parts above. Absent: q, k themselves.
  torch::Tensor forward_q(const torch::Tensor& q, int64_t heads, double eps) {
    return qw.defined() ? rows(q, heads, qw, qb, eps, qhat, qrstd) : q;
  }
  torch::Tensor forward_k(const torch::Tensor& k, int64_t heads, double eps) {
    return kw.defined() ? rows(k, heads, kw, kb, eps, khat, krstd) : k;
  }
  // Their backward: dq (dk) of the normalized → of the projection; the parameter gradients as below.
  torch::Tensor backward_q(const torch::Tensor& dq, int64_t heads, const std::vector<torch::Tensor>& g, size_t at) {
    return qw.defined() ? rows_backward(dq, heads, qhat, qrstd, qw, qb, g, at, dqw, dqb) : dq;
  }
  torch::Tensor backward_k(const torch::Tensor& dk, int64_t heads, const std::vector<torch::Tensor>& g, size_t at) {
    return kw.defined() ? rows_backward(dk, heads, khat, krstd, kw, kb, g, at + 2, dkw, dkb) : dk;
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
  static torch::Tensor rows(const torch::Tensor& x, int64_t heads, const torch::Tensor& w, const torch::Tensor& b,
                            double eps, torch::Tensor& hat, torch::Tensor& rstd) {
    const torch::Tensor none;
    const auto xc = x.contiguous();
    return norm_forward(xc.view({-1, xc.size(-1) / heads}), none, 1.0, w, b, none, true, eps, hat, rstd)
        .view(x.sizes());
  }
  static torch::Tensor rows_backward(const torch::Tensor& dy, int64_t heads, const torch::Tensor& hat,
                                     const torch::Tensor& rstd, const torch::Tensor& w, const torch::Tensor& b,
                                     const std::vector<torch::Tensor>& g, size_t at, torch::Tensor& dw,
                                     torch::Tensor& db) {
    const torch::Tensor none;
    const auto target = [&](size_t i) -> const torch::Tensor& { return g.empty() ? none : g[at + i]; };
    const auto dc = dy.contiguous();
    torch::Tensor da;
    return norm_backward(dc.view({-1, dc.size(-1) / heads}), hat, rstd, w, b.defined(), none, true, target(0),
                         target(1), none, dw, db, da)
        .view(dy.sizes());
  }
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
