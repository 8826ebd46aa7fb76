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

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

template <typename T>
T* ptr(const torch::Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

constexpr int64_t kRowGrain = 16384;  // elements per parallel_for chunk, as residual_norm.cpp

// The sub-layer's products: stx's band kernel (band_gemm.h) for small products on one thread,
// where it skips BLAS's packing of A and its β = 0 pass over C; else BLAS, whose cache blocking
// and threads win on large ones (docs/performance.md). kernels.h: head_products() switches.
inline bool on_band(int64_t m, int64_t n, int64_t k) {
  return head_products() == HeadProducts::Band && at::get_num_threads() == 1 && k <= 256 && m * n * k <= (1 << 24);
}

template <typename T>
void product(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
             int64_t ldb, T beta, T* c, int64_t ldc) {
  if (on_band(m, n, k)) band::gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  else blas::gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// y [N, out] = x [N, in] · Wᵀ + b (b null: none). On the band kernel the bias is added as each
// tile is stored; on BLAS it is written first and the product added to it, as addmm does. The
// sum is acc + b either way.
template <typename T>
void linear_forward(const T* x, int64_t N, int64_t in, const T* W, const T* b, int64_t out, T* y) {
  if (on_band(N, out, in)) return band::gemm(false, true, N, out, in, T(1), x, in, W, in, T(0), y, out, b);
  if (b)
    for (int64_t n = 0; n < N; ++n) std::copy(b, b + out, y + n * out);
  blas::gemm(false, true, N, out, in, T(1), x, in, W, in, b ? T(1) : T(0), y, out);
}

// y = linear(x) over [N, in] rows, as a new [N, out] tensor.
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& W, const torch::Tensor& b) {
  const int64_t in = W.size(1), out = W.size(0), N = x.numel() / in;
  auto y = torch::empty({N, out}, x.options());
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "fused_linear", [&] {
    using T = scalar_t;
    linear_forward<T>(x.data_ptr<T>(), N, in, W.data_ptr<T>(), ptr<T>(b), out, y.data_ptr<T>());
  });
  return y;
}

// Gradients of y = linear(x) for dy [N, out]: dW = dyᵀ x and db = Σ dy (when has_bias) as new
// tensors or added to `into`; dx = dy·W written to `dx` (beta 0) or added to it (beta 1); dx
// undefined: not computed.
void linear_grad(const torch::Tensor& dy, const torch::Tensor& x, const torch::Tensor& W, bool has_bias,
                 torch::Tensor& dW, torch::Tensor& db, torch::Tensor* dx, bool accumulate, const GradsInto& into) {
  const int64_t in = W.size(1), out = W.size(0), N = x.numel() / in;
  const bool direct = !into.w.empty();
  if (!direct) dW = torch::empty_like(W);
  if (!direct && has_bias) db = torch::empty({out}, W.options());
  if (dx && !accumulate) *dx = torch::empty({N, in}, x.options());
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "fused_linear_backward", [&] {
    using T = scalar_t;
    const T *dyp = dy.data_ptr<T>(), *xp = x.data_ptr<T>();
    if (direct) {  // g += dyᵀ x block by block, g_b += Σ dy
      const auto parts = static_cast<int64_t>(into.w.size());
      const int64_t rows = out / parts;
      // On the band kernel β = 1: its tile stores acc + g, AccumulateGrad's g + dW to the bit.
      // BLAS may sum in another order for β = 1 or for a part of the rows (OpenBLAS's small-matrix
      // kernels): there the product is autograd's, into scratch, and g + dW is added as before.
      const bool band = on_band(out, in, N);
      T* scratch = nullptr;
      if (!band) {
        dW = torch::empty_like(W);
        scratch = dW.data_ptr<T>();
        product(true, false, out, in, N, T(1), dyp, out, xp, in, T(0), scratch, in);
      }
      for (int64_t i = 0; i < parts; ++i) {
        T* g = into.w[i].data_ptr<T>();
        if (band) product(true, false, rows, in, N, T(1), dyp + i * rows, out, xp, in, T(1), g, in);
        else
          for (int64_t e = 0; e < rows * in; ++e) g[e] += scratch[i * rows * in + e];
        if (has_bias) column_sums<T>(dyp + i * rows, nullptr, N, rows, into.b[i].data_ptr<T>(), nullptr, out, true);
      }
      dW = torch::Tensor();
    } else {
      product(true, false, out, in, N, T(1), dyp, out, xp, in, T(0), dW.data_ptr<T>(), in);
      if (has_bias) column_sums<T>(dyp, nullptr, N, out, db.data_ptr<T>(), nullptr);
    }
    if (dx)
      product(false, false, N, in, out, T(1), dyp, out, W.data_ptr<T>(), in, accumulate ? T(1) : T(0),
              dx->data_ptr<T>(), in);
  });
}

