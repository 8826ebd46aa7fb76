// stx/kernels/softcap_rows.h — Gemma 2's soft-capping of one attention head's scores (Gemma Team
// 2024, §2.2: logits ← c · tanh(logits / c), c = 50 for attention), forward and backward, for the
// attention core (attention_core.cpp), over the keys each row may see (the rest is masked by the
// softmax). The forward keeps t = tanh(S / c) for the backward: dS = dS_capped ⊙ (1 − t²).
// In an unnamed namespace: each including file gets its own copy (and its own target clones).
#pragma once
#include <cstdint>

#include "stx/kernels/softmax_rows.h"
#include "stx/kernels/target_clones.h"
#include "stx/kernels/vec_math.h"

namespace stx {
namespace {

// In place, S [Tq, Tk] → c · tanh(S / c) over each row's visible keys; t [Tq, Tk] ← tanh(S / c) there.
template <typename T>
STX_CLONES void softcap_head(T* S, T* t, int64_t Tq, int64_t Tk, bool causal, T c) {
  const T inv = T(1) / c;
  for (int64_t i = 0; i < Tq; ++i) {
    T *s = S + i * Tk, *ti = t + i * Tk;
    const int64_t L = visible_limit(causal, i, Tk);
    for (int64_t j = 0; j < L; ++j) {
      const T u = vec::tanh(s[j] * inv);
      ti[j] = u;
      s[j] = c * u;
    }
  }
}

// In place, dS [Tq, Tk] (the gradient of the capped scores) → that of the raw ones: ⊙ (1 − t²).
template <typename T>
STX_CLONES void softcap_backward_head(T* dS, const T* t, int64_t Tq, int64_t Tk, bool causal) {
  for (int64_t i = 0; i < Tq; ++i) {
    T* g = dS + i * Tk;
    const T* ti = t + i * Tk;
    const int64_t L = visible_limit(causal, i, Tk);
    for (int64_t j = 0; j < L; ++j) g[j] *= T(1) - ti[j] * ti[j];
  }
}

}  // namespace
}  // namespace stx
