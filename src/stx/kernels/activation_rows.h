// stx/kernels/activation_rows.h — the FFN's activation over the fused sub-layer's rows
// (fused_sublayer.cpp), forward and backward: ReLU, and GELU in its erf form (Hendrycks & Gimpel
// 2016), with float32's erf as LibTorch's vectorized one computes it.
// In an unnamed namespace: each including file gets its own copy (and its own target clones).
#pragma once
#include <cmath>
#include <cstdint>

#include "stx/kernels/target_clones.h"
#include "stx/kernels/vec_math.h"

namespace stx {
namespace {

// GELU, erf form: gelu(z) = z·Φ(z), Φ(z) = ½(1 + erf(z/√2)); gelu'(z) = Φ(z) + z·φ(z). float32
// uses Abramowitz & Stegun 7.1.26 for erf (|error| ≤ 1.5e-7, the formula LibTorch's vectorized
// erf uses), erf(u) = 1 − t·P(t)·e^{−u²} with t = 1/(1 + p|u|), taking e^{−u²} from the caller;
// float64 uses libm.
inline float erf_with_exp(float u, float e) {
  const float t = 1.0f / (1.0f + 0.3275911f * std::abs(u));
  const float poly =
      ((((1.061405429f * t - 1.453152027f) * t + 1.421413741f) * t - 0.284496736f) * t + 0.254829592f) * t;
  const float r = 1.0f - poly * e;
  return u < 0 ? -r : r;
}
inline double erf_with_exp(double u, double) { return std::erf(u); }

// a = act(z). GELU also overwrites z with gelu'(z) for backward, sharing the one exp(−z²/2) that
// erf and φ both need (A&S 7.1.26 evaluates erf(z/√2) through it); ReLU leaves z alone (its
// backward reads a > 0).
template <typename T>
STX_CLONES void activation_forward(T* z, T* a, int64_t lo, int64_t hi, bool gelu) {
  constexpr T kSqrtHalf = T(0.70710678118654752440), kInvSqrt2Pi = T(0.39894228040143267794);
  if (gelu)
    for (int64_t i = lo; i < hi; ++i) {
      const T x = z[i], e = vec::exp(T(-0.5) * x * x), cdf = T(0.5) * (T(1) + erf_with_exp(x * kSqrtHalf, e));
      a[i] = x * cdf;
      z[i] = cdf + x * kInvSqrt2Pi * e;
    }
  else
    for (int64_t i = lo; i < hi; ++i) a[i] = z[i] > T(0) ? z[i] : T(0);
}

// da ← da ∘ act'(z): GELU from the derivative activation_forward left in z, ReLU from a.
template <typename T>
STX_CLONES void activation_backward(const T* z, const T* a, T* da, int64_t lo, int64_t hi, bool gelu) {
  if (gelu)
    for (int64_t i = lo; i < hi; ++i) da[i] *= z[i];
  else
    for (int64_t i = lo; i < hi; ++i) da[i] = a[i] > T(0) ? da[i] : T(0);
}

}  // namespace
}  // namespace stx
