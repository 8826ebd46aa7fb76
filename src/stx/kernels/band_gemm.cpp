#include "stx/kernels/band_gemm.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "stx/kernels/target_clones.h"
#include "stx/kernels/vec_math.h"  // STX_VEC_INLINE

// Every function that passes a 64-byte vector by value is forced inline into a target_clones
// body, so the baseline ABI note GCC gives for them does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace stx::band {
namespace {

// 64-byte vectors in GCC's vector extension: one zmm register in the AVX-512 clone, two ymm in
// the AVX2 clone, four xmm in the baseline one; `s * v` broadcasts the scalar s.
typedef float VF __attribute__((vector_size(64)));
typedef double VD __attribute__((vector_size(64)));
template <typename T>
struct VecOf;
template <>
struct VecOf<float> {
  using type = VF;
};
template <>
struct VecOf<double> {
  using type = VD;
};
template <typename T>
using V = typename VecOf<T>::type;
template <typename T>
constexpr int64_t kW = 64 / sizeof(T);  // lanes per vector

template <typename T>
STX_VEC_INLINE V<T> load(const T* p) {
  V<T> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Columns [0, cols) of p (cols may exceed the vector: all of it), zero beyond.
template <typename T>
STX_VEC_INLINE V<T> load_part(const T* p, int64_t cols) {
  if (cols >= kW<T>) return load(p);
  V<T> v = {};
  for (int64_t j = 0; j < cols; ++j) v[j] = p[j];
  return v;
}

// Columns [0, cols) of v to p (cols may exceed the vector: all of it).
template <typename T>
STX_VEC_INLINE void store(T* p, const V<T>& v, int64_t cols) {
  if (cols >= kW<T>) std::memcpy(p, &v, sizeof v);
  else
    for (int64_t j = 0; j < cols; ++j) p[j] = v[j];
}

constexpr int64_t kRows = 8;  // rows per block: 8 × 2 or 4 × 4 vectors of accumulators

// How a tile reads A(r, p): kByRow = one pointer per row, a[r·lda + p] (A row-major: P V, dS K,
// Q Kᵀ); kByCol = one pointer, a[p·lda + r] (A stored transposed: Pᵀ dO, dSᵀ Q; and A packed).
enum class Read { kByRow, kByCol };

// Rows [0, rows) (rows ≤ R) and the NV column vectors at b: C = α Σ_{p ∈ [p0, p1)} A(r, p) B[p, :],
// the R × NV accumulators in registers. kByRow repeats the last row past `rows` (read, not
// stored); kByCol needs R readable rows. `cols` bounds what is stored; `bias` (null: none) is added after α. Its own
// function, compiled for each ISA: inlined into band_gemm_impl, GCC 12 gave the loop 8 vector registers and kept three
// of the 8 × 1 tile's accumulators on the stack — the head's P·V twice as slow.
template <typename T, int R, int NV, Read How, bool kBias>
STX_CLONES [[gnu::noinline]] void tile(int64_t rows, int64_t cols, const T* a, int64_t lda, int64_t p0, int64_t p1,
                                       const T* b, int64_t ldb, T alpha, T beta, T* c, int64_t ldc, const T* bias) {
  V<T> acc[R][NV] = {};
  const T* ar[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) ar[r] = a + std::min<int64_t>(r, rows - 1) * lda;
  for (int64_t p = p0; p < p1; ++p) {
    V<T> bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = load(b + p * ldb + v * kW<T>);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const T s = How == Read::kByRow ? ar[r][p] : a[p * lda + r];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] += s * bv[v];
    }
  }
  // Compile-time indices only: a runtime index into acc would keep it in memory.
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      if (r < rows && cols > v * kW<T>) {
        T* cp = c + r * ldc + v * kW<T>;
        V<T> out = alpha * acc[r][v];
        if constexpr (kBias) out += load_part(bias + v * kW<T>, cols - v * kW<T>);  // y = x·Wᵀ + b
        if (beta != T(0)) out += beta * load_part(cp, cols - v * kW<T>);            // β = 0: C is not read
        store(cp, out, cols - v * kW<T>);
      }
}

