// stx/kernels/fused_cross_attention.cpp — a decoder layer's cross-attention sub-layer as one
// autograd node on the CPU (fused_sublayer.h): queries from the decoder stream, keys and values
// from the encoder's output `memory`, its padding masked, no causal band:
//   h = join.before(x),  q = h W_qᵀ + b_q,  k = m W_kᵀ + b_k,  v = m W_vᵀ + b_v   (m: memory)
//   G = M(attn(q, k, v)) W_oᵀ + b_o,  y = join.after(x, G)        (Vaswani et al. §3.2.3)
//   (QK-LayerNorm: q and k each normalized per head before the scores, Dehghani et al. 2023)
// Backward by hand as the self-attention node's, plus d memory = dk W_k + dv W_v (the encoder's
// gradient from this layer; autograd sums the layers').
#include <torch/torch.h>

#include "stx/kernels/attention_core.h"
#include "stx/kernels/fused_linear.h"
#include "stx/kernels/fused_node.h"
#include "stx/kernels/fused_sublayer.h"
#include "stx/kernels/inner_norms.h"

namespace stx {

#ifdef STX_HAVE_BLAS
namespace {

// The parameters' order (the direct targets', direct_grads.h; the edges' after x and memory): the
// join's, the inner norm's, the QK-norms', then these.
constexpr size_t kQK = JoinWeights::kCount + InnerNorm::kCount, kP = kQK + QKNorm::kCount;
enum Proj : size_t { kWq, kBq, kWk, kBk, kWv, kBv, kWo, kBo };

struct CrossAttentionSublayer {
  static constexpr const char* kName = "CrossAttentionSublayer";
  Join join;
  InnerNorm inner;
  QKNorm qk;
  AttentionCoreSaved core;
  torch::Tensor h, mem, q, k, v, o, wq, wk, wv, wo;  // q, k: after QK-LayerNorm where it is on
  int64_t heads = 0;
  bool bias[4] = {};             // b_q, b_k, b_v, b_o present
  std::vector<torch::Tensor> g;  // the direct targets, or empty

  torch::Tensor forward(const torch::Tensor& x_in, const torch::Tensor& memory, const torch::Tensor& memory_pad,
                        const FusedJoin& fj, const JoinWeights& jw, const AttentionBranch& g_in) {
    const auto x = x_in.contiguous();
    mem = memory.contiguous();
    heads = g_in.heads;
    wq = g_in.wq.contiguous(), wk = g_in.wk.contiguous(), wv = g_in.wv.contiguous(), wo = g_in.wo.contiguous();
    bias[0] = g_in.bq.defined(), bias[1] = g_in.bk.defined(), bias[2] = g_in.bv.defined();
    bias[3] = g_in.bo.defined();
    const int64_t B = x.size(0), T = x.size(1), d = x.size(2), Tk = mem.size(1);
    join = Join(fj, jw);
    h = join.before(x);
    qk = QKNorm{g_in.q_norm.w, g_in.q_norm.b, g_in.k_norm.w, g_in.k_norm.b};
    q = qk.forward_q(linear(h, wq, g_in.bq).view({B, T, d}), heads, fj.eps);
    k = qk.forward_k(linear(mem, wk, g_in.bk).view({B, Tk, d}), heads, fj.eps);
    v = linear(mem, wv, g_in.bv).view({B, Tk, d});
    o = attention_core_forward(q, k, v, memory_pad, heads, false, g_in.dropout, core, g_in.softcap);
    inner = InnerNorm{g_in.inner.w, g_in.inner.b, g_in.inner.a};
    auto gout = linear(inner.forward(o, fj), wo, g_in.bo).view({B, T, d});
    return join.after(x, gout);
  }

