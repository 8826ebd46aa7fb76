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
#include "stx/kernels/fused_node.h"
#include "stx/kernels/inner_norms.h"
#include "stx/kernels/kernels.h"
#include "stx/kernels/target_clones.h"
#include "stx/kernels/vec_math.h"

namespace stx {

namespace {
// What every fused sub-layer implements: each scheme's join (fused_join.h), each norm kind, the
// inner norms, biases, σReparam's W/σ (an input like any weight), dropout; CPU float32/float64.
Features common_features() {
#ifdef STX_HAVE_BLAS
  using F = Feature;
  return {F::PostJoin,     F::PreJoin,   F::Alpha,   F::NormScale,   F::BranchScale, F::Gain,      F::Skip,
          F::OutNorm,      F::LayerNorm, F::RMSNorm, F::DynamicTanh, F::NoNorm,      F::InnerNorm, F::Bias,
          F::SigmaReparam, F::Dropout,   F::CPU,     F::Float32,     F::Float64};
#else
  return {};
#endif
}
}  // namespace

namespace {
Features with(Features f, std::initializer_list<Feature> more) {
  if (!f.empty())
    for (auto x : more) f.add(x);
  return f;
}
}  // namespace

const Features& fused_attention_implements() {
  static const Features f = with(common_features(), {Feature::HeadScales, Feature::QKNorm, Feature::Softcap,
                                                     Feature::Causal, Feature::AttentionDropout});
  return f;
}

const Features& fused_cross_attention_implements() {
  static const Features f = with(common_features(), {Feature::QKNorm, Feature::Softcap, Feature::AttentionDropout});
  return f;
}

const Features& fused_ffn_implements() {
  static const Features f = with(common_features(), {Feature::ReLU, Feature::GELU});
  return f;
}

#ifdef STX_HAVE_BLAS
namespace {

// The node's parameters in one order (the direct targets', direct_grads.h, and the edges' after x):
// the join's (JoinWeights order), the inner norm's, (the attention's QK-norms'), then the products'.
constexpr size_t kJ = JoinWeights::kCount, kQK = kJ + InnerNorm::kCount, kP = kQK, kPA = kQK + QKNorm::kCount;

// The node's inputs, x then the parameters; its edges go to all of them, or to x alone when the
// parameters' gradients go straight into .grad() (fused_node.h).
std::vector<torch::Tensor> inputs_of(const torch::Tensor& x, const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> r{x};
  r.insert(r.end(), params.begin(), params.end());
  return r;
}

// Self-attention; its state is what backward needs (fused_node.h keeps it).
struct AttentionSublayer {
  static constexpr const char* kName = "AttentionSublayer";
  Join join;
  InnerNorm inner;
  QKNorm qk;
  AttentionCoreSaved core;
  torch::Tensor h, qkv, o, W, wo;
  int64_t heads = 0;
  bool causal = false, has_bias = false, has_bo = false;
  std::vector<torch::Tensor> g;  // the direct targets in the parameters' order, or empty

  torch::Tensor forward(const torch::Tensor& x_in, const torch::Tensor& key_pad, const FusedJoin& fj,
                        const JoinWeights& jw, const AttentionBranch& g_in) {
    const auto x = x_in.contiguous();
    heads = g_in.heads, causal = g_in.causal;
    has_bias = g_in.bq.defined(), has_bo = g_in.bo.defined();
    const int64_t B = x.size(0), T = x.size(1), d = x.size(2);
    W = torch::cat({g_in.wq, g_in.wk, g_in.wv}).contiguous();
    auto b = has_bias ? torch::cat({g_in.bq, g_in.bk, g_in.bv}) : torch::Tensor();
    wo = g_in.wo.contiguous();
    join = Join(fj, jw);
    h = join.before(x);
    qk = QKNorm{g_in.q_norm.w, g_in.q_norm.b, g_in.k_norm.w, g_in.k_norm.b};
    qkv = qk.forward(linear(h, W, b).view({B, T, 3 * d}), heads, fj.eps);
    o = attention_core_packed_forward(qkv, key_pad, heads, causal, g_in.dropout, core, g_in.softcap);
    inner = InnerNorm{g_in.inner.w, g_in.inner.b, g_in.inner.a};
    auto gout = linear(inner.forward(o, fj), wo, g_in.bo).view({B, T, d});
    return join.after(x, gout);
  }