// The terms row block [r0, r0 + rows) needs: p ∈ [p0, p1).
struct Span {
  int64_t p0, p1;
};
Span span(Band band, int64_t r0, int64_t rows, int64_t k) {
  switch (band) {
    case Band::kPUpTo: return {0, std::min(r0 + rows, k)};
    case Band::kPFrom: return {std::min(r0, k), k};
    default: return {0, k};
  }
}

// One column tile of a row block: 8 rows × 1–2 vectors, or two 4-row halves (each over its own
// span) × 3–4 vectors.
template <typename T, Read How, bool kBias>
STX_VEC_INLINE void block(Band band, int64_t r0, int64_t rows, int64_t nv, int64_t cols, int64_t k, const T* a,
                          int64_t lda, const T* b, int64_t ldb, T alpha, T beta, T* c, int64_t ldc, const T* bias) {
  if (nv <= 2) {
    const Span s = span(band, r0, rows, k);
    if (nv == 1) tile<T, 8, 1, How, kBias>(rows, cols, a, lda, s.p0, s.p1, b, ldb, alpha, beta, c, ldc, bias);
    else tile<T, 8, 2, How, kBias>(rows, cols, a, lda, s.p0, s.p1, b, ldb, alpha, beta, c, ldc, bias);
    return;
  }
  for (int64_t h = 0; h < rows; h += 4) {
    const int64_t sub = std::min<int64_t>(4, rows - h);
    const Span s = span(band, r0 + h, sub, k);
    const T* ah = How == Read::kByRow ? a + h * lda : a + h;
    if (nv == 3) tile<T, 4, 3, How, kBias>(sub, cols, ah, lda, s.p0, s.p1, b, ldb, alpha, beta, c + h * ldc, ldc, bias);
    else tile<T, 4, 4, How, kBias>(sub, cols, ah, lda, s.p0, s.p1, b, ldb, alpha, beta, c + h * ldc, ldc, bias);
  }
}

template <typename T>
STX_CLONES void band_gemm_impl(Band band, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t rsa,
                               int64_t csa, const T* b, int64_t ldb, T beta, T* c, int64_t ldc, const T* bias) {
  constexpr int64_t W = kW<T>, kPanel = 256;
  thread_local std::vector<T> packed;  // A(r, p) at [p·kRows + r], rows past the block's zero
  // Panels of kPanel columns: one panel of B (k × kPanel) stays in L2 while every row block
  // passes over it (a single panel at the step's layer and head widths).
  for (int64_t n0 = 0; n0 < n; n0 += kPanel) {
    for (int64_t r0 = 0; r0 < m; r0 += kRows) {
      const int64_t rows = std::min(kRows, m - r0);
      const T* ab = a + r0 * rsa;
      // A read in place (row pointers, or one pointer when stored transposed), except a partial
      // block of a transposed A (kByCol reads all 8 rows) and strides that are neither: packed.
      const bool by_row = csa == 1 && rsa != 1, by_col = rsa == 1 && rows == kRows;
      int64_t lda = by_row ? rsa : csa;
      if (!by_row && !by_col) {
        if (packed.size() < static_cast<size_t>(k * kRows)) packed.resize(static_cast<size_t>(k * kRows));
        for (int64_t p = 0; p < k; ++p)
          for (int64_t r = 0; r < kRows; ++r) packed[p * kRows + r] = r < rows ? ab[r * rsa + p * csa] : T(0);
        ab = packed.data(), lda = kRows;
      }
      // Causal scores: no row of the block sees a key past its last row.
      const bool causal = band == Band::kCausalCols || band == Band::kCausalScores;
      const int64_t end = std::min(n0 + kPanel, causal ? std::min(r0 + rows, n) : n);
      for (int64_t c0 = n0; c0 < end; c0 += 4 * W) {
        const int64_t nv = std::min<int64_t>(4, (end - c0 + W - 1) / W);
        T* cb = c + r0 * ldc + c0;
        if (bias && by_row)
          block<T, Read::kByRow, true>(band, r0, rows, nv, n - c0, k, ab, lda, b + c0, ldb, alpha, beta, cb, ldc,
                                       bias + c0);
        else if (bias)
          block<T, Read::kByCol, true>(band, r0, rows, nv, n - c0, k, ab, lda, b + c0, ldb, alpha, beta, cb, ldc,
                                       bias + c0);
        else if (by_row)
          block<T, Read::kByRow, false>(band, r0, rows, nv, n - c0, k, ab, lda, b + c0, ldb, alpha, beta, cb, ldc,
                                        nullptr);
        else
          block<T, Read::kByCol, false>(band, r0, rows, nv, n - c0, k, ab, lda, b + c0, ldb, alpha, beta, cb, ldc,
                                        nullptr);
      }
    }
  }
  if (band == Band::kCausalCols)
    for (int64_t r = 0; r < m; ++r) std::fill(c + r * ldc + std::min(r + 1, n), c + r * ldc + n, T(0));
}

