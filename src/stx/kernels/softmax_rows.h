// stx/kernels/softmax_rows.h — one attention head's softmax over its visible keys, forward and
// backward, for the attention core (attention_core.cpp): row loops head by head while the scores
// are in cache, with vec_math.h's exp. A causal row of a 64-key head is 1–64 keys long; rounded up
// to whole 64-byte vectors, every pass runs without a scalar tail.
// In an unnamed namespace: each including file gets its own copy (and its own target clones).
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "stx/kernels/target_clones.h"
#include "stx/kernels/vec_math.h"

namespace stx {
namespace {

// Row i of head (b, h) sees keys j < limit(i) (causal: j ≤ i) that are not padding.
inline int64_t visible_limit(bool causal, int64_t i, int64_t Tk) { return causal ? std::min(i + 1, Tk) : Tk; }

// Whole-vector row loops: n a multiple of the lanes W, so every pass is W-wide with no scalar
// tail (a causal row of a 64-key head is 1–64 long: the tails were half the softmax's time).
template <typename T>
constexpr int64_t kLanes = 64 / static_cast<int64_t>(sizeof(T));

template <typename T>
STX_VEC_INLINE T max_whole(const T* x, int64_t n) {
  constexpr int64_t W = kLanes<T>;
  T acc[W];
  for (int64_t k = 0; k < W; ++k) acc[k] = x[k];
  for (int64_t j = W; j < n; j += W)
    for (int64_t k = 0; k < W; ++k) acc[k] = acc[k] > x[j + k] ? acc[k] : x[j + k];
  for (int64_t w = W / 2; w > 0; w /= 2)  // a tree across the lanes, not a serial chain
    for (int64_t k = 0; k < w; ++k) acc[k] = acc[k] > acc[k + w] ? acc[k] : acc[k + w];
  return acc[0];
}

template <typename T>
STX_VEC_INLINE T dot_whole(const T* x, const T* y, int64_t n) {
  constexpr int64_t W = kLanes<T>;
  T acc[W] = {};
  for (int64_t j = 0; j < n; j += W)
    for (int64_t k = 0; k < W; ++k) acc[k] += x[j + k] * y[j + k];
  for (int64_t w = W / 2; w > 0; w /= 2)
    for (int64_t k = 0; k < w; ++k) acc[k] += acc[k + w];
  return acc[0];
}

// The visible part [0, L) of a row rounded up to whole vectors, or 0 where that passes Tk.
template <typename T>
inline int64_t whole_limit(int64_t L, int64_t Tk) {
  const int64_t Lp = (L + kLanes<T> - 1) / kLanes<T> * kLanes<T>;
  return Lp <= Tk ? Lp : 0;
}

// Rows r of a causal head with whole-vector parts [0, Lp[r]) (keys in [L[r], Lp[r]) hidden), R at
// once: their max, exp and sum chains are independent, so that the CPU can run one row's
// reductions while it computes the other's exponentials. False, with nothing but hidden keys
// changed, when a row sees no key (the caller then takes the rows one by one).
template <typename T, int R>
STX_VEC_INLINE bool softmax_whole_rows(T* const (&row)[R], const int64_t (&L)[R], const int64_t (&Lp)[R], int64_t Tk) {
  constexpr int64_t W = kLanes<T>;
  T m[R];
#pragma GCC unroll 2
  for (int r = 0; r < R; ++r) {
    T* last = row[r] + Lp[r] - W;
    const int64_t first_hidden = L[r] - (Lp[r] - W);
    for (int64_t k = 0; k < W; ++k) last[k] = k < first_hidden ? last[k] : -std::numeric_limits<T>::infinity();
  }
#pragma GCC unroll 2
  for (int r = 0; r < R; ++r) m[r] = max_whole(row[r], Lp[r]);
  for (int r = 0; r < R; ++r)
    if (m[r] == -std::numeric_limits<T>::infinity()) return false;
  // The sum in the exp pass (reading back the row just stored stalled on store forwarding).
  // Hidden keys add exp(−87.3 − ·) ≤ 1.2e−38 to a sum ≥ 1 (the max's own term): nothing.
  T acc[R][W] = {};
#pragma GCC unroll 2
  for (int r = 0; r < R; ++r)
    for (int64_t j = 0; j < Lp[r]; j += W)
      for (int64_t k = 0; k < W; ++k) {
        const T e = vec::exp(row[r][j + k] - m[r]);
        row[r][j + k] = e;
        acc[r][k] += e;
      }
  T inv[R];
#pragma GCC unroll 2
  for (int r = 0; r < R; ++r) {
    T* last = row[r] + Lp[r] - W;
    const int64_t first_hidden = L[r] - (Lp[r] - W);
    for (int64_t k = 0; k < W; ++k) last[k] = k < first_hidden ? last[k] : T(0);
    for (int64_t w = W / 2; w > 0; w /= 2)
      for (int64_t k = 0; k < w; ++k) acc[r][k] += acc[r][k + w];
    inv[r] = T(1) / acc[r][0];
  }
#pragma GCC unroll 2
  for (int r = 0; r < R; ++r) {
    for (int64_t j = 0; j < Lp[r]; j += W)
      for (int64_t k = 0; k < W; ++k) row[r][j + k] *= inv[r];
    for (int64_t j = Lp[r]; j < Tk; ++j) row[r][j] = T(0);
  }
  return true;
}

// In place, one head's S [Tq, Tk] → P = softmax over the visible keys (0 elsewhere). Masked
// scores never enter the exponentials, so the masked half of a causal row costs nothing; this
// equals the reference's masked_fill(−1e9) + softmax, where exp(−1e9 − max) is exactly 0. A
// row with no visible key gets the reference's uniform 1/Tk, and its index (row0 + i) goes to
// `blind` (it passes no gradient). With padding, `keep` [Tk] is 1 at visible keys and 0 at
// padding, `bias` 0 / −inf alike; `shifted` is scratch of Tk elements.
template <typename T>
STX_CLONES void softmax_head(T* S, int64_t Tq, int64_t Tk, bool causal, const T* keep, const T* bias, T* shifted,
                             int64_t row0, std::vector<int64_t>& blind) {
  for (int64_t i = 0; i < Tq; ++i) {
    T* row = S + i * Tk;
    const int64_t L = visible_limit(causal, i, Tk);
    const int64_t Lp = keep ? 0 : whole_limit<T>(L, Tk);
    if (Lp > 0 && i + 1 < Tq) {  // two rows at once where both are whole vectors
      const int64_t L1 = visible_limit(causal, i + 1, Tk), Lp1 = whole_limit<T>(L1, Tk);
      if (Lp1 > 0 && softmax_whole_rows<T, 2>({row, row + Tk}, {L, L1}, {Lp, Lp1}, Tk)) {
        ++i;
        continue;
      }
    }
    if (Lp > 0) {  // whole vectors over [0, Lp): the keys in [L, Lp) are −∞ for the max, 0 after exp
      if (softmax_whole_rows<T, 1>({row}, {L}, {Lp}, Tk)) continue;
      for (int64_t j = 0; j < Tk; ++j) row[j] = T(1) / T(Tk);  // no visible key
      blind.push_back(row0 + i);
      continue;
    }
    T m;
    if (keep) {
      for (int64_t j = 0; j < L; ++j) shifted[j] = row[j] + bias[j];
      m = vec::max(shifted, L);
    } else {
      m = vec::max(row, L);
    }
    if (m == -std::numeric_limits<T>::infinity()) {  // nothing visible
      for (int64_t j = 0; j < Tk; ++j) row[j] = T(1) / T(Tk);
      blind.push_back(row0 + i);
      continue;
    }
    vec::exp_shifted(row, row, L, m);
    if (keep)
      for (int64_t j = 0; j < L; ++j) row[j] *= keep[j];
    const T inv = T(1) / vec::sum(row, L);
    for (int64_t j = 0; j < L; ++j) row[j] *= inv;
    for (int64_t j = L; j < Tk; ++j) row[j] = T(0);
  }
}

// In place, one head's dP [Tq, Tk] → dS = P ∘ (dP − Σ_j P_j dP_j) over the visible part of each
// row; masked entries (P = 0) and the rows listed in blind[lo, hi) (indices relative to row0)
// get 0.
template <typename T>
STX_CLONES void softmax_backward_head(T* dP, const T* P, int64_t Tq, int64_t Tk, bool causal, const int64_t* blind_lo,
                                      const int64_t* blind_hi, int64_t row0) {
  for (int64_t i = 0; i < Tq; ++i) {
    T* g = dP + i * Tk;
    const T* p = P + i * Tk;
    const int64_t L = visible_limit(causal, i, Tk), Lp = whole_limit<T>(L, Tk);
    if (Lp > 0) {  // P is 0 in [L, Lp): so is dS there (g may hold anything there: set to 0 first)
      // Two rows at once where the next is whole vectors too (independent dot-product chains).
      const int64_t L1 = i + 1 < Tq ? visible_limit(causal, i + 1, Tk) : 0;
      const int64_t Lp1 = i + 1 < Tq ? whole_limit<T>(L1, Tk) : 0;
      const int R = Lp1 > 0 ? 2 : 1;
      T* const gs[2] = {g, g + Tk};
      const T* const ps[2] = {p, p + Tk};
      const int64_t Ls[2] = {L, L1}, Lps[2] = {Lp, Lp1};
      constexpr int64_t W = kLanes<T>;
      T dot[2] = {};
#pragma GCC unroll 2
      for (int r = 0; r < R; ++r) {
        T* last = gs[r] + Lps[r] - W;
        const int64_t first_hidden = Ls[r] - (Lps[r] - W);
        for (int64_t k = 0; k < W; ++k) last[k] = k < first_hidden ? last[k] : T(0);
      }
#pragma GCC unroll 2
      for (int r = 0; r < R; ++r) dot[r] = dot_whole(ps[r], gs[r], Lps[r]);
#pragma GCC unroll 2
      for (int r = 0; r < R; ++r) {
        for (int64_t j = 0; j < Lps[r]; j += W)
          for (int64_t k = 0; k < W; ++k) gs[r][j + k] = ps[r][j + k] * (gs[r][j + k] - dot[r]);
        for (int64_t j = Lps[r]; j < Tk; ++j) gs[r][j] = T(0);
      }
      i += R - 1;
      continue;
    }
    const T dot = vec::dot(p, g, L);
    for (int64_t j = 0; j < L; ++j) g[j] = p[j] * (g[j] - dot);
    for (int64_t j = L; j < Tk; ++j) g[j] = T(0);
  }
  for (const int64_t* r = blind_lo; r != blind_hi; ++r)
    std::fill(dP + (*r - row0) * Tk, dP + (*r - row0 + 1) * Tk, T(0));
}

}  // namespace
}  // namespace stx
