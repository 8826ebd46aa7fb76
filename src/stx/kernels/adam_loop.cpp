#include "stx/kernels/adam_loop.h"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>

namespace stx {
namespace {

// MKL's vector square root, which torch.sqrt calls on contiguous float tensors when LibTorch is
// built with MKL (ATen/cpu/vml.h: vmsSqrt with VML_HA | VML_FTZDAZ_OFF | VML_ERRMODE_IGNORE). It
// is accurate to under 1 ulp, not correctly rounded: std::sqrt differs from it in ~0.7 % of the
// elements. Looked up at run time in the process (the PyPI wheel's libtorch_cpu exports it).
using VmsSqrt = void (*)(int n, const float* a, float* r, long long mode);
constexpr long long kVmlHaFtzDazOffErrIgnore = 0x2 | 0x140000 | 0x100;

VmsSqrt find_vms_sqrt() {
  static const VmsSqrt f = reinterpret_cast<VmsSqrt>(dlsym(RTLD_DEFAULT, "vmsSqrt"));
  return f;
}

// MKL would start its own thread team for every vmsSqrt called inside LibTorch's parallel_for
// (measured: Adam on 23 M parameters took 5.3 s a step instead of 0.2 s on 2 threads); the
// calling thread is made single-threaded for MKL while the loop runs (MKL_Set_Num_Threads_Local:
// the C entry point; the lower-case name is the Fortran one, which takes a pointer).
using MklSetNumThreadsLocal = int (*)(int);
struct MklSequential {
  MklSequential() {
    static const auto f = reinterpret_cast<MklSetNumThreadsLocal>(dlsym(RTLD_DEFAULT, "MKL_Set_Num_Threads_Local"));
    set = f;
    if (set) previous = set(1);
  }
  ~MklSequential() {
    if (set) set(previous);  // 0 = back to MKL's global setting
  }
  MklSetNumThreadsLocal set = nullptr;
  int previous = 0;
};

// One block (8 KiB per array, in L1/L2): m, v and then p, with √v in between (from MKL where LibTorch has it).
// The fast clone needs AVX2 and FMA: x86-64-v3 is the feature level, which any such CPU passes.
// (It was "arch=haswell" until stop 28: that selects on the CPU model, never on an AMD EPYC, so
// the baseline clone ran there with every std::fma a call into libm — 10 % of a d64×24 step.)
// x86-64-v4 (AVX-512) first where the CPU has it: element-wise, so bit-equal to the v3 clone.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define STX_ADAM_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define STX_ADAM_CLONES
#endif
STX_ADAM_CLONES void adam_block(float* __restrict p, const float* __restrict g, float* __restrict m,
                                float* __restrict v, float* __restrict root, int n, const AdamCoefficients& c,
                                VmsSqrt vms_sqrt) {
  const float b2 = c.beta2, a2 = c.one_minus_beta2, eps = c.eps, decay = c.decay, l2 = c.l2;
  const float neg_step = -c.step_size, bc2 = c.bias_correction2_sqrt;
  // ATen's lerp(m, g, w) = fma(w, g − m, m) for |w| < ½, else fma(w − 1, g − m, g).
  const bool small = std::abs(c.one_minus_beta1) < 0.5f;
  const float w = small ? c.one_minus_beta1 : c.one_minus_beta1 - 1.0f;
  for (int i = 0; i < n; ++i) {
    const float gi = l2 != 0 ? std::fma(l2, p[i], g[i]) : g[i];  // grad.add(param, alpha=λ)
    m[i] = std::fma(w, gi - m[i], small ? m[i] : gi);            // exp_avg.lerp_(grad, 1 − β₁)
    v[i] = std::fma(a2 * gi, gi, v[i] * b2);  // exp_avg_sq.mul_(β₂).addcmul_(grad, grad, value=1 − β₂)
  }
  if (vms_sqrt) vms_sqrt(n, v, root, kVmlHaFtzDazOffErrIgnore);
  else
    for (int i = 0; i < n; ++i) root[i] = std::sqrt(v[i]);
  for (int i = 0; i < n; ++i) {
    const float denom = root[i] / bc2 + eps;        // (exp_avg_sq.sqrt() / bc2_sqrt).add_(eps)
    p[i] = p[i] * decay + neg_step * m[i] / denom;  // AdamW's mul_, then addcdiv_(m, denom, value=−step)
  }
}

}  // namespace

bool adam_sqrt_is_torchs() { return find_vms_sqrt() != nullptr; }

void adam_range(float* p, const float* g, float* m, float* v, int64_t n, const AdamCoefficients& c) {
  constexpr int kBlock = 2048;
  float root[kBlock];
  const VmsSqrt vms_sqrt = find_vms_sqrt();
  const MklSequential sequential;
  for (int64_t lo = 0; lo < n; lo += kBlock) {
    const int k = static_cast<int>(std::min<int64_t>(kBlock, n - lo));
    adam_block(p + lo, g + lo, m + lo, v + lo, root, k, c, vms_sqrt);
  }
}

}  // namespace stx
