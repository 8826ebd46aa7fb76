#include "stx/kernels/fused_sublayer.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <vector>

#include "stx/kernels/activation_rows.h"
#include "stx/kernels/attention_core.h"
#include "stx/kernels/band_gemm.h"
#include "stx/kernels/blas.h"
#include "stx/kernels/column_sums.h"
#include "stx/kernels/direct_grads.h"
#include "stx/kernels/fused_join.h"
#include "stx/kernels/fused_linear.h"
#include "stx/kernels/inner_norms.h"
#include "stx/kernels/kernels.h"
#include "stx/kernels/none_tensor.h"
#include "stx/kernels/target_clones.h"
#include "stx/kernels/vec_math.h"

namespace stx {

bool fused_sublayer_available(const torch::Tensor& x, NormKind kind) {
#ifdef STX_HAVE_BLAS
  return kernels() == Kernels::Fused && layer_path() == LayerPath::Fused && x.device().is_cpu() &&
         (x.scalar_type() == torch::kFloat || x.scalar_type() == torch::kDouble) &&
         (kind == NormKind::LayerNorm || kind == NormKind::RMSNorm || kind == NormKind::DyT || kind == NormKind::None);
#else
  (void)x, (void)kind;
  return false;
#endif
}

#ifdef STX_HAVE_BLAS
namespace {

// The node's inputs after x (and the attention's key_pad): the join's weights, the inner norm's,
// (the attention's QK-norms'), then the products' (their indices in the direct targets, direct_grads.h).
constexpr size_t kJ = JoinWeights::kCount, kQK = kJ + InnerNorm::kCount, kP = kQK, kPA = kQK + QKNorm::kCount;

class AttentionSublayer : public torch::autograd::Function<AttentionSublayer> {
 public:
  // The join's weights (JoinWeights order), Sub-LN's inner norm's, then the projections'.
  static variable_list forward(AutogradContext* ctx, torch::Tensor x, torch::Tensor key_pad, torch::Tensor norm_w,
                               torch::Tensor norm_b, torch::Tensor norm_a, torch::Tensor out_w, torch::Tensor out_b,
                               torch::Tensor out_a, torch::Tensor gain, torch::Tensor skip, torch::Tensor kappa,
                               torch::Tensor inner_w, torch::Tensor inner_b, torch::Tensor inner_a, torch::Tensor qw,
                               torch::Tensor qb, torch::Tensor kw, torch::Tensor kb, torch::Tensor wq, torch::Tensor wk,
                               torch::Tensor wv, torch::Tensor bq, torch::Tensor bk, torch::Tensor bv, torch::Tensor wo,
                               torch::Tensor bo, int64_t heads, bool causal, double p_attn, double softcap,
                               FusedJoin fj, DirectGrads direct) {
    x = x.contiguous();
    key_pad = unpack_none(key_pad), bo = unpack_none(bo);
    const bool has_bias = unpack_none(bq).defined();
    const int64_t B = x.size(0), T = x.size(1), d = x.size(2);
    auto W = torch::cat({wq, wk, wv}).contiguous();
    auto b = has_bias ? torch::cat({bq, bk, bv}) : torch::Tensor();
    wo = wo.contiguous();
    Join join(fj, JoinWeights::of({norm_w, norm_b, norm_a, out_w, out_b, out_a, gain, skip, kappa}));
    auto h = join.before(x);
    QKNorm qk{unpack_none(qw), unpack_none(qb), unpack_none(kw), unpack_none(kb)};
    auto qkv = qk.forward(linear(h, W, b).view({B, T, 3 * d}), heads, fj.eps);
    AttentionCoreSaved core;
    auto o = attention_core_packed_forward(qkv, key_pad, heads, causal, p_attn, core, softcap);
    InnerNorm inner{unpack_none(inner_w), unpack_none(inner_b), unpack_none(inner_a)};
    auto g = linear(inner.forward(o, fj), wo, bo).view({B, T, d});
    auto y = join.after(x, g);
    std::vector<torch::Tensor> saved{h, qkv, o, W, wo, core.probs, pack_none(core.noise), pack_none(core.capped)};
    inner.save(saved);
    qk.save(saved);
    join.save(ctx, saved);
    ctx->save_for_backward(saved);
    ctx->saved_data["blind"] = core.blind;
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["causal"] = causal;
    ctx->saved_data["has_bias"] = has_bias;
    ctx->saved_data["has_bo"] = bo.defined();
    save_direct(ctx, direct);
    return {y};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const auto s = ctx->get_saved_variables();
    const auto g = load_direct(ctx);  // the join's, the inner norm's, the QK-norms', wq, wk, wv, bq, bk, bv, wo, bo
    const GradsInto gqkv = into(g, {kPA, kPA + 1, kPA + 2}, {kPA + 3, kPA + 4, kPA + 5});
    const GradsInto go = into(g, {kPA + 6}, {kPA + 7});
    const std::vector<torch::Tensor> gj(g.begin(), g.begin() + (g.empty() ? 0 : JoinWeights::kCount));
    const auto &h = s[0], &qkv = s[1], &o = s[2], &W = s[3], &wo = s[4];
    const AttentionCoreSaved core{s[5], unpack_none(s[6]), ctx->saved_data["blind"].toTensor(), unpack_none(s[7])};
    InnerNorm inner = InnerNorm::load(s, 8);
    QKNorm qk = QKNorm::load(s, 8 + InnerNorm::kSaved);
    Join join = Join::load(ctx, s, 8 + InnerNorm::kSaved + QKNorm::kSaved);
    const bool has_bias = ctx->saved_data["has_bias"].toBool();
    const int64_t d = o.size(-1);
    auto dy = grad[0].contiguous();
    torch::Tensor dg, dx, dwo, dbo, dW, db;
    join.branch_backward(dy, dg, dx, gj);
    torch::Tensor d_o;
    linear_grad(dg, inner.output(o), wo, ctx->saved_data["has_bo"].toBool(), dwo, dbo, &d_o, false, go);
    d_o = inner.backward(d_o, join.spec(), g, JoinWeights::kCount);
    const int64_t heads = ctx->saved_data["heads"].toInt();
    auto dqkv = qk.backward(
        attention_core_packed_backward(qkv, core, heads, ctx->saved_data["causal"].toBool(), d_o.view(o.sizes())),
        heads, g, kQK);
    if (join.spec().pre) {
      torch::Tensor dh;
      linear_grad(dqkv, h, W, has_bias, dW, db, &dh, false, gqkv);
      join.input_backward(dh.view_as(dx), dx, gj);
    } else {
      linear_grad(dqkv, h, W, has_bias, dW, db, &dx, true, gqkv);
    }
    const torch::Tensor none;
    const auto& jg = join.grads();
    if (!g.empty()) {  // dx, then nothing: every other gradient went into .grad()
      variable_list r(2 + kPA + 8 + 6);
      r[0] = dx;
      return r;
    }
    auto dWs = dW.split(d), dbs = has_bias ? db.split(d) : std::vector<torch::Tensor>(3);
    return {dx,      none,    jg.norm_w, jg.norm_b, jg.norm_a, jg.out_w, jg.out_b, jg.out_a,
            jg.gain, jg.skip, jg.heads,  inner.dw,  inner.db,  inner.da, qk.dqw,   qk.dqb,
            qk.dkw,  qk.dkb,  dWs[0],    dWs[1],    dWs[2],    dbs[0],   dbs[1],   dbs[2],
            dwo,     dbo,     none,      none,      none,      none,     none,     none};
  }
};

class FFNSublayer : public torch::autograd::Function<FFNSublayer> {
 public:
  static variable_list forward(AutogradContext* ctx, torch::Tensor x, torch::Tensor norm_w, torch::Tensor norm_b,
                               torch::Tensor norm_a, torch::Tensor out_w, torch::Tensor out_b, torch::Tensor out_a,
                               torch::Tensor gain, torch::Tensor skip, torch::Tensor kappa, torch::Tensor mid_w,
                               torch::Tensor mid_b, torch::Tensor mid_a, torch::Tensor w1, torch::Tensor b1,
                               torch::Tensor w2, torch::Tensor b2, bool gelu, FusedJoin fj, DirectGrads direct) {
    x = x.contiguous(), w1 = w1.contiguous(), w2 = w2.contiguous();
    b1 = unpack_none(b1), b2 = unpack_none(b2);
    Join join(fj, JoinWeights::of({norm_w, norm_b, norm_a, out_w, out_b, out_a, gain, skip, kappa}));
    auto h = join.before(x);
    auto z = linear(h, w1, b1);  // [N, d_ff]; after the activation, GELU's derivative
    auto a = torch::empty_like(z);
    AT_DISPATCH_FLOATING_TYPES(z.scalar_type(), "fused_activation", [&] {
      using T = scalar_t;
      T *zp = z.data_ptr<T>(), *ap = a.data_ptr<T>();
      at::parallel_for(0, z.numel(), kRowGrain,
                       [&](int64_t lo, int64_t hi) { activation_forward<T>(zp, ap, lo, hi, gelu); });
    });
    InnerNorm mid{unpack_none(mid_w), unpack_none(mid_b), unpack_none(mid_a)};
    auto g = linear(mid.forward(a, fj), w2, b2).view(x.sizes());
    auto y = join.after(x, g);
    std::vector<torch::Tensor> saved{h, z, a, w1, w2};
    mid.save(saved);
    join.save(ctx, saved);
    ctx->save_for_backward(saved);
    ctx->saved_data["gelu"] = gelu;
    ctx->saved_data["has_b1"] = b1.defined();
    ctx->saved_data["has_b2"] = b2.defined();
    save_direct(ctx, direct);
    return {y};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const auto s = ctx->get_saved_variables();
    const auto g = load_direct(ctx);  // the join's, the inner norm's, w1, b1, w2, b2
    const GradsInto g1 = into(g, {kP}, {kP + 1}), g2 = into(g, {kP + 2}, {kP + 3});
    const std::vector<torch::Tensor> gj(g.begin(), g.begin() + (g.empty() ? 0 : JoinWeights::kCount));
    const auto &h = s[0], &z = s[1], &a = s[2], &w1 = s[3], &w2 = s[4];
    InnerNorm mid = InnerNorm::load(s, 5);
    Join join = Join::load(ctx, s, 5 + InnerNorm::kSaved);
    const bool gelu = ctx->saved_data["gelu"].toBool();
    auto dy = grad[0].contiguous();
    torch::Tensor dg, dx, dw1, db1, dw2, db2, da;
    join.branch_backward(dy, dg, dx, gj);
    linear_grad(dg, mid.output(a), w2, ctx->saved_data["has_b2"].toBool(), dw2, db2, &da, false, g2);
    da = mid.backward(da, join.spec(), g, JoinWeights::kCount);
    AT_DISPATCH_FLOATING_TYPES(z.scalar_type(), "fused_activation_backward", [&] {
      using T = scalar_t;
      const T *zp = z.data_ptr<T>(), *ap = a.data_ptr<T>();
      T* dp = da.data_ptr<T>();
      at::parallel_for(0, z.numel(), kRowGrain,
                       [&](int64_t lo, int64_t hi) { activation_backward<T>(zp, ap, dp, lo, hi, gelu); });
    });
    const bool has_b1 = ctx->saved_data["has_b1"].toBool();
    if (join.spec().pre) {
      torch::Tensor dh;
      linear_grad(da, h, w1, has_b1, dw1, db1, &dh, false, g1);
      join.input_backward(dh.view_as(dx), dx, gj);
    } else {
      linear_grad(da, h, w1, has_b1, dw1, db1, &dx, true, g1);
    }
    const torch::Tensor none;
    const auto& jg = join.grads();  // all but dx undefined when direct
    return {dx,     jg.norm_w, jg.norm_b, jg.norm_a, jg.out_w, jg.out_b, jg.out_a, jg.gain, jg.skip, jg.heads,
            mid.dw, mid.db,    mid.da,    dw1,       db1,      dw2,      db2,      none,    none,    none};
  }
};

}  // namespace

torch::Tensor fused_attention_sublayer(const torch::Tensor& x, const torch::Tensor& key_pad, int64_t heads, bool causal,
                                       double attention_dropout, double softcap, const FusedJoin& join,
                                       const JoinWeights& jw, const NormWeights& inner, const NormWeights& qn,
                                       const NormWeights& kn, const torch::Tensor& wq, const torch::Tensor& wk,
                                       const torch::Tensor& wv, const torch::Tensor& bq, const torch::Tensor& bk,
                                       const torch::Tensor& bv, const torch::Tensor& wo, const torch::Tensor& bo) {
  DirectGrads direct{
      direct_grad_targets(x, {jw.norm_w, jw.norm_b, jw.norm_a, jw.out_w, jw.out_b, jw.out_a, jw.gain, jw.skip,
                              jw.heads,  inner.w,   inner.b,   inner.a,  qn.w,     qn.b,     kn.w,    kn.b,
                              wq,        wk,        wv,        bq,       bk,       bv,       wo,      bo})};
  const auto in = [&](const torch::Tensor& p) { return pack_none(direct.on() && p.defined() ? p.detach() : p); };
  return AttentionSublayer::apply(x, pack_none(key_pad), in(jw.norm_w), in(jw.norm_b), in(jw.norm_a), in(jw.out_w),
                                  in(jw.out_b), in(jw.out_a), in(jw.gain), in(jw.skip), in(jw.heads), in(inner.w),
                                  in(inner.b), in(inner.a), in(qn.w), in(qn.b), in(kn.w), in(kn.b), in(wq), in(wk),
                                  in(wv), in(bq), in(bk), in(bv), in(wo), in(bo), heads, causal, attention_dropout,
                                  softcap, join, std::move(direct))[0];
}

torch::Tensor fused_ffn_sublayer(const torch::Tensor& x, bool gelu, const FusedJoin& join, const JoinWeights& jw,
                                 const NormWeights& mid, const torch::Tensor& w1, const torch::Tensor& b1,
                                 const torch::Tensor& w2, const torch::Tensor& b2) {
  DirectGrads direct{direct_grad_targets(x, {jw.norm_w, jw.norm_b, jw.norm_a, jw.out_w, jw.out_b, jw.out_a, jw.gain,
                                             jw.skip, jw.heads, mid.w, mid.b, mid.a, w1, b1, w2, b2})};
  const auto in = [&](const torch::Tensor& p) { return pack_none(direct.on() && p.defined() ? p.detach() : p); };
  return FFNSublayer::apply(x, in(jw.norm_w), in(jw.norm_b), in(jw.norm_a), in(jw.out_w), in(jw.out_b), in(jw.out_a),
                            in(jw.gain), in(jw.skip), in(jw.heads), in(mid.w), in(mid.b), in(mid.a), in(w1), in(b1),
                            in(w2), in(b2), gelu, join, std::move(direct))[0];
}

#else  // no BLAS: fused_sublayer_available() is false

torch::Tensor fused_attention_sublayer(const torch::Tensor&, const torch::Tensor&, int64_t, bool, double, double,
                                       const FusedJoin&, const JoinWeights&, const NormWeights&, const NormWeights&,
                                       const NormWeights&, const torch::Tensor&, const torch::Tensor&,
                                       const torch::Tensor&, const torch::Tensor&, const torch::Tensor&,
                                       const torch::Tensor&, const torch::Tensor&, const torch::Tensor&) {
  TORCH_CHECK(false, "fused_attention_sublayer: stx was built without BLAS (kernels/blas.h)");
}
torch::Tensor fused_ffn_sublayer(const torch::Tensor&, bool, const FusedJoin&, const JoinWeights&, const NormWeights&,
                                 const torch::Tensor&, const torch::Tensor&, const torch::Tensor&,
                                 const torch::Tensor&) {
  TORCH_CHECK(false, "fused_ffn_sublayer: stx was built without BLAS (kernels/blas.h)");
}

#endif

}  // namespace stx
