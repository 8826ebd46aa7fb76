#include "stx/model/residual.h"

#include "stx/kernels/dropout.h"
#include "stx/kernels/residual_norm.h"

namespace stx {

torch::Tensor residual(const ResidualSpec& spec, bool training, Norm& norm, const std::string& norm_name,
                       const std::function<torch::Tensor(const torch::Tensor&)>& G, const torch::Tensor& x,
                       const std::array<const char*, 3>& points, const TapSite& tap) {
  auto drop = [&](const torch::Tensor& t) { return stx::dropout(t, spec.dropout, training); };
  if (spec.scheme == Scheme::Pre) {
    if (tap.taps) tap(norm_name + ".input", x);
    auto n = norm->forward(x);  // pre,1 / pre,4
    tap(points[0], n);
    auto g = drop(G(n));  // pre,2 / pre,5
    tap(points[1], g);
    auto y = x + g;  // pre,3 / x_{l+1}
    tap(points[2], y);
    return y;
  }
  auto g = drop(G(x));                                        // post,1 / post,4
  if (!tap.taps && residual_norm_available(x, norm->kind()))  // the three steps below as one node
    return residual_norm(x, g, spec.alpha, norm->kind(), norm->weight, norm->bias, norm->eps());
  tap(points[0], g);
  auto s = spec.alpha == 1.0 ? x + g : x * spec.alpha + g;  // post,2 / post,5
  tap(points[1], s);
  if (tap.taps) tap(norm_name + ".input", s);
  auto y = norm->forward(s);  // post,3 / x_{l+1}
  tap(points[2], y);
  return y;
}

}  // namespace stx
