// stx/kernels/norm_rows.h — LayerNorm / RMSNorm over the rows of a [N, d] matrix, forward and
// backward, for the fused nodes (residual_norm.h, fused_sublayer.h):
//   s = α·x + g,  LayerNorm: ŝ = (s − mean s)·r, r = 1/√(var s + ε);  RMSNorm: ŝ = s·r,
//   r = 1/√(mean s² + ε);  y = ŝ·w + b.   Backward with u = dy·w:
//   ds = r·(u − mean(u) − ŝ·mean(u·ŝ))   (RMSNorm: without the mean(u) term).
// In an unnamed namespace: each including file gets its own copy (and its own target clones).
#pragma once
#include <cmath>
#include <cstdint>

#include "stx/kernels/target_clones.h"
#include "stx/kernels/vec_math.h"

namespace stx {
namespace {

// The row loops for a width D known at compile time (0: the runtime d). At d64 a row is four
// vectors: with D fixed the passes have no loop tails and the row stays in registers.
template <typename T, int64_t D>
STX_VEC_INLINE void forward_rows_of(const T* x, const T* g, T* xhat, T* rstd, T* y, const T* w, const T* b,
                                    int64_t d_runtime, int64_t lo, int64_t hi, T alpha, T eps, bool centered) {
  const int64_t d = D > 0 ? D : d_runtime;
  for (int64_t n = lo; n < hi; ++n) {
    const T *xr = x + n * d, *gr = g ? g + n * d : nullptr;
    T* s = xhat + n * d;
    if (g)
      for (int64_t j = 0; j < d; ++j) s[j] = alpha * xr[j] + gr[j];
    else
      for (int64_t j = 0; j < d; ++j) s[j] = xr[j];
    if (centered) {
      const T mean = vec::sum(s, d) / T(d);
      for (int64_t j = 0; j < d; ++j) s[j] -= mean;
    }
    const T r = T(1) / std::sqrt(vec::dot(s, s, d) / T(d) + eps);
    rstd[n] = r;
    T* yr = y + n * d;
    for (int64_t j = 0; j < d; ++j) {
      s[j] *= r;
      yr[j] = b ? s[j] * w[j] + b[j] : s[j] * w[j];
    }
  }
}

template <typename T, int64_t D>
STX_VEC_INLINE void backward_rows_of(const T* dy, const T* xhat, const T* rstd, const T* w, T* ds, int64_t d_runtime,
                                     int64_t lo, int64_t hi, bool centered) {
  const int64_t d = D > 0 ? D : d_runtime;
  for (int64_t n = lo; n < hi; ++n) {
    const T *dyr = dy + n * d, *xr = xhat + n * d;
    T* o = ds + n * d;
    for (int64_t j = 0; j < d; ++j) o[j] = dyr[j] * w[j];  // u
    const T mu = centered ? vec::sum(o, d) / T(d) : T(0), mux = vec::dot(o, xr, d) / T(d), r = rstd[n];
    for (int64_t j = 0; j < d; ++j) o[j] = r * (o[j] - mu - xr[j] * mux);
  }
}

// Rows [lo, hi): s = αx + g (g null: s = x), ŝ (stored in xhat), r and y = ŝ·w + b (b null: none).
// The same arithmetic in the same order for every width (the fixed ones only drop the tails).
template <typename T>
STX_CLONES void forward_rows(const T* x, const T* g, T* xhat, T* rstd, T* y, const T* w, const T* b, int64_t d,
                             int64_t lo, int64_t hi, T alpha, T eps, bool centered) {
  switch (d) {
    case 64: return forward_rows_of<T, 64>(x, g, xhat, rstd, y, w, b, d, lo, hi, alpha, eps, centered);
    case 128: return forward_rows_of<T, 128>(x, g, xhat, rstd, y, w, b, d, lo, hi, alpha, eps, centered);
    case 256: return forward_rows_of<T, 256>(x, g, xhat, rstd, y, w, b, d, lo, hi, alpha, eps, centered);
    case 512: return forward_rows_of<T, 512>(x, g, xhat, rstd, y, w, b, d, lo, hi, alpha, eps, centered);
    default: return forward_rows_of<T, 0>(x, g, xhat, rstd, y, w, b, d, lo, hi, alpha, eps, centered);
  }
}

// Rows [lo, hi): ds (written to dg) from dy.
template <typename T>
STX_CLONES void backward_rows(const T* dy, const T* xhat, const T* rstd, const T* w, T* ds, int64_t d, int64_t lo,
                              int64_t hi, bool centered) {
  switch (d) {
    case 64: return backward_rows_of<T, 64>(dy, xhat, rstd, w, ds, d, lo, hi, centered);
    case 128: return backward_rows_of<T, 128>(dy, xhat, rstd, w, ds, d, lo, hi, centered);
    case 256: return backward_rows_of<T, 256>(dy, xhat, rstd, w, ds, d, lo, hi, centered);
    case 512: return backward_rows_of<T, 512>(dy, xhat, rstd, w, ds, d, lo, hi, centered);
    default: return backward_rows_of<T, 0>(dy, xhat, rstd, w, ds, d, lo, hi, centered);
  }
}

}  // namespace
}  // namespace stx
