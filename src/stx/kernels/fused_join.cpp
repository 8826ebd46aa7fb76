#include "stx/kernels/fused_join.h"

#include <ATen/Parallel.h>

#include <algorithm>

#include "stx/kernels/column_sums.h"
#include "stx/kernels/dropout.h"
#include "stx/kernels/norm_rows.h"

namespace stx {
namespace {

constexpr int64_t kRowGrain = 16384;  // elements per parallel_for chunk, as residual_norm.cpp

template <typename T>
T* ptr(const torch::Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

int64_t rows_of(const torch::Tensor& t) { return t.numel() / t.size(-1); }

// Σ_rows a ⊙ b into a parameter of shape like (a [d] vector, or [1]: summed over the columns too),
// stored in `out` or, direct (target defined), added to target.
void weighted_sum(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& like,
                  const torch::Tensor& target, torch::Tensor& out) {
  const int64_t d = a.size(-1), N = rows_of(a);
  auto sums = torch::empty({d}, a.options());
  AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "fused_join_weighted_sum", [&] {
    using T = scalar_t;
    column_sums<T>(a.data_ptr<T>(), b.data_ptr<T>(), N, d, nullptr, sums.data_ptr<T>());
  });
  auto g = like.numel() == d ? sums.view(like.sizes()) : sums.sum().view(like.sizes());
  if (target.defined()) target.add_(g);
  else out = g;
}

// x [.., d] with each head's d/h columns times its κ (NormFormer's head scales, h = κ's size).
torch::Tensor by_head(const torch::Tensor& x, const torch::Tensor& kappa) {
  const int64_t h = kappa.numel(), d = x.size(-1);
  return (x.reshape({-1, h, d / h}) * kappa.view({h, 1})).view(x.sizes());
}

const torch::Tensor& at_or_none(const std::vector<torch::Tensor>& v, size_t i) {
  static const torch::Tensor none;
  return i < v.size() ? v[i] : none;
}

}  // namespace

torch::Tensor norm_forward(const torch::Tensor& x, const torch::Tensor& g, double alpha, const torch::Tensor& w,
                           const torch::Tensor& b, const torch::Tensor& a, bool centered, double eps,
                           torch::Tensor& xhat, torch::Tensor& rstd) {
  if (a.defined()) {  // Dynamic Tanh: y = w ⊙ tanh(a·s) + b, s = α·x + g; saves t = tanh(a·s) and s
    rstd = g.defined() ? (alpha == 1.0 ? x + g : x * alpha + g) : x;
    xhat = torch::tanh(a * rstd);
    return xhat * w + b;
  }
  const int64_t d = x.size(-1), N = rows_of(x);
  auto y = torch::empty_like(x);
  xhat = torch::empty_like(x), rstd = torch::empty({N}, x.options());
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "fused_join_norm", [&] {
    using T = scalar_t;
    const T *xp = x.data_ptr<T>(), *gp = ptr<T>(g), *wp = w.data_ptr<T>(), *bp = ptr<T>(b);
    T *yp = y.data_ptr<T>(), *sp = xhat.data_ptr<T>(), *rp = rstd.data_ptr<T>();
    at::parallel_for(0, N, std::max<int64_t>(1, kRowGrain / d), [&](int64_t lo, int64_t hi) {
      forward_rows<T>(xp, gp, sp, rp, yp, wp, bp, d, lo, hi, T(alpha), T(eps), centered);
    });
  });
  return y;
}

torch::Tensor norm_backward(const torch::Tensor& dy, const torch::Tensor& xhat, const torch::Tensor& rstd,
                            const torch::Tensor& w, bool has_b, const torch::Tensor& a, bool centered,
                            const torch::Tensor& tw, const torch::Tensor& tb, const torch::Tensor& ta,
                            torch::Tensor& dw, torch::Tensor& db, torch::Tensor& da) {
  const int64_t d = xhat.size(-1), N = rows_of(xhat);
  const bool direct = tw.defined();
  if (!direct) dw = torch::empty_like(w), db = has_b ? torch::empty_like(w) : torch::Tensor();
  if (a.defined()) {  // Dynamic Tanh: k = dy ⊙ w ⊙ (1 − t²); ds = a·k, da = Σ k ⊙ s, dw = Σ dy ⊙ t, db = Σ dy
    const auto& t = xhat;
    auto k = dy.reshape(t.sizes()) * w * (1 - t * t);
    auto sum_ks = (k * rstd).sum().view({1});
    if (ta.defined()) ta.add_(sum_ks);
    else da = sum_ks;
    AT_DISPATCH_FLOATING_TYPES(t.scalar_type(), "fused_join_dyt_backward", [&] {
      using T = scalar_t;
      if (direct) column_sums<T>(dy.data_ptr<T>(), t.data_ptr<T>(), N, d, ptr<T>(tb), tw.data_ptr<T>(), d, true);
      else column_sums<T>(dy.data_ptr<T>(), t.data_ptr<T>(), N, d, ptr<T>(db), dw.data_ptr<T>());
    });
    return k * a;
  }
  auto ds = torch::empty_like(xhat);
  AT_DISPATCH_FLOATING_TYPES(xhat.scalar_type(), "fused_join_norm_backward", [&] {
    using T = scalar_t;
    const T *dyp = dy.data_ptr<T>(), *sp = xhat.data_ptr<T>(), *rp = rstd.data_ptr<T>(), *wp = w.data_ptr<T>();
    T* dsp = ds.data_ptr<T>();
    at::parallel_for(0, N, std::max<int64_t>(1, kRowGrain / d),
                     [&](int64_t lo, int64_t hi) { backward_rows<T>(dyp, sp, rp, wp, dsp, d, lo, hi, centered); });
    if (direct) column_sums<T>(dyp, sp, N, d, ptr<T>(tb), tw.data_ptr<T>(), d, true);
    else column_sums<T>(dyp, sp, N, d, ptr<T>(db), dw.data_ptr<T>());
  });
  return ds;
}

