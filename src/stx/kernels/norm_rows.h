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
// vectors: with D fixed the passes have no loop tails and the row stays in registers. R rows at
// a time: each row's sums are a latency chain (sum → mean → dot → √ → 1/x), and R independent
// chains side by side let the CPU overlap them; every row's arithmetic and its order are the
// same for any R.
template <typename T, int64_t D, int R>
STX_VEC_INLINE void forward_rows_block(const T* x, const T* g, T* xhat, T* rstd, T* y, const T* w, const T* b,
                                       int64_t d, int64_t n, T alpha, T eps, bool centered) {
  T* s[R];
#pragma GCC unroll 2
  for (int q = 0; q < R; ++q) {
    const T *xr = x + (n + q) * d, *gr = g ? g + (n + q) * d : nullptr;
    s[q] = xhat + (n + q) * d;
    if (g)
      for (int64_t j = 0; j < d; ++j) s[q][j] = alpha * xr[j] + gr[j];
    else
      for (int64_t j = 0; j < d; ++j) s[q][j] = xr[j];
  }
  if (centered) {
    T mean[R];
#pragma GCC unroll 2
    for (int q = 0; q < R; ++q) mean[q] = vec::sum(s[q], d) / T(d);
#pragma GCC unroll 2
    for (int q = 0; q < R; ++q)
      for (int64_t j = 0; j < d; ++j) s[q][j] -= mean[q];
  }
  T r[R];
#pragma GCC unroll 2
  for (int q = 0; q < R; ++q) r[q] = T(1) / std::sqrt(vec::dot(s[q], s[q], d) / T(d) + eps);
#pragma GCC unroll 2
  for (int q = 0; q < R; ++q) {
    rstd[n + q] = r[q];
    T* yr = y + (n + q) * d;
    for (int64_t j = 0; j < d; ++j) {
      s[q][j] *= r[q];
      yr[j] = b ? s[q][j] * w[j] + b[j] : s[q][j] * w[j];
    }
  }
}

template <typename T, int64_t D>
STX_VEC_INLINE void forward_rows_of(const T* x, const T* g, T* xhat, T* rstd, T* y, const T* w, const T* b,
                                    int64_t d_runtime, int64_t lo, int64_t hi, T alpha, T eps, bool centered) {
  const int64_t d = D > 0 ? D : d_runtime;
  int64_t n = lo;
  for (; n + 2 <= hi; n += 2) forward_rows_block<T, D, 2>(x, g, xhat, rstd, y, w, b, d, n, alpha, eps, centered);
  if (n < hi) forward_rows_block<T, D, 1>(x, g, xhat, rstd, y, w, b, d, n, alpha, eps, centered);
}

template <typename T, int64_t D, int R>
STX_VEC_INLINE void backward_rows_block(const T* dy, const T* xhat, const T* rstd, const T* w, T* ds, int64_t d,
                                        int64_t n, bool centered) {
  T mu[R], mux[R];
#pragma GCC unroll 2
  for (int q = 0; q < R; ++q) {
    const T* dyr = dy + (n + q) * d;
    T* o = ds + (n + q) * d;
    for (int64_t j = 0; j < d; ++j) o[j] = dyr[j] * w[j];  // u
  }
#pragma GCC unroll 2
  for (int q = 0; q < R; ++q) {
    const T* o = ds + (n + q) * d;
    mu[q] = centered ? vec::sum(o, d) / T(d) : T(0);
    mux[q] = vec::dot(o, xhat + (n + q) * d, d) / T(d);
  }
#pragma GCC unroll 2
  for (int q = 0; q < R; ++q) {
    const T *xr = xhat + (n + q) * d, r = rstd[n + q];
    T* o = ds + (n + q) * d;
    for (int64_t j = 0; j < d; ++j) o[j] = r * (o[j] - mu[q] - xr[j] * mux[q]);
  }
}

template <typename T, int64_t D>
STX_VEC_INLINE void backward_rows_of(const T* dy, const T* xhat, const T* rstd, const T* w, T* ds, int64_t d_runtime,
                                     int64_t lo, int64_t hi, bool centered) {
  const int64_t d = D > 0 ? D : d_runtime;
  int64_t n = lo;
  for (; n + 2 <= hi; n += 2) backward_rows_block<T, D, 2>(dy, xhat, rstd, w, ds, d, n, centered);
  if (n < hi) backward_rows_block<T, D, 1>(dy, xhat, rstd, w, ds, d, n, centered);
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
