#include "stx/kernels/dropout.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>

#include <mutex>

#include "stx/kernels/kernels.h"

namespace stx {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Two 32-bit uniforms per 64-bit hash of (seed, pair index): splitmix64's finalizer.
inline uint64_t mix(uint64_t seed, uint64_t j) {
  uint64_t z = seed + (j + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// out_i = in_i · scale where u_i ≥ threshold, else 0 (forward: in = x; backward: in = dy).
template <typename T>
void apply_mask(const T* in, T* out, int64_t n, uint64_t seed, uint32_t threshold, T scale) {
  at::parallel_for(0, (n + 1) / 2, 8192, [&](int64_t lo, int64_t hi) {
    for (int64_t j = lo; j < hi; ++j) {
      const uint64_t h = mix(seed, j);
      const int64_t i = 2 * j;
      out[i] = static_cast<uint32_t>(h) >= threshold ? in[i] * scale : T(0);
      if (i + 1 < n) out[i + 1] = static_cast<uint32_t>(h >> 32) >= threshold ? in[i + 1] * scale : T(0);
    }
  });
}

uint32_t threshold_of(double p) { return static_cast<uint32_t>(std::min(p * 4294967296.0, 4294967295.0)); }

torch::Tensor masked(const torch::Tensor& in, uint64_t seed, double p) {
  auto src = in.contiguous();
  auto out = torch::empty_like(src);
  AT_DISPATCH_FLOATING_TYPES(src.scalar_type(), "stx_dropout", [&] {
    const auto scale = static_cast<scalar_t>(scalar_t(1) / static_cast<scalar_t>(1 - p));  // as torch: 1/(1−p) in T
    apply_mask<scalar_t>(src.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), src.numel(), seed, threshold_of(p),
                         scale);
  });
  return out;
}

class Dropout : public torch::autograd::Function<Dropout> {
 public:
  static variable_list forward(AutogradContext* ctx, torch::Tensor x, double p) {
    auto gen = at::globalContext().defaultGenerator(at::kCPU);
    uint64_t seed;
    {
      std::lock_guard<std::mutex> lock(gen.mutex());
      seed = gen.get<at::CPUGeneratorImpl>()->random64();
    }
    ctx->saved_data["seed"] = static_cast<int64_t>(seed);
    ctx->saved_data["p"] = p;
    return {masked(x, seed, p)};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const auto seed = static_cast<uint64_t>(ctx->saved_data["seed"].toInt());
    return {masked(grad[0], seed, ctx->saved_data["p"].toDouble()), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor dropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p <= 0) return x;
  const bool fused = kernels() == Kernels::Fused && x.device().is_cpu() && p < 1 &&
                     (x.scalar_type() == torch::kFloat || x.scalar_type() == torch::kDouble);
  if (!fused) return torch::dropout(x, p, true);
  return Dropout::apply(x, p)[0];
}

}  // namespace stx