torch::Tensor Join::before(const torch::Tensor& x) {
  TORCH_CHECK(j_.pre || (!w_.gain.defined() && !w_.out_w.defined() && !w_.heads.defined()),
              "fused join: a gain, head scales or an output norm need the Pre-LN style");
  if (!j_.pre) return x;
  auto h = j_.normed ? norm_forward(x, {}, 1.0, w_.norm_w, w_.norm_b, w_.norm_a, j_.centered, j_.eps, xhat_, rstd_) : x;
  return j_.norm_scale == 1.0 ? h : j_.normed ? h.mul_(j_.norm_scale) : h * j_.norm_scale;
}

torch::Tensor Join::after(const torch::Tensor& x, torch::Tensor& g) {
  if (j_.pre) {
    auto u = g;
    if (w_.heads.defined()) u_ = g, u = by_head(g, w_.heads);
    auto v = w_.out_w.defined()
                 ? norm_forward(u, {}, 1.0, w_.out_w, w_.out_b, w_.out_a, j_.centered, j_.eps, ohat_, orstd_)
                 : u;
    if (w_.gain.defined()) v_ = v;
    auto b = w_.gain.defined() ? v * w_.gain : v;
    if (j_.branch_scale != 1.0) b.mul_(j_.branch_scale);
    if (j_.dropout > 0) seed_ = dropout_seed(), dropout_apply_(b, seed_, j_.dropout);
    if (!w_.skip.defined()) return x + b;
    x_ = x;
    return x * w_.skip + b;
  }
  if (j_.dropout > 0) seed_ = dropout_seed(), dropout_apply_(g, seed_, j_.dropout);
  auto xs = w_.skip.defined() ? x * w_.skip : x;
  if (w_.skip.defined()) x_ = x;
  if (j_.normed)
    return norm_forward(xs, g, j_.alpha, w_.norm_w, w_.norm_b, w_.norm_a, j_.centered, j_.eps, xhat_, rstd_);
  return j_.alpha == 1.0 ? xs + g : xs * j_.alpha + g;
}

void Join::branch_backward(const torch::Tensor& dy, torch::Tensor& dg, torch::Tensor& dx,
                           const std::vector<torch::Tensor>& into) {
  const auto& t_ = [&](size_t i) -> const torch::Tensor& { return at_or_none(into, i); };
  if (j_.pre) {
    if (w_.skip.defined()) {
      weighted_sum(dy, x_, w_.skip, t_(JoinWeights::kSkip), grads_.skip);
      dx = dy * w_.skip;
    } else {
      dx = dy.clone();
    }
    dg = dy.clone();
    if (j_.branch_scale != 1.0) dg.mul_(j_.branch_scale);
    if (j_.dropout > 0) dropout_apply_(dg, seed_, j_.dropout);
    if (w_.gain.defined()) {
      weighted_sum(dg, v_, w_.gain, t_(JoinWeights::kGain), grads_.gain);
      dg.mul_(w_.gain);
    }
    if (w_.out_w.defined())
      dg = norm_backward(dg, ohat_, orstd_, w_.out_w, w_.out_b.defined(), w_.out_a, j_.centered, t_(JoinWeights::kOutW),
                         t_(JoinWeights::kOutB), t_(JoinWeights::kOutA), grads_.out_w, grads_.out_b, grads_.out_a);
    if (w_.heads.defined()) {
      const int64_t h = w_.heads.numel(), d = dg.size(-1);
      auto per_head = (dg * u_).view({-1, h, d / h}).sum(std::vector<int64_t>{0, 2});  // dκ
      if (t_(JoinWeights::kHeads).defined()) t_(JoinWeights::kHeads).add_(per_head);
      else grads_.heads = per_head;
      dg = by_head(dg, w_.heads);
    }
    return;
  }
  auto ds = j_.normed ? norm_backward(dy, xhat_, rstd_, w_.norm_w, w_.norm_b.defined(), w_.norm_a, j_.centered,
                                      t_(JoinWeights::kNormW), t_(JoinWeights::kNormB), t_(JoinWeights::kNormA),
                                      grads_.norm_w, grads_.norm_b, grads_.norm_a)
                      : dy.clone();
  dx = j_.alpha == 1.0 ? ds.clone() : ds * j_.alpha;  // the gradient of ω ⊙ x
  if (w_.skip.defined()) {
    weighted_sum(dx, x_, w_.skip, t_(JoinWeights::kSkip), grads_.skip);
    dx.mul_(w_.skip);
  }
  dg = ds;
  if (j_.dropout > 0) dropout_apply_(dg, seed_, j_.dropout);
}

void Join::input_backward(const torch::Tensor& dh, torch::Tensor& dx, const std::vector<torch::Tensor>& into) {
  if (!j_.pre) return;  // Post-LN style: G's input is x, its gradient went straight into dx
  auto scaled = j_.norm_scale == 1.0 ? dh : dh * j_.norm_scale;
  if (!j_.normed) {
    dx.add_(scaled);
    return;
  }
  const auto& t_ = [&](size_t i) -> const torch::Tensor& { return at_or_none(into, i); };
  dx.add_(norm_backward(scaled, xhat_, rstd_, w_.norm_w, w_.norm_b.defined(), w_.norm_a, j_.centered,
                        t_(JoinWeights::kNormW), t_(JoinWeights::kNormB), t_(JoinWeights::kNormA), grads_.norm_w,
                        grads_.norm_b, grads_.norm_a));
}

}  // namespace stx
