#include "stx/kernels/dropout.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>

#include <mutex>

#include "stx/kernels/kernels.h"
#include "stx/kernels/target_clones.h"

namespace stx {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// One 32-bit uniform per element: murmur3's finalizer (a bijection with full avalanche) applied
// twice, keyed by the two halves of the seed. 32-bit multiplies only, so the loop vectorizes.
inline uint32_t fmix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  return h ^ (h >> 16);
}

// out_i = in_i · scale where u_i ≥ threshold, else 0, for i in [lo, hi) (forward: in = x;
// backward: in = dy).
template <typename T>
STX_CLONES void mask_range(const T* in, T* out, int64_t lo, int64_t hi, uint32_t k0, uint32_t k1, uint32_t threshold,
                           T scale) {
  for (int64_t i = lo; i < hi; ++i) {
    const uint32_t u = fmix32(fmix32(static_cast<uint32_t>(i) ^ k0) + k1);
    out[i] = u >= threshold ? in[i] * scale : T(0);
  }
}

template <typename T>
void apply_mask(const T* in, T* out, int64_t n, uint64_t seed, uint32_t threshold, T scale) {
  TORCH_CHECK(n <= (int64_t{1} << 32), "stx::dropout: more than 2^32 elements in one tensor");
  const auto k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  at::parallel_for(0, n, 16384,
                   [&](int64_t lo, int64_t hi) { mask_range<T>(in, out, lo, hi, k0, k1, threshold, scale); });
}

uint32_t threshold_of(double p) { return static_cast<uint32_t>(std::min(p * 4294967296.0, 4294967295.0)); }

torch::Tensor masked(const torch::Tensor& in, uint64_t seed, double p) {
  auto src = in.contiguous();
  auto out = torch::empty_like(src);
  AT_DISPATCH_FLOATING_TYPES(src.scalar_type(), "stx_dropout", [&] {
    const auto scale = static_cast<scalar_t>(scalar_t(1) / static_cast<scalar_t>(1 - p));  // as torch: 1/(1−p) in T
    apply_mask<scalar_t>(src.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), src.numel(), seed, threshold_of(p), scale);
  });
  return out;
}

class Dropout : public torch::autograd::Function<Dropout> {
 public:
  static variable_list forward(AutogradContext* ctx, torch::Tensor x, double p) {
    const uint64_t seed = dropout_seed();
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

uint64_t dropout_seed() {
  auto gen = at::globalContext().defaultGenerator(at::kCPU);
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get<at::CPUGeneratorImpl>()->random64();
}

void dropout_apply_(torch::Tensor& x, uint64_t seed, double p) {
  TORCH_CHECK(x.is_contiguous(), "dropout_apply_: contiguous tensor expected");
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "stx_dropout_", [&] {
    const auto scale = static_cast<scalar_t>(scalar_t(1) / static_cast<scalar_t>(1 - p));
    apply_mask<scalar_t>(x.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(), x.numel(), seed, threshold_of(p), scale);
  });
}

torch::Tensor dropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p <= 0) return x;
  const bool fused = kernels() == Kernels::Fused && x.device().is_cpu() && p < 1 &&
                     (x.scalar_type() == torch::kFloat || x.scalar_type() == torch::kDouble);
  if (!fused) return torch::dropout(x, p, true);
  return Dropout::apply(x, p)[0];
}

}  // namespace stx
