// stx/kernels/fused_cross_attention.cpp — a decoder layer's cross-attention sub-layer as one
// autograd node on the CPU (fused_sublayer.h): queries from the decoder stream, keys and values
// from the encoder's output `memory`, its padding masked, no causal band:
//   h = join.before(x),  q = h W_qᵀ + b_q,  k = m W_kᵀ + b_k,  v = m W_vᵀ + b_v   (m: memory)
//   G = M(attn(q, k, v)) W_oᵀ + b_o,  y = join.after(x, G)        (Vaswani et al. §3.2.3)
// Backward by hand as the self-attention node's, plus d memory = dk W_k + dv W_v (the encoder's
// gradient from this layer; autograd sums the layers'). QK-LayerNorm keeps the composed path.
#include <torch/torch.h>

#include "stx/kernels/attention_core.h"
#include "stx/kernels/fused_linear.h"
#include "stx/kernels/fused_sublayer.h"
#include "stx/kernels/inner_norms.h"

namespace stx {

#ifdef STX_HAVE_BLAS
namespace {

// The direct targets (direct_grads.h): the join's, the inner norm's, then these.
constexpr size_t kP = JoinWeights::kCount + InnerNorm::kCount;
enum Proj : size_t { kWq, kBq, kWk, kBk, kWv, kBv, kWo, kBo };

class CrossAttentionSublayer : public torch::autograd::Function<CrossAttentionSublayer> {
 public:
  static variable_list forward(AutogradContext* ctx, torch::Tensor x, torch::Tensor memory, torch::Tensor memory_pad,
                               torch::Tensor norm_w, torch::Tensor norm_b, torch::Tensor norm_a, torch::Tensor out_w,
                               torch::Tensor out_b, torch::Tensor out_a, torch::Tensor gain, torch::Tensor skip,
                               torch::Tensor kappa, torch::Tensor inner_w, torch::Tensor inner_b, torch::Tensor inner_a,
                               torch::Tensor wq, torch::Tensor bq, torch::Tensor wk, torch::Tensor bk, torch::Tensor wv,
                               torch::Tensor bv, torch::Tensor wo, torch::Tensor bo, int64_t heads, double p_attn,
                               double softcap, FusedJoin fj, DirectGrads direct) {
    x = x.contiguous(), memory = memory.contiguous();
    wq = wq.contiguous(), wk = wk.contiguous(), wv = wv.contiguous(), wo = wo.contiguous();
    bq = unpack_none(bq), bk = unpack_none(bk), bv = unpack_none(bv), bo = unpack_none(bo);
    const int64_t B = x.size(0), T = x.size(1), d = x.size(2), Tk = memory.size(1);
    Join join(fj, JoinWeights::of({norm_w, norm_b, norm_a, out_w, out_b, out_a, gain, skip, kappa}));
    auto h = join.before(x);
    auto q = linear(h, wq, bq).view({B, T, d});
    auto k = linear(memory, wk, bk).view({B, Tk, d}), v = linear(memory, wv, bv).view({B, Tk, d});
    AttentionCoreSaved core;
    auto o = attention_core_forward(q, k, v, unpack_none(memory_pad), heads, false, p_attn, core, softcap);
    InnerNorm inner{unpack_none(inner_w), unpack_none(inner_b), unpack_none(inner_a)};
    auto g = linear(inner.forward(o, fj), wo, bo).view({B, T, d});
    auto y = join.after(x, g);
    std::vector<torch::Tensor> saved{
        h, memory, q, k, v, o, wq, wk, wv, wo, core.probs, pack_none(core.noise), pack_none(core.capped)};
    inner.save(saved);
    join.save(ctx, saved);
    ctx->save_for_backward(saved);
    ctx->saved_data["blind"] = core.blind;
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["biases"] = std::vector<bool>{bq.defined(), bk.defined(), bv.defined(), bo.defined()};
    save_direct(ctx, direct);
    return {y};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const auto s = ctx->get_saved_variables();
    const auto g = load_direct(ctx);
    const auto &h = s[0], &mem = s[1], &q = s[2], &k = s[3], &v = s[4], &o = s[5];
    const auto &wq = s[6], &wk = s[7], &wv = s[8], &wo = s[9];
    const AttentionCoreSaved core{s[10], unpack_none(s[11]), ctx->saved_data["blind"].toTensor(), unpack_none(s[12])};
    InnerNorm inner = InnerNorm::load(s, 13);
    Join join = Join::load(ctx, s, 13 + InnerNorm::kSaved);
    const auto bias = ctx->saved_data["biases"].toBoolList();
    const std::vector<torch::Tensor> gj(g.begin(), g.begin() + (g.empty() ? 0 : JoinWeights::kCount));
    auto part = [&](Proj w, Proj b) { return into(g, {kP + w}, {kP + b}); };
    auto dy = grad[0].contiguous();
    torch::Tensor dg, dx, d_o, dq, dk, dv, dmem, dwq, dbq, dwk, dbk, dwv, dbv, dwo, dbo;
    join.branch_backward(dy, dg, dx, gj);
    linear_grad(dg, inner.output(o), wo, bias[3], dwo, dbo, &d_o, false, part(kWo, kBo));
    d_o = inner.backward(d_o, join.spec(), g, JoinWeights::kCount);
    attention_core_backward(q, k, v, core, ctx->saved_data["heads"].toInt(), false, d_o.view(o.sizes()), dq, dk, dv);
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
    const torch::Tensor none;
    if (!g.empty()) {  // dx and d memory; every other gradient went into .grad()
      variable_list r(3 + kP + 8 + 5);
      r[0] = dx, r[1] = dmem;
      return r;
    }
    const auto& jg = join.grads();
    return {dx,      dmem,     none,     jg.norm_w, jg.norm_b, jg.norm_a, jg.out_w, jg.out_b, jg.out_a, jg.gain,
            jg.skip, jg.heads, inner.dw, inner.db,  inner.da,  dwq,       dbq,      dwk,      dbk,      dwv,
            dbv,     dwo,      dbo,      none,      none,      none,      none,     none};
  }
};

}  // namespace

torch::Tensor fused_cross_attention_sublayer(const torch::Tensor& x, const torch::Tensor& memory,
                                             const torch::Tensor& memory_pad, int64_t heads, double attention_dropout,
                                             double softcap, const FusedJoin& join, const JoinWeights& jw,
                                             const NormWeights& inner, const torch::Tensor& wq, const torch::Tensor& wk,
                                             const torch::Tensor& wv, const torch::Tensor& bq, const torch::Tensor& bk,
                                             const torch::Tensor& bv, const torch::Tensor& wo,
                                             const torch::Tensor& bo) {
  DirectGrads direct{direct_grad_targets(
      x, {jw.norm_w, jw.norm_b, jw.norm_a, jw.out_w, jw.out_b, jw.out_a, jw.gain, jw.skip, jw.heads, inner.w,
          inner.b,   inner.a,   wq,        bq,       wk,       bk,       wv,      bv,      wo,       bo})};
  const auto in = [&](const torch::Tensor& p) { return pack_none(direct.on() && p.defined() ? p.detach() : p); };
  return CrossAttentionSublayer::apply(
      x, memory, pack_none(memory_pad), in(jw.norm_w), in(jw.norm_b), in(jw.norm_a), in(jw.out_w), in(jw.out_b),
      in(jw.out_a), in(jw.gain), in(jw.skip), in(jw.heads), in(inner.w), in(inner.b), in(inner.a), in(wq), in(bq),
      in(wk), in(bk), in(wv), in(bv), in(wo), in(bo), heads, attention_dropout, softcap, join, std::move(direct))[0];
}

#else  // no BLAS: fused_sublayer_available() is false

torch::Tensor fused_cross_attention_sublayer(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&, int64_t,
                                             double, double, const FusedJoin&, const JoinWeights&, const NormWeights&,
                                             const torch::Tensor&, const torch::Tensor&, const torch::Tensor&,
                                             const torch::Tensor&, const torch::Tensor&, const torch::Tensor&,
                                             const torch::Tensor&, const torch::Tensor&) {
  TORCH_CHECK(false, "fused_cross_attention_sublayer: stx was built without BLAS (kernels/blas.h)");
}

#endif

}  // namespace stx
