#include "stx/kernels/adam.h"

#include <ATen/Parallel.h>

#include "stx/kernels/adam_loop.h"
#include "stx/kernels/kernels.h"

namespace stx {

bool adam_fused_available(const torch::Tensor& p) {
  return kernels() == Kernels::Fused && p.device().is_cpu() && p.scalar_type() == torch::kFloat && p.is_contiguous();
}

void adam_update(torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m, torch::Tensor& v,
                 const AdamCoefficients& c) {
  TORCH_CHECK(g.is_contiguous() && m.is_contiguous() && v.is_contiguous() && g.numel() == p.numel(),
              "adam_update: contiguous buffers of equal length expected");
  float *pp = p.data_ptr<float>(), *mp = m.data_ptr<float>(), *vp = v.data_ptr<float>();
  const float* gp = g.data_ptr<float>();
  at::parallel_for(0, p.numel(), 16384,
                   [&](int64_t lo, int64_t hi) { adam_range(pp + lo, gp + lo, mp + lo, vp + lo, hi - lo, c); });
}

}  // namespace stx
