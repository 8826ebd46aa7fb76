#include "stx/kernels/residual_norm.h"

#include <ATen/Parallel.h>

#include <cmath>

#include "stx/kernels/kernels.h"
#include "stx/kernels/norm_rows.h"

namespace stx {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class ResidualNorm : public torch::autograd::Function<ResidualNorm> {
 public:
  // bias travels as a [0] tensor for RMSNorm.
  static variable_list forward(AutogradContext* ctx, torch::Tensor x, torch::Tensor g, torch::Tensor weight,
                               torch::Tensor bias, double alpha, double eps, bool centered) {
    x = x.contiguous(), g = g.contiguous();
    const int64_t d = x.size(-1), N = x.numel() / d;
    const bool has_bias = bias.numel() > 0;
    auto xhat = torch::empty_like(x), y = torch::empty_like(x);
    auto rstd = torch::empty({N}, x.options());
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "residual_norm", [&] {
      using T = scalar_t;
      const T *xp = x.data_ptr<T>(), *gp = g.data_ptr<T>(), *wp = weight.data_ptr<T>();
      const T* bp = has_bias ? bias.data_ptr<T>() : nullptr;
      T *hp = xhat.data_ptr<T>(), *rp = rstd.data_ptr<T>(), *yp = y.data_ptr<T>();
      at::parallel_for(0, N, std::max<int64_t>(1, 16384 / d), [&](int64_t lo, int64_t hi) {
        forward_rows<T>(xp, gp, hp, rp, yp, wp, bp, d, lo, hi, T(alpha), T(eps), centered);
      });
    });
    ctx->save_for_backward({xhat, rstd, weight});
    ctx->saved_data["alpha"] = alpha;
    ctx->saved_data["centered"] = centered;
    ctx->saved_data["has_bias"] = has_bias;
    return {y};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const auto saved = ctx->get_saved_variables();
    const auto &xhat = saved[0], &rstd = saved[1], &weight = saved[2];
    const auto dy = grad[0].contiguous();
    const double alpha = ctx->saved_data["alpha"].toDouble();
    const bool centered = ctx->saved_data["centered"].toBool();
    const int64_t d = xhat.size(-1), N = xhat.numel() / d;
    auto ds = torch::empty_like(xhat);
    AT_DISPATCH_FLOATING_TYPES(xhat.scalar_type(), "residual_norm_backward", [&] {
      using T = scalar_t;
      const T *dyp = dy.data_ptr<T>(), *hp = xhat.data_ptr<T>(), *rp = rstd.data_ptr<T>(), *wp = weight.data_ptr<T>();
      T* dsp = ds.data_ptr<T>();
      at::parallel_for(0, N, std::max<int64_t>(1, 16384 / d),
                       [&](int64_t lo, int64_t hi) { backward_rows<T>(dyp, hp, rp, wp, dsp, d, lo, hi, centered); });
    });
    auto dy2 = dy.view({N, d});
    auto dw = (dy2 * xhat.view({N, d})).sum(0);
    auto db = ctx->saved_data["has_bias"].toBool() ? dy2.sum(0) : torch::Tensor();
    // dx and dg must be distinct tensors: autograd may accumulate into either in place.
    auto dx = alpha == 1.0 ? ds.clone() : ds * alpha;
    return {dx, ds, dw, db, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

bool residual_norm_available(const torch::Tensor& x, NormKind kind) {
  return kernels() == Kernels::Fused && x.device().is_cpu() &&
         (kind == NormKind::LayerNorm || kind == NormKind::RMSNorm) &&
         (x.scalar_type() == torch::kFloat || x.scalar_type() == torch::kDouble);
}

torch::Tensor residual_norm(const torch::Tensor& x, const torch::Tensor& g, double alpha, NormKind kind,
                            const torch::Tensor& weight, const torch::Tensor& bias, double eps) {
  return ResidualNorm::apply(x, g, weight, bias.defined() ? bias : torch::empty({0}, x.options()), alpha, eps,
                             kind == NormKind::LayerNorm)[0];
}

}  // namespace stx