// The direct targets (direct_grads.h) across the node: saved with pack_none, read back as they were.
void save_direct(AutogradContext* ctx, const DirectGrads& direct) {
  if (!direct.on()) return;
  std::vector<torch::Tensor> g;
  for (const auto& t : direct.g) g.push_back(pack_none(t));
  ctx->saved_data["direct"] = g;
}
std::vector<torch::Tensor> load_direct(AutogradContext* ctx) {
  std::vector<torch::Tensor> g;
  if (auto it = ctx->saved_data.find("direct"); it != ctx->saved_data.end())
    for (const auto& t : it->second.toTensorVector()) g.push_back(unpack_none(t));
  return g;
}
GradsInto into(const std::vector<torch::Tensor>& g, std::initializer_list<size_t> w, std::initializer_list<size_t> b) {
  GradsInto r;
  if (g.empty()) return r;
  for (size_t i : w) r.w.push_back(g[i]);
  for (size_t i : b)
    if (g[i].defined()) r.b.push_back(g[i]);
  return r;
}

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
                               torch::Tensor bo, int64_t heads, bool causal, double p_attn, FusedJoin fj,
                               DirectGrads direct) {
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
    auto o = attention_core_packed_forward(qkv, key_pad, heads, causal, p_attn, core);
    InnerNorm inner{unpack_none(inner_w), unpack_none(inner_b), unpack_none(inner_a)};
    auto g = linear(inner.forward(o, fj), wo, bo).view({B, T, d});
    auto y = join.after(x, g);
    std::vector<torch::Tensor> saved{h, qkv, o, W, wo, core.probs, pack_none(core.noise)};
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
    const AttentionCoreSaved core{s[5], unpack_none(s[6]), ctx->saved_data["blind"].toTensor()};
    InnerNorm inner = InnerNorm::load(s, 7);
    QKNorm qk = QKNorm::load(s, 7 + InnerNorm::kSaved);
    Join join = Join::load(ctx, s, 7 + InnerNorm::kSaved + QKNorm::kSaved);
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
      variable_list r(2 + kPA + 8 + 5);
      r[0] = dx;
      return r;
    }
    auto dWs = dW.split(d), dbs = has_bias ? db.split(d) : std::vector<torch::Tensor>(3);
    return {dx,      none,    jg.norm_w, jg.norm_b, jg.norm_a, jg.out_w, jg.out_b, jg.out_a,
            jg.gain, jg.skip, jg.heads,  inner.dw,  inner.db,  inner.da, qk.dqw,   qk.dqb,
            qk.dkw,  qk.dkb,  dWs[0],    dWs[1],    dWs[2],    dbs[0],   dbs[1],   dbs[2],
            dwo,     dbo,     none,      none,      none,      none,     none};
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
                                       double attention_dropout, const FusedJoin& join, const JoinWeights& jw,
                                       const NormWeights& inner, const NormWeights& qn, const NormWeights& kn,
                                       const torch::Tensor& wq, const torch::Tensor& wk, const torch::Tensor& wv,
                                       const torch::Tensor& bq, const torch::Tensor& bk, const torch::Tensor& bv,
                                       const torch::Tensor& wo, const torch::Tensor& bo) {
  DirectGrads direct{
      direct_grad_targets(x, {jw.norm_w, jw.norm_b, jw.norm_a, jw.out_w, jw.out_b, jw.out_a, jw.gain, jw.skip,
                              jw.heads,  inner.w,   inner.b,   inner.a,  qn.w,     qn.b,     kn.w,    kn.b,
                              wq,        wk,        wv,        bq,       bk,       bv,       wo,      bo})};
  const auto in = [&](const torch::Tensor& p) { return pack_none(direct.on() && p.defined() ? p.detach() : p); };
  return AttentionSublayer::apply(x, pack_none(key_pad), in(jw.norm_w), in(jw.norm_b), in(jw.norm_a), in(jw.out_w),
                                  in(jw.out_b), in(jw.out_a), in(jw.gain), in(jw.skip), in(jw.heads), in(inner.w),
                                  in(inner.b), in(inner.a), in(qn.w), in(qn.b), in(kn.w), in(kn.b), in(wq), in(wk),
                                  in(wv), in(bq), in(bk), in(bv), in(wo), in(bo), heads, causal, attention_dropout,
                                  join, std::move(direct))[0];
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

torch::Tensor fused_attention_sublayer(const torch::Tensor&, const torch::Tensor&, int64_t, bool, double,
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