template <typename T>
STX_CLONES void pack_b_impl(int64_t k, int64_t n, const T* src, int64_t lds, T* dst) {
  const int64_t ldb = (n + kW<T> - 1) / kW<T> * kW<T>;
  for (int64_t p = 0; p < k; ++p) {
    std::copy(src + p * lds, src + p * lds + n, dst + p * ldb);
    std::fill(dst + p * ldb + n, dst + (p + 1) * ldb, T(0));
  }
}

// Lane indices for __builtin_shuffle: integers of the element's width, as many as the lanes.
typedef int32_t VI32 __attribute__((vector_size(64)));
typedef int64_t VI64 __attribute__((vector_size(64)));
template <typename T>
using VI = std::conditional_t<sizeof(T) == 4, VI32, VI64>;

// The L × L block at src (rows lds apart) transposed to dst (rows ldd apart), L = the lanes:
// log2 L rounds of a perfect shuffle, row i of a round taking lanes from rows i and i + L/2 — one
// two-source permute per row and round (vpermt2ps with AVX-512) instead of L² scalar moves.
template <typename T>
STX_VEC_INLINE void transpose_block(const T* src, int64_t lds, T* dst, int64_t ldd) {
  constexpr int L = static_cast<int>(kW<T>);
#if defined(__clang__)  // __builtin_shuffle is GCC's: element by element
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < L; ++j) dst[i * ldd + j] = src[j * lds + i];
#else
  VI<T> lo, hi;  // interleave the first halves of two rows, or the second halves
  for (int t = 0; t < L / 2; ++t)
    lo[2 * t] = t, lo[2 * t + 1] = L + t, hi[2 * t] = t + L / 2, hi[2 * t + 1] = L + t + L / 2;
  V<T> r[L], x[L];
#pragma GCC unroll 16
  for (int i = 0; i < L; ++i) r[i] = load(src + i * lds);
  for (int round = 1; round < L; round *= 2) {
#pragma GCC unroll 8
    for (int i = 0; i < L / 2; ++i) {
      x[2 * i] = __builtin_shuffle(r[i], r[i + L / 2], lo);
      x[2 * i + 1] = __builtin_shuffle(r[i], r[i + L / 2], hi);
    }
#pragma GCC unroll 16
    for (int i = 0; i < L; ++i) r[i] = x[i];
  }
#pragma GCC unroll 16
  for (int i = 0; i < L; ++i) std::memcpy(dst + i * ldd, &r[i], sizeof r[i]);
#endif
}

