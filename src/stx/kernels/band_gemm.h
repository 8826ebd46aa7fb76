// stx/kernels/band_gemm.h — stx's own matrix-product kernel for the step's small products. At d64
// a layer's products are 256 × 192 × 64 and a head's 64 × 64 × 16: a BLAS call copies both
// operands into its panel layout (12 % of the d64 × 24 step with OpenBLAS) and zeroes C before
// adding (2 %), and a causal head needs only the lower triangle of its scores and only the
// visible keys of its probabilities, which a dense BLAS call computes anyway. This kernel reads
// A where it lies, B too when its rows are whole vectors, writes C once, and skips what a causal
// band does not need. Used by the attention core (every head), the fused sub-layers (small
// products on one thread) and the tied output projection's backward; docs/performance.md has
// the measurements, build/stx_gemm_bench times it product by product.
//
//   C[r, 0:n) = α · Σ_{p ∈ band(r)} A(r, p) · B[p, 0:n) + β · C[r, 0:n)
//
// A(r, p) = a[r·rsa + p·csa] (any strides: A or Aᵀ of a row-major matrix); B's rows, ldb apart,
// are read as whole vectors, padded_cols(n) elements each: B in place when n is a multiple of the
// vector width, else packed first (pack_b / pack_bt: zero beyond n); C is row-major with unit
// column stride. The band says which terms a row needs (r = row of C, causal: key j visible to
// query i iff j ≤ i):
//   kFull       p ∈ [0, k), every column.
//   kCausalCols p ∈ [0, k), columns j ≤ r only; C[r, j > r] = 0.
//   kCausalScores  as kCausalCols, but C[r, j > r] is left unspecified (the scores Q Kᵀ and
//               dO Vᵀ: the softmax and its backward mask those entries themselves).
//   kPUpTo      p ≤ r (P V, dS K: A is zero above its diagonal).
//   kPFrom      p ≥ r (Pᵀ dO, dSᵀ Q: A is zero below the diagonal of Aᵀ).
// kPUpTo and kPFrom compute a block of rows over the union of its rows' bands, so they need the
// zeros they skip to be exact zeros in A (softmax writes them); a head with a "blind" row (no
// visible key: uniform probabilities over every key) must use kFull.
#pragma once
#include <cstdint>

namespace stx::band {

enum class Band { kFull, kCausalCols, kCausalScores, kPUpTo, kPFrom };

// Elements per packed row of B for n columns: n rounded up to the kernel's vector width.
int64_t padded_cols(int64_t n, bool is_double);

// dst[p, j] = src[p·lds + j] (p < k, j < n), zero for n ≤ j < padded_cols(n).
void pack_b(int64_t k, int64_t n, const float* src, int64_t lds, float* dst);
void pack_b(int64_t k, int64_t n, const double* src, int64_t lds, double* dst);

// dst[p, j] = src[j·lds + p]: packs Bᵀ where B = src is [n × k] row-major (Kᵀ, Vᵀ).
void pack_bt(int64_t k, int64_t n, const float* src, int64_t lds, float* dst);
void pack_bt(int64_t k, int64_t n, const double* src, int64_t lds, double* dst);

// C [m × n] ← α·(the band's product) + β·C, from A (m × k through rsa, csa) and B (k rows, ldb
// apart, each readable to padded_cols(n)); β = 0 does not read C. kCausalCols sets C[r, j > r] = 0
// whatever β. `bias` [n] (null: none) is added to every row: C ← α·AB + 1·biasᵀ + β·C.
void band_gemm(Band band, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t rsa, int64_t csa,
               const float* b, int64_t ldb, float beta, float* c, int64_t ldc, const float* bias = nullptr);
void band_gemm(Band band, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t rsa, int64_t csa,
               const double* b, int64_t ldb, double beta, double* c, int64_t ldc, const double* bias = nullptr);

// Row-major C [m × n] = α op(A) op(B) + β C, the signature of blas::gemm, on the band kernel
// (kFull): A read in place, B too unless transposed or n is no multiple of the vector width
// (then packed into a per-thread buffer); `bias` as band_gemm.
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
          int64_t ldb, float beta, float* c, int64_t ldc, const float* bias = nullptr);
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc, const double* bias = nullptr);

}  // namespace stx::band