  variable_list backward(const torch::Tensor& dy_in) {
    const GradsInto gqkv = into(g, {kPA, kPA + 1, kPA + 2}, {kPA + 3, kPA + 4, kPA + 5});
    const GradsInto go = into(g, {kPA + 6}, {kPA + 7});
    const std::vector<torch::Tensor> gj(g.begin(), g.begin() + (g.empty() ? 0 : JoinWeights::kCount));
    const int64_t d = o.size(-1);
    auto dy = dy_in.contiguous();
    torch::Tensor dg, dx, dwo, dbo, dW, db, d_o;
    join.branch_backward(dy, dg, dx, gj);
    linear_grad(dg, inner.output(o), wo, has_bo, dwo, dbo, &d_o, false, go);
    d_o = inner.backward(d_o, join.spec(), g, JoinWeights::kCount);
    auto dqkv =
        qk.backward(attention_core_packed_backward(qkv, core, heads, causal, d_o.view(o.sizes())), heads, g, kQK);
    if (join.spec().pre) {
      torch::Tensor dh;
      linear_grad(dqkv, h, W, has_bias, dW, db, &dh, false, gqkv);
      join.input_backward(dh.view_as(dx), dx, gj);
    } else {
      linear_grad(dqkv, h, W, has_bias, dW, db, &dx, true, gqkv);
    }
    if (!g.empty()) return {dx};  // every other gradient went into .grad()
    const auto& jg = join.grads();
    auto dWs = dW.split(d), dbs = has_bias ? db.split(d) : std::vector<torch::Tensor>(3);
    return {dx,       jg.norm_w, jg.norm_b, jg.norm_a, jg.out_w, jg.out_b, jg.out_a, jg.gain, jg.skip,
            jg.heads, inner.dw,  inner.db,  inner.da,  qk.dqw,   qk.dqb,   qk.dkw,   qk.dkb,  dWs[0],
            dWs[1],   dWs[2],    dbs[0],    dbs[1],    dbs[2],   dwo,      dbo};
  }
};

// Feed-forward.
struct FFNSublayer {
  static constexpr const char* kName = "FFNSublayer";
  Join join;
  InnerNorm mid;
  torch::Tensor h, z, a, w1, w2;  // z: after the activation, GELU's derivative
  bool gelu = false, has_b1 = false, has_b2 = false;
  std::vector<torch::Tensor> g;

  torch::Tensor forward(const torch::Tensor& x_in, const FusedJoin& fj, const JoinWeights& jw, const FFNBranch& g_in) {
    const auto x = x_in.contiguous();
    gelu = g_in.gelu;
    w1 = g_in.w1.contiguous(), w2 = g_in.w2.contiguous();
    has_b1 = g_in.b1.defined(), has_b2 = g_in.b2.defined();
    join = Join(fj, jw);
    h = join.before(x);
    z = linear(h, w1, g_in.b1);  // [N, d_ff]
    a = torch::empty_like(z);
    AT_DISPATCH_FLOATING_TYPES(z.scalar_type(), "fused_activation", [&] {
      using T = scalar_t;
      T *zp = z.data_ptr<T>(), *ap = a.data_ptr<T>();
      const bool gl = gelu;
      at::parallel_for(0, z.numel(), kRowGrain,
                       [&](int64_t lo, int64_t hi) { activation_forward<T>(zp, ap, lo, hi, gl); });
    });
    mid = InnerNorm{g_in.mid.w, g_in.mid.b, g_in.mid.a};
    auto gout = linear(mid.forward(a, fj), w2, g_in.b2).view(x.sizes());
    return join.after(x, gout);
  }

