#include "stx/kernels/adam_loop.h"

#include <cmath>

#include "stx/kernels/target_clones.h"

namespace stx {

STX_CLONES void adam_range(float* __restrict p, const float* __restrict g, float* __restrict m, float* __restrict v,
                           int64_t n, const AdamCoefficients& c) {
  const float b1 = c.beta1, a1 = c.one_minus_beta1, b2 = c.beta2, a2 = c.one_minus_beta2, eps = c.eps;
  const float step = c.step_size, bc2 = c.bias_correction2_sqrt, l2 = c.l2, decay = c.decay;
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i] + l2 * p[i];  // l2 = 0 except Adam with weight decay
    const float mi = m[i] * b1 + gi * a1;
    const float vi = v[i] * b2 + gi * gi * a2;
    const float denom = std::sqrt(vi) / bc2 + eps;
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] * decay - step * (mi / denom);
  }
}

}  // namespace stx
