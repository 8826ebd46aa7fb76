// stx/kernels/vec_math.h — exp for the fused kernels' row loops, written so that GCC vectorizes
// it (no libm call): Cody–Waite range reduction x = k·ln2 + r, |r| ≤ ln2/2, then Cephes'
// degree-6 polynomial for e^r (relative error ≤ 2 ulp on [−87.3, 88.3]; tests/test_kernels.cpp
// checks it against std::exp), scaled by 2^k through the exponent bits. Inputs below −87.3
// give e^−87.3 ≈ 1.2e−38 (the callers skip masked entries instead of relying on exp → 0).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

// Every function here is forced inline: an out-of-line copy is compiled for the baseline ISA,
// not for the target_clones ISA of the row loop that calls it (scripts/check-inlined.sh checks
// the built binary; a tests/ CTest runs it).
#define STX_VEC_INLINE [[gnu::always_inline]] inline

namespace stx::vec {

STX_VEC_INLINE float exp(float x) {
  x = std::max(x, -87.3f);
  x = std::min(x, 88.3f);                                                // k ≤ 127: 2^k stays finite
  const float k = (x * 1.44269504088896341f + 12582912.f) - 12582912.f;  // round(x / ln2)
  const float r = (x - k * 0.693359375f) + k * 2.12194440e-4f;           // x − k·ln2 in two parts
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float er = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(k) + 127) << 23;  // 2^k
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return er * scale;
}

STX_VEC_INLINE double exp(double x) { return std::exp(x); }  // float64 paths (tests, theory) keep libm

// tanh(x) = 1 − 2 / (e^{2x} + 1) through the exp above: absolute error within a few ulp of 1
// (not relative: near 0 the subtraction cancels; stx scales it by the soft-cap c, where only the
// absolute error matters). Saturates to ±1 without overflow (exp clamps its argument).
template <typename T>
STX_VEC_INLINE T tanh(T x) {
  return T(1) - T(2) / (exp(T(2) * x) + T(1));
}

// Row reductions in 16 independent lanes: GCC vectorizes these without reassociation flags
// (a plain `s += x[j]` loop stays scalar, and `omp simd reduction` does not vectorize beside
// the inlined exp).
template <typename T>
STX_VEC_INLINE T sum(const T* x, int64_t n) {
  T acc[16] = {};
  int64_t j = 0;
  for (; j + 16 <= n; j += 16)
    for (int k = 0; k < 16; ++k) acc[k] += x[j + k];
  T s = 0;
  for (; j < n; ++j) s += x[j];
  for (int k = 0; k < 16; ++k) s += acc[k];
  return s;
}

template <typename T>
STX_VEC_INLINE T dot(const T* x, const T* y, int64_t n) {
  T acc[16] = {};
  int64_t j = 0;
  for (; j + 16 <= n; j += 16)
    for (int k = 0; k < 16; ++k) acc[k] += x[j + k] * y[j + k];
  T s = 0;
  for (; j < n; ++j) s += x[j] * y[j];
  for (int k = 0; k < 16; ++k) s += acc[k];
  return s;
}

template <typename T>
STX_VEC_INLINE T max(const T* x, int64_t n) {
  T m = -std::numeric_limits<T>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t j = 0; j < n; ++j) m = m > x[j] ? m : x[j];
  return m;
}

// out[j] = exp(x[j] − m).
template <typename T>
STX_VEC_INLINE void exp_shifted(const T* x, T* out, int64_t n, T m) {  // out may be x
  for (int64_t j = 0; j < n; ++j) out[j] = exp(x[j] - m);
}

// out[j] = exp(x[j] − m), returning Σ out in the same pass: the value and the order of sum(out, n)
// (16 lanes over whole blocks, then the tail and the lanes), without reading out back.
template <typename T>
STX_VEC_INLINE T exp_shifted_sum(const T* x, T* out, int64_t n, T m) {  // out may be x
  T acc[16] = {};
  int64_t j = 0;
  for (; j + 16 <= n; j += 16)
    for (int k = 0; k < 16; ++k) {
      const T e = exp(x[j + k] - m);
      out[j + k] = e;
      acc[k] += e;
    }
  T s = 0;
  for (; j < n; ++j) s += out[j] = exp(x[j] - m);
  for (int k = 0; k < 16; ++k) s += acc[k];
  return s;
}

}  // namespace stx::vec