  variable_list backward(const torch::Tensor& dy_in) {
    const GradsInto g1 = into(g, {kP}, {kP + 1}), g2 = into(g, {kP + 2}, {kP + 3});
    const std::vector<torch::Tensor> gj(g.begin(), g.begin() + (g.empty() ? 0 : JoinWeights::kCount));
    auto dy = dy_in.contiguous();
    torch::Tensor dg, dx, dw1, db1, dw2, db2, da;
    join.branch_backward(dy, dg, dx, gj);
    linear_grad(dg, mid.output(a), w2, has_b2, dw2, db2, &da, false, g2);
    da = mid.backward(da, join.spec(), g, JoinWeights::kCount);
    AT_DISPATCH_FLOATING_TYPES(z.scalar_type(), "fused_activation_backward", [&] {
      using T = scalar_t;
      const T *zp = z.data_ptr<T>(), *ap = a.data_ptr<T>();
      T* dp = da.data_ptr<T>();
      const bool gl = gelu;
      at::parallel_for(0, z.numel(), kRowGrain,
                       [&](int64_t lo, int64_t hi) { activation_backward<T>(zp, ap, dp, lo, hi, gl); });
    });
    if (join.spec().pre) {
      torch::Tensor dh;
      linear_grad(da, h, w1, has_b1, dw1, db1, &dh, false, g1);
      join.input_backward(dh.view_as(dx), dx, gj);
    } else {
      linear_grad(da, h, w1, has_b1, dw1, db1, &dx, true, g1);
    }
    if (!g.empty()) return {dx};
    const auto& jg = join.grads();
    return {dx,       jg.norm_w, jg.norm_b, jg.norm_a, jg.out_w, jg.out_b, jg.out_a, jg.gain, jg.skip,
            jg.heads, mid.dw,    mid.db,    mid.da,    dw1,      db1,      dw2,      db2};
  }
};

}  // namespace

torch::Tensor fused_attention_sublayer(const Features& asked, const torch::Tensor& x, const torch::Tensor& key_pad,
                                       const FusedJoin& join, const JoinWeights& jw, const AttentionBranch& g) {
  check_implements("the fused attention sub-layer", asked, fused_attention_implements());
  const std::vector<torch::Tensor> params{jw.norm_w,  jw.norm_b,  jw.norm_a,  jw.out_w,   jw.out_b,  jw.out_a,
                                          jw.gain,    jw.skip,    jw.heads,   g.inner.w,  g.inner.b, g.inner.a,
                                          g.q_norm.w, g.q_norm.b, g.k_norm.w, g.k_norm.b, g.wq,      g.wk,
                                          g.wv,       g.bq,       g.bk,       g.bv,       g.wo,      g.bo};
  AttentionSublayer s;
  torch::Tensor y;
  {
    at::AutoDispatchBelowADInplaceOrView below_autograd;  // as Function::apply runs a forward
    y = s.forward(x, key_pad, join, jw, g);
  }
  s.g = direct_grad_targets(x, params);  // after the forward: one that throws leaves no .grad() made
  const auto inputs = inputs_of(x, params);
  const size_t edges = s.g.empty() ? inputs.size() : 1;
  record_fused_node(y, std::move(s), inputs, edges);
  return y;
}

torch::Tensor fused_ffn_sublayer(const Features& asked, const torch::Tensor& x, const FusedJoin& join,
                                 const JoinWeights& jw, const FFNBranch& g) {
  check_implements("the fused FFN sub-layer", asked, fused_ffn_implements());
  const std::vector<torch::Tensor> params{jw.norm_w, jw.norm_b, jw.norm_a, jw.out_w, jw.out_b, jw.out_a,
                                          jw.gain,   jw.skip,   jw.heads,  g.mid.w,  g.mid.b,  g.mid.a,
                                          g.w1,      g.b1,      g.w2,      g.b2};
  FFNSublayer s;
  torch::Tensor y;
  {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    y = s.forward(x, join, jw, g);
  }
  s.g = direct_grad_targets(x, params);
  const auto inputs = inputs_of(x, params);
  const size_t edges = s.g.empty() ? inputs.size() : 1;
  record_fused_node(y, std::move(s), inputs, edges);
  return y;
}

#else  // no BLAS: the fused sub-layers implement nothing

torch::Tensor fused_attention_sublayer(const Features&, const torch::Tensor&, const torch::Tensor&, const FusedJoin&,
                                       const JoinWeights&, const AttentionBranch&) {
  TORCH_CHECK(false, "fused_attention_sublayer: stx was built without BLAS (kernels/blas.h)");
}
torch::Tensor fused_ffn_sublayer(const Features&, const torch::Tensor&, const FusedJoin&, const JoinWeights&,
                                 const FFNBranch&) {
  TORCH_CHECK(false, "fused_ffn_sublayer: stx was built without BLAS (kernels/blas.h)");
}

#endif

}  // namespace stx
