// stx/kernels/band_gemm.h — the attention core's per-head products, computed by stx instead of
// one BLAS call each. At d_head 16 and 64 tokens a head's product is 64 × 64 × 16: OpenBLAS
// spends more time packing and dispatching than multiplying (about 70–110 GFLOP/s against
// 220 on the step's large products), and a causal head needs only the lower triangle of its
// scores and only the visible keys of its probabilities, which a dense BLAS call computes anyway.
//
//   C[r, 0:n) = α · Σ_{p ∈ band(r)} A(r, p) · B[p, 0:n)
//
// A(r, p) = a[r·rsa + p·csa] (any strides: A or Aᵀ of a row-major matrix); B is packed first
// (pack_b / pack_bt: contiguous rows of ldb = padded_cols(n) elements, zero beyond n), so the
// kernel reads whole vectors; C is row-major with unit column stride. The band says which terms
// a row needs (r = row of C, causal: key j visible to query i iff j ≤ i):
//   kFull       p ∈ [0, k), every column.
//   kCausalCols p ∈ [0, k), columns j ≤ r only; C[r, j > r] = 0 (the scores Q Kᵀ and dO Vᵀ).
//   kPUpTo      p ≤ r (P V, dS K: A is zero above its diagonal).
//   kPFrom      p ≥ r (Pᵀ dO, dSᵀ Q: A is zero below the diagonal of Aᵀ).
// kPUpTo and kPFrom compute a block of rows over the union of its rows' bands, so they need the
// zeros they skip to be exact zeros in A (softmax writes them); a head with a "blind" row (no
// visible key: uniform probabilities over every key) must use kFull.
#pragma once
#include <cstdint>

namespace stx::band {

enum class Band { kFull, kCausalCols, kPUpTo, kPFrom };

// Elements per packed row of B for n columns: n rounded up to the kernel's vector width.
int64_t padded_cols(int64_t n, bool is_double);

// dst[p, j] = src[p·lds + j] (p < k, j < n), zero for n ≤ j < padded_cols(n).
void pack_b(int64_t k, int64_t n, const float* src, int64_t lds, float* dst);
void pack_b(int64_t k, int64_t n, const double* src, int64_t lds, double* dst);

// dst[p, j] = src[j·lds + p]: packs Bᵀ where B = src is [n × k] row-major (Kᵀ, Vᵀ).
void pack_bt(int64_t k, int64_t n, const float* src, int64_t lds, float* dst);
void pack_bt(int64_t k, int64_t n, const double* src, int64_t lds, double* dst);

// C [m × n] from A (m × k through rsa, csa) and B packed by pack_b / pack_bt (k rows).
void band_gemm(Band band, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t rsa, int64_t csa,
               const float* bp, float* c, int64_t ldc);
void band_gemm(Band band, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t rsa, int64_t csa,
               const double* bp, double* c, int64_t ldc);

}  // namespace stx::band
