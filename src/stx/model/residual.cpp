#include "stx/model/residual.h"

#include "stx/kernels/dropout.h"
#include "stx/kernels/residual_norm.h"

namespace stx {

torch::Tensor residual(const ResidualSpec& spec, bool training, const SubLayer& sub,
                       const std::function<torch::Tensor(const torch::Tensor&)>& G, const torch::Tensor& x,
                       const std::array<const char*, 3>& points, const TapSite& tap) {
  auto drop = [&](const torch::Tensor& t) { return stx::dropout(t, spec.dropout, training); };
  auto& norm = sub.norm;
  if (!spec.post_style) {
    if (tap.taps) tap(sub.norm_name + ".input", x);
    auto n = norm->forward(x);  // pre,1 / pre,4
    if (spec.norm_scale != 1.0) n = n * spec.norm_scale;
    tap(points[0], n);
    auto b = G(n);
    if (sub.out_norm) {
      if (tap.taps) tap(*sub.out_norm_name + ".input", b);
      b = (*sub.out_norm)->forward(b);
    }
    if (sub.gain.defined()) b = b * sub.gain;
    if (spec.branch_scale != 1.0) b = b * spec.branch_scale;
    b = drop(b);  // pre,2 / pre,5
    tap(points[1], b);
    auto y = sub.skip.defined() ? x * sub.skip + b : x + b;  // pre,3 / x_{l+1}
    tap(points[2], y);
    return y;
  }
  auto g = drop(G(x));  // post,1 / post,4
  torch::Tensor xs = x;
  if (sub.skip.defined()) {  // Admin: ω ⊙ x
    if (sub.profile) sub.skip.fill_(sub.profile->omega);
    xs = x * sub.skip;
    if (sub.profile) sub.profile->add(sub.skip_name, xs, g);
  }
  if (!tap.taps && residual_norm_available(xs, norm->kind()))  // the three steps below as one node
    return residual_norm(xs, g, spec.alpha, norm->kind(), norm->weight, norm->bias, norm->eps());
  tap(points[0], g);
  auto s = spec.alpha == 1.0 ? xs + g : xs * spec.alpha + g;  // post,2 / post,5
  tap(points[1], s);
  if (tap.taps) tap(sub.norm_name + ".input", s);
  auto y = norm->forward(s);  // post,3 / x_{l+1}
  tap(points[2], y);
  return y;
}

}  // namespace stx
