#include "stx/kernels/cross_entropy.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <limits>

#include "stx/kernels/kernels.h"
#include "stx/kernels/target_clones.h"
#include "stx/kernels/vec_math.h"

namespace stx {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Rows [lo, hi) of logits l [N, V]: e = exp(l − max), s = Σ e, nll and (smoothing) the smooth
// term; each row is read from memory once and stays in cache for its three passes.
template <typename T>
STX_CLONES void forward_rows(const T* l, T* e, const int64_t* y, const T* keep, T* s, T* nll, T* smooth, int64_t V,
                             int64_t lo, int64_t hi) {
  for (int64_t n = lo; n < hi; ++n) {
    const T* row = l + n * V;
    T* er = e + n * V;
    const T m = vec::max(row, V);
    const T sum = vec::exp_shifted_sum(row, er, V, m);
    const T lse = m + std::log(sum);
    s[n] = sum;
    nll[n] = keep[n] * (lse - row[y[n]]);
    if (smooth) {
      const T sl = vec::sum(row, V);
      smooth[n] = keep[n] * (T(V) * lse - sl);
    }
  }
}

// Rows [lo, hi): dl = a·e − b, then dl[y] −= c (a, b, c per row; 0 at padding).
template <typename T>
STX_CLONES void backward_rows(const T* e, T* dl, const int64_t* y, const T* a, const T* b, const T* c, int64_t V,
                              int64_t lo, int64_t hi) {
  for (int64_t n = lo; n < hi; ++n) {
    const T *er = e + n * V, an = a[n], bn = b[n];
    T* out = dl + n * V;
#pragma omp simd
    for (int64_t j = 0; j < V; ++j) out[j] = er[j] * an - bn;
    out[y[n]] -= c[n];
  }
}

class CrossEntropy : public torch::autograd::Function<CrossEntropy> {
 public:
  // Returns {loss, nll}; `keep` [N] is 1 at counted rows, 0 at padding.
  static variable_list forward(AutogradContext* ctx, torch::Tensor logits, torch::Tensor target, torch::Tensor keep,
                               double epsilon) {
    const int64_t N = logits.size(0), V = logits.size(1);
    const double eps_i = epsilon / static_cast<double>(V - 1), c_nll = 1.0 - epsilon - eps_i;
    auto l = logits.contiguous();
    auto y = target.contiguous();
    auto e = torch::empty_like(l);
    auto s = torch::empty({N}, l.options()), nll_rows = torch::empty({N}, l.options());
    auto smooth_rows = epsilon == 0 ? torch::Tensor() : torch::empty({N}, l.options());
    AT_DISPATCH_FLOATING_TYPES(l.scalar_type(), "cross_entropy", [&] {
      using T = scalar_t;
      const T *lp = l.data_ptr<T>(), *kp = keep.data_ptr<T>();
      T *ep = e.data_ptr<T>(), *sp = s.data_ptr<T>(), *np = nll_rows.data_ptr<T>();
      T* smp = smooth_rows.defined() ? smooth_rows.data_ptr<T>() : nullptr;
      const int64_t* yp = y.data_ptr<int64_t>();
      at::parallel_for(0, N, 16,
                       [&](int64_t lo, int64_t hi) { forward_rows<T>(lp, ep, yp, kp, sp, np, smp, V, lo, hi); });
    });
    auto nll = nll_rows.sum();
    auto loss = epsilon == 0 ? nll.clone() : c_nll * nll + eps_i * smooth_rows.sum();
    ctx->saved_data["e"] = e;
    ctx->save_for_backward({y, keep, s});
    ctx->saved_data["epsilon"] = epsilon;
    ctx->mark_non_differentiable({nll});
    return {loss, nll};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const auto saved = ctx->get_saved_variables();
    const auto &y = saved[0], &keep = saved[1], &s = saved[2];
    const auto e = ctx->saved_data["e"].toTensor();
    const int64_t N = e.size(0), V = e.size(1);
    const double epsilon = ctx->saved_data["epsilon"].toDouble();
    const double eps_i = epsilon / static_cast<double>(V - 1), c_nll = 1.0 - epsilon - eps_i;
    const auto kg = (keep * grad[0]).contiguous();  // [N]: 0 at padding
    // ∂/∂l = (c_nll + ε_i·V)·e/s − ε_i, then −c_nll at each target.
    const auto a = (kg * (c_nll + eps_i * V) / s).contiguous(), b = (kg * eps_i).contiguous(),
               c = (kg * c_nll).contiguous();
    auto dl = torch::empty_like(e);
    AT_DISPATCH_FLOATING_TYPES(e.scalar_type(), "cross_entropy_backward", [&] {
      using T = scalar_t;
      at::parallel_for(0, N, 16, [&](int64_t lo, int64_t hi) {
        backward_rows<T>(e.data_ptr<T>(), dl.data_ptr<T>(), y.data_ptr<int64_t>(), a.data_ptr<T>(), b.data_ptr<T>(),
                         c.data_ptr<T>(), V, lo, hi);
      });
    });
    return {dl, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

bool fused_cross_entropy_available(const torch::Tensor& logits) {
  return kernels() == Kernels::Fused && logits.device().is_cpu() &&
         (logits.scalar_type() == torch::kFloat || logits.scalar_type() == torch::kDouble);
}

CrossEntropySums fused_cross_entropy(const torch::Tensor& logits, const torch::Tensor& target, double epsilon,
                                     int64_t pad_id) {
  auto y = target.reshape({-1});
  auto keep = pad_id >= 0 ? y.ne(pad_id) : torch::ones_like(y, torch::kBool);
  const auto tokens = keep.sum().item<int64_t>();
  // Padding rows: any valid class index (their weight is 0).
  if (pad_id >= 0) y = y.masked_fill(~keep, 0);
  auto r = CrossEntropy::apply(logits, y, keep.to(logits.scalar_type()), epsilon);
  return {r[0], r[1], tokens};
}

}  // namespace stx