  variable_list backward(const torch::Tensor& dy_in) {
    const std::vector<torch::Tensor> gj(g.begin(), g.begin() + (g.empty() ? 0 : JoinWeights::kCount));
    auto part = [&](Proj w, Proj b) { return into(g, {kP + w}, {kP + b}); };
    auto dy = dy_in.contiguous();
    torch::Tensor dg, dx, d_o, dq, dk, dv, dmem, dwq, dbq, dwk, dbk, dwv, dbv, dwo, dbo;
    join.branch_backward(dy, dg, dx, gj);
    linear_grad(dg, inner.output(o), wo, bias[3], dwo, dbo, &d_o, false, part(kWo, kBo));
    d_o = inner.backward(d_o, join.spec(), g, JoinWeights::kCount);
    attention_core_backward(q, k, v, core, heads, false, d_o.view(o.sizes()), dq, dk, dv);
    dq = qk.backward_q(dq, heads, g, kQK), dk = qk.backward_k(dk, heads, g, kQK);
    linear_grad(dk, mem, wk, bias[1], dwk, dbk, &dmem, false, part(kWk, kBk));
    linear_grad(dv, mem, wv, bias[2], dwv, dbv, &dmem, true, part(kWv, kBv));
    if (join.spec().pre) {
      torch::Tensor dh;
      linear_grad(dq, h, wq, bias[0], dwq, dbq, &dh, false, part(kWq, kBq));
      join.input_backward(dh.view_as(dx), dx, gj);
    } else {
      linear_grad(dq, h, wq, bias[0], dwq, dbq, &dx, true, part(kWq, kBq));
    }
    dmem = dmem.view(mem.sizes());
    if (!g.empty()) return {dx, dmem};  // every other gradient went into .grad()
    const auto& jg = join.grads();
    return {dx,      dmem,     jg.norm_w, jg.norm_b, jg.norm_a, jg.out_w, jg.out_b, jg.out_a, jg.gain,
            jg.skip, jg.heads, inner.dw,  inner.db,  inner.da,  qk.dqw,   qk.dqb,   qk.dkw,   qk.dkb,
            dwq,     dbq,      dwk,       dbk,       dwv,       dbv,      dwo,      dbo};
  }
};

}  // namespace

torch::Tensor fused_cross_attention_sublayer(const Features& asked, const torch::Tensor& x, const torch::Tensor& memory,
                                             const torch::Tensor& memory_pad, const FusedJoin& join,
                                             const JoinWeights& jw, const AttentionBranch& g) {
  const std::vector<torch::Tensor> params{jw.norm_w,  jw.norm_b,  jw.norm_a,  jw.out_w,   jw.out_b,  jw.out_a,
                                          jw.gain,    jw.skip,    jw.heads,   g.inner.w,  g.inner.b, g.inner.a,
                                          g.q_norm.w, g.q_norm.b, g.k_norm.w, g.k_norm.b, g.wq,      g.bq,
                                          g.wk,       g.bk,       g.wv,       g.bv,       g.wo,      g.bo};
  check_implements("the fused cross-attention sub-layer", asked, fused_cross_attention_implements());
  TORCH_CHECK(!g.causal, "the fused cross-attention sub-layer has no causal band");
  CrossAttentionSublayer s;
  torch::Tensor y;
  {
    at::AutoDispatchBelowADInplaceOrView below_autograd;  // as Function::apply runs a forward
    y = s.forward(x, memory, memory_pad, join, jw, g);
  }
  s.g = direct_grad_targets(x, params);          // after the forward: one that throws leaves no .grad() made
  std::vector<torch::Tensor> inputs{x, memory};  // edges to these two alone with direct gradients
  inputs.insert(inputs.end(), params.begin(), params.end());
  const size_t edges = s.g.empty() ? inputs.size() : 2;
  record_fused_node(y, std::move(s), inputs, edges);
  return y;
}

#else  // no BLAS: the fused sub-layers implement nothing

torch::Tensor fused_cross_attention_sublayer(const Features&, const torch::Tensor&, const torch::Tensor&,
                                             const torch::Tensor&, const FusedJoin&, const JoinWeights&,
                                             const AttentionBranch&) {
  TORCH_CHECK(false, "fused_cross_attention_sublayer: stx was built without BLAS (kernels/blas.h)");
}

#endif

}  // namespace stx
