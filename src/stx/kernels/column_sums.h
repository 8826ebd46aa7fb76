// stx/kernels/column_sums.h — the column sums of the fused sub-layers' backward: a bias
// gradient Σ_rows dy, and a norm's weight and bias gradients Σ_rows dy·ŝ and Σ_rows dy in one pass.
// In an unnamed namespace: each including file gets its own copy (and its own target clones).
#pragma once
#include <cstdint>

#include "stx/kernels/target_clones.h"
#include "stx/kernels/vec_math.h"  // STX_VEC_INLINE

namespace stx {
namespace {

// Column sums of a [N, d] (rows ld apart), accumulated in double: sum_a[j] = Σ_n a[n, j] and
// sum_ab[j] = Σ_n a[n, j]·b[n, j] (either null: not computed), stored or, kAdd, added to what is
// there (direct_grads.h: g + Σ, rounded as autograd's add of the sum). Blocks of 32 columns keep
// their accumulators in registers over all N rows (one pass for both sums); the order of each
// column's sum is n = 0, 1, … as before.
template <typename T, bool kA, bool kAB, bool kAdd, int64_t C>
STX_VEC_INLINE void column_block(const T* a, const T* b, int64_t N, int64_t ld, T* sum_a, T* sum_ab) {
  double sa[C] = {}, sab[C] = {};
  for (int64_t n = 0; n < N; ++n) {
    const T *ar = a + n * ld, *br = kAB ? b + n * ld : nullptr;
#pragma GCC unroll 32
    for (int64_t k = 0; k < C; ++k) {
      if (kA) sa[k] += static_cast<double>(ar[k]);
      if (kAB) sab[k] += static_cast<double>(ar[k] * br[k]);
    }
  }
  for (int64_t k = 0; k < C; ++k) {
    if (kA) sum_a[k] = kAdd ? sum_a[k] + static_cast<T>(sa[k]) : static_cast<T>(sa[k]);
    if (kAB) sum_ab[k] = kAdd ? sum_ab[k] + static_cast<T>(sab[k]) : static_cast<T>(sab[k]);
  }
}

template <typename T, bool kA, bool kAB, bool kAdd>
STX_VEC_INLINE void column_sums_of(const T* a, const T* b, int64_t N, int64_t d, int64_t ld, T* sum_a, T* sum_ab) {
  int64_t j = 0;
  for (; j + 32 <= d; j += 32)
    column_block<T, kA, kAB, kAdd, 32>(a + j, kAB ? b + j : nullptr, N, ld, kA ? sum_a + j : nullptr,
                                       kAB ? sum_ab + j : nullptr);
  for (; j < d; ++j)
    column_block<T, kA, kAB, kAdd, 1>(a + j, kAB ? b + j : nullptr, N, ld, kA ? sum_a + j : nullptr,
                                      kAB ? sum_ab + j : nullptr);
}

template <typename T, bool kAdd>
STX_VEC_INLINE void column_sums_mode(const T* a, const T* b, int64_t N, int64_t d, int64_t ld, T* sum_a, T* sum_ab) {
  if (sum_a && sum_ab) column_sums_of<T, true, true, kAdd>(a, b, N, d, ld, sum_a, sum_ab);
  else if (sum_ab) column_sums_of<T, false, true, kAdd>(a, b, N, d, ld, sum_a, sum_ab);
  else if (sum_a) column_sums_of<T, true, false, kAdd>(a, b, N, d, ld, sum_a, sum_ab);
}

// ld: the row stride (0: d); add: add the sums to sum_a, sum_ab instead of storing them.
template <typename T>
STX_CLONES void column_sums(const T* a, const T* b, int64_t N, int64_t d, T* sum_a, T* sum_ab, int64_t ld = 0,
                            bool add = false) {
  if (ld == 0) ld = d;
  if (add) column_sums_mode<T, true>(a, b, N, d, ld, sum_a, sum_ab);
  else column_sums_mode<T, false>(a, b, N, d, ld, sum_a, sum_ab);
}

}  // namespace
}  // namespace stx
