#include "stx/kernels/tied_projection.h"

#include <ATen/Parallel.h>

#include "stx/kernels/band_gemm.h"
#include "stx/kernels/direct_grads.h"
#include "stx/kernels/kernels.h"
#include "stx/kernels/none_tensor.h"

namespace stx {

bool tied_projection_available(const torch::Tensor& h) {
  return h.device().is_cpu() && (h.scalar_type() == torch::kFloat || h.scalar_type() == torch::kDouble) &&
         kernels() == Kernels::Fused && head_products() == HeadProducts::Band && at::get_num_threads() == 1;
}

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class TiedProjection : public torch::autograd::Function<TiedProjection> {
 public:
  // into: E's .grad() (direct_grads.h; E then passed detached), or none.
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& h, const torch::Tensor& E,
                               const torch::Tensor& into) {
    const auto h2 = h.reshape({-1, h.size(-1)}).contiguous();
    const auto e = E.contiguous();
    ctx->save_for_backward({h2, e, into});
    auto sizes = h.sizes().vec();
    sizes.back() = E.size(0);
    auto z = torch::empty({h2.size(0), E.size(0)}, h2.options());
    AT_DISPATCH_FLOATING_TYPES(h2.scalar_type(), "tied_projection_forward", [&] {
      using T = scalar_t;
      band::gemm(false, true, h2.size(0), E.size(0), h2.size(1), T(1), h2.data_ptr<T>(), h2.size(1), e.data_ptr<T>(),
                 e.size(1), T(0), z.data_ptr<T>(), E.size(0));
    });
    return z.view(sizes);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    const auto s = ctx->get_saved_variables();
    const auto &h2 = s[0], &e = s[1];
    const auto into = unpack_none(s[2]);
    const int64_t N = h2.size(0), d = h2.size(1), V = e.size(0);
    const auto dz = grad_out[0].reshape({N, V}).contiguous();
    auto dh = torch::empty({N, d}, h2.options()), dE = into.defined() ? into : torch::empty({V, d}, e.options());
    AT_DISPATCH_FLOATING_TYPES(h2.scalar_type(), "tied_projection_backward", [&] {
      using T = scalar_t;
      band::gemm(false, false, N, d, V, T(1), dz.data_ptr<T>(), V, e.data_ptr<T>(), d, T(0), dh.data_ptr<T>(), d);
      band::gemm(true, false, V, d, N, T(1), dz.data_ptr<T>(), V, h2.data_ptr<T>(), d, into.defined() ? T(1) : T(0),
                 dE.data_ptr<T>(), d);  // direct: .grad() + dzᵀ h
    });
    auto sizes = grad_out[0].sizes().vec();
    sizes.back() = d;
    return {dh.view(sizes), into.defined() ? torch::Tensor() : dE, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor tied_projection(const torch::Tensor& h, const torch::Tensor& E) {
  const auto g = direct_grad_targets(h, {E});
  return g.empty() ? TiedProjection::apply(h, E, pack_none({})) : TiedProjection::apply(h, E.detach(), g[0]);
}

}  // namespace stx
