// stx/kernels/blas.h — the one BLAS of the process, through the Fortran entry points sgemm_ and
// dgemm_ (LP64 integers) that every BLAS exports. With STX_BLAS=openblas (CMake's default when
// Debian's OpenBLAS is there) stx links OpenBLAS ahead of LibTorch, so that its sgemm_ serves both
// stx's fused kernels and LibTorch's own products (libtorch_cpu.so calls sgemm_ through its PLT;
// the first definition in the process wins over the MKL linked inside it). With STX_BLAS=mkl these
// symbols are MKL's, exported by libtorch_cpu.so (it exports no CBLAS). stx --version names the
// one in use (core/runtime.cpp); docs/performance.md has the measurement that chose OpenBLAS.
#pragma once
#include <cstdint>

#ifdef STX_HAVE_BLAS
extern "C" {
void sgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k, const float* alpha,
            const float* a, const int* lda, const float* b, const int* ldb, const float* beta, float* c,
            const int* ldc);
void dgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k, const double* alpha,
            const double* a, const int* lda, const double* b, const int* ldb, const double* beta, double* c,
            const int* ldc);
}

namespace stx::blas {

// Row-major C[m×n] = alpha · op(A) op(B) + beta · C. BLAS is column-major: a row-major matrix is
// its transpose in column-major order, so this computes Cᵀ = op(B)ᵀ op(A)ᵀ with the operands
// swapped and the same transpose flags.
inline void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                 const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  const char tA = ta ? 'T' : 'N', tB = tb ? 'T' : 'N';
  const int M = static_cast<int>(m), N = static_cast<int>(n), K = static_cast<int>(k);
  const int LDA = static_cast<int>(lda), LDB = static_cast<int>(ldb), LDC = static_cast<int>(ldc);
  sgemm_(&tB, &tA, &N, &M, &K, &alpha, b, &LDB, a, &LDA, &beta, c, &LDC);
}
inline void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
                 const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  const char tA = ta ? 'T' : 'N', tB = tb ? 'T' : 'N';
  const int M = static_cast<int>(m), N = static_cast<int>(n), K = static_cast<int>(k);
  const int LDA = static_cast<int>(lda), LDB = static_cast<int>(ldb), LDC = static_cast<int>(ldc);
  dgemm_(&tB, &tA, &N, &M, &K, &alpha, b, &LDB, a, &LDA, &beta, c, &LDC);
}

}  // namespace stx::blas
#endif
