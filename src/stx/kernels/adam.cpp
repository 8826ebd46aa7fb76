#include "stx/kernels/adam.h"

#include <ATen/Parallel.h>

#include <cmath>

#include "stx/kernels/kernels.h"

namespace stx {
namespace {

// Compiled twice (AVX2 and baseline x86-64) and picked at load time; this file is built with
// -fno-math-errno so that the square root vectorizes.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
void adam_range(float* __restrict p, const float* __restrict g, float* __restrict m, float* __restrict v, int64_t n,
                AdamCoefficients c) {
  for (int64_t i = 0; i < n; ++i) {
    const float gi = c.l2 != 0 ? g[i] + c.l2 * p[i] : g[i];
    const float mi = m[i] * c.beta1 + gi * c.one_minus_beta1;
    const float vi = v[i] * c.beta2 + gi * gi * c.one_minus_beta2;
    const float denom = std::sqrt(vi) / c.bias_correction2_sqrt + c.eps;
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] * c.decay - c.step_size * (mi / denom);
  }
}

}  // namespace

bool adam_fused_available(const torch::Tensor& p) {
  return kernels() == Kernels::Fused && p.device().is_cpu() && p.scalar_type() == torch::kFloat && p.is_contiguous();
}

void adam_update(torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m, torch::Tensor& v,
                 const AdamCoefficients& c) {
  TORCH_CHECK(g.is_contiguous() && m.is_contiguous() && v.is_contiguous() && g.numel() == p.numel(),
              "adam_update: contiguous buffers of equal length expected");
  float *pp = p.data_ptr<float>(), *mp = m.data_ptr<float>(), *vp = v.data_ptr<float>();
  const float* gp = g.data_ptr<float>();
  at::parallel_for(0, p.numel(), 16384, [&](int64_t lo, int64_t hi) {
    adam_range(pp + lo, gp + lo, mp + lo, vp + lo, hi - lo, c);
  });
}

}  // namespace stx