template <typename T>
STX_CLONES void pack_bt_impl(int64_t k, int64_t n, const T* src, int64_t lds, T* dst) {
  constexpr int64_t L = kW<T>;
  const int64_t ldb = (n + L - 1) / L * L, k_full = k / L * L, n_full = n / L * L;
  for (int64_t p = 0; p < k_full; p += L)  // whole blocks
    for (int64_t j = 0; j < n_full; j += L) transpose_block(src + j * lds + p, lds, dst + p * ldb + j, ldb);
  for (int64_t p = 0; p < k; ++p) {  // the rest: the last rows and columns, and the zero padding
    for (int64_t j = p < k_full ? n_full : 0; j < n; ++j) dst[p * ldb + j] = src[j * lds + p];
    std::fill(dst + p * ldb + n, dst + (p + 1) * ldb, T(0));
  }
}

}  // namespace

int64_t padded_cols(int64_t n, bool is_double) {
  const int64_t w = is_double ? kW<double> : kW<float>;
  return (n + w - 1) / w * w;
}

void pack_b(int64_t k, int64_t n, const float* src, int64_t lds, float* dst) { pack_b_impl(k, n, src, lds, dst); }
void pack_b(int64_t k, int64_t n, const double* src, int64_t lds, double* dst) { pack_b_impl(k, n, src, lds, dst); }
void pack_bt(int64_t k, int64_t n, const float* src, int64_t lds, float* dst) { pack_bt_impl(k, n, src, lds, dst); }
void pack_bt(int64_t k, int64_t n, const double* src, int64_t lds, double* dst) { pack_bt_impl(k, n, src, lds, dst); }

void band_gemm(Band band, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t rsa, int64_t csa,
               const float* bp, int64_t ldb, float beta, float* c, int64_t ldc, const float* bias) {
  band_gemm_impl(band, m, n, k, alpha, a, rsa, csa, bp, ldb, beta, c, ldc, bias);
}
void band_gemm(Band band, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t rsa, int64_t csa,
               const double* bp, int64_t ldb, double beta, double* c, int64_t ldc, const double* bias) {
  band_gemm_impl(band, m, n, k, alpha, a, rsa, csa, bp, ldb, beta, c, ldc, bias);
}

namespace {
constexpr int64_t kDepth = 1024;  // terms of the sum per pass of band::gemm

template <typename T>
void gemm_impl(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
               int64_t ldb, T beta, T* c, int64_t ldc, const T* bias) {
  const int64_t rsa = ta ? 1 : lda, csa = ta ? lda : 1;
  if (k > kDepth) {  // chunks of the sum, each adding to C: one chunk of B stays in L2
    for (int64_t p0 = 0; p0 < k; p0 += kDepth)
      gemm_impl(ta, tb, m, n, std::min(kDepth, k - p0), alpha, a + p0 * csa, lda, b + (tb ? p0 : p0 * ldb), ldb,
                p0 == 0 ? beta : T(1), c, ldc, p0 == 0 ? bias : nullptr);
    return;
  }
  if (!tb && n % kW<T> == 0)  // B's rows are whole vectors already: read in place
    return band_gemm(Band::kFull, m, n, k, alpha, a, rsa, csa, b, ldb, beta, c, ldc, bias);
  thread_local std::vector<T> packed;
  const int64_t ldp = padded_cols(n, sizeof(T) == 8);
  if (packed.size() < static_cast<size_t>(k * ldp)) packed.resize(static_cast<size_t>(k * ldp));
  if (tb) pack_bt(k, n, b, ldb, packed.data());
  else pack_b(k, n, b, ldb, packed.data());
  band_gemm(Band::kFull, m, n, k, alpha, a, rsa, csa, packed.data(), ldp, beta, c, ldc, bias);
}
}  // namespace

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
          int64_t ldb, float beta, float* c, int64_t ldc, const float* bias) {
  gemm_impl(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bias);
}
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc, const double* bias) {
  gemm_impl(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bias);
}

}  // namespace stx::band
