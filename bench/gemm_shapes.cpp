// bench/gemm_shapes.cpp — stx's band kernel (src/stx/kernels/band_gemm.h) against the process's
// BLAS (blas::gemm → sgemm_, OpenBLAS by default), one thread, on the products of a training
// step: the d64 layer's projections and FFN (forward x·Wᵀ, weight gradient dyᵀ·x, input gradient
// dy·W), one attention head at 64 tokens and d_head 16 (dense for BLAS, the causal band for
// stx, as the attention core runs them), the tied output projection over 8,000 words and two
// d512 products. The two sides alternate, best of
// --rounds rounds each.
//   build/stx_gemm_bench [--rounds N]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "rounds_arg.h"

#include "stx/bench/sgemm_rate.h"
#include "stx/core/runtime.h"
#include "stx/kernels/band_gemm.h"
#include "stx/kernels/blas.h"

namespace {

struct Shape {
  const char* name;
  bool ta, tb;
  int64_t m, n, k;
  float beta;
  stx::band::Band band;  // what stx computes (BLAS: always the dense product)
  int64_t ld = 0;         // B's and C's row stride as the attention core has them (0: dense, n)
};

// One round of ≥ 20 ms of calls; best ← the fastest seconds per call so far.
void time_round(int round, double& best, const std::function<void()>& call) {
  const double per = stx::bench::seconds_per_call(call, 0.02);
  if (round == 0 || per < best) best = per;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = rounds_from_args(argc, argv, "stx_gemm_bench", 7);
  stx::set_threads(1);
  using stx::band::Band;
  const std::vector<Shape> shapes = {
      {"d64 qkv forward", false, true, 256, 192, 64, 0, Band::kFull},
      {"d64 qkv dW", true, false, 192, 64, 256, 0, Band::kFull},
      {"d64 qkv dx", false, false, 256, 64, 192, 1, Band::kFull},
      {"d64 fc1 forward", false, true, 256, 256, 64, 1, Band::kFull},
      {"d64 fc1 dW", true, false, 256, 64, 256, 0, Band::kFull},
      {"d64 fc2 forward", false, true, 256, 64, 256, 1, Band::kFull},
      {"d64 fc2 dx", false, false, 256, 256, 64, 0, Band::kFull},
      {"head Q.K^T (causal)", false, true, 64, 64, 16, 0, Band::kCausalCols},
      {"head P.V (causal)", false, false, 64, 16, 64, 0, Band::kPUpTo},
      {"head P^T.dO (causal)", true, false, 64, 16, 64, 0, Band::kPFrom},
      // The same head products with B and C where the step has them: a head's 16 columns of the
      // packed [B, T, 3d] q, k, v (and their gradients), rows 768 bytes apart.
      {"head P.V (step)", false, false, 64, 16, 64, 0, Band::kPUpTo, 192},
      {"head P^T.dO (step)", true, false, 64, 16, 64, 0, Band::kPFrom, 192},
      {"vocab logits h.E^T", false, true, 256, 8000, 64, 0, Band::kFull},
      {"vocab dE = dz^T.h", true, false, 8000, 64, 256, 0, Band::kFull},
      {"vocab dh = dz.E", false, false, 256, 64, 8000, 0, Band::kFull},
      {"d512 out-proj forward", false, true, 1024, 512, 512, 1, Band::kFull},
      {"d512 fc1 forward", false, true, 1024, 2048, 512, 1, Band::kFull},
  };
  std::mt19937 gen(1);
  std::normal_distribution<float> normal;
  std::printf("%-22s %-16s %12s %12s %9s\n", "product", "m x n x k", "BLAS us", "stx us", "stx/BLAS");
  for (const auto& s : shapes) {
    const int64_t lda = s.ta ? s.m : s.k, ldb = s.ld ? s.ld : s.tb ? s.k : s.n, ldc = s.ld ? s.ld : s.n;
    std::vector<float> a(s.m * s.k), b((s.tb ? s.n : s.k) * ldb), c(s.m * ldc, 0.f), c2(s.m * ldc, 0.f);
    for (auto& x : a) x = normal(gen);
    for (auto& x : b) x = normal(gen);
    // A causal band's A is zero where the band skips it (as the softmax leaves P).
    if (s.band == Band::kPUpTo || s.band == Band::kPFrom)
      for (int64_t r = 0; r < s.m; ++r)
        for (int64_t p = 0; p < s.k; ++p)
          if (s.band == Band::kPUpTo ? p > r : p < r) (s.ta ? a[p * lda + r] : a[r * lda + p]) = 0;
    std::vector<float> packed(s.k * stx::band::padded_cols(s.n, false));
    auto blas_call = [&] {
      stx::blas::gemm(s.ta, s.tb, s.m, s.n, s.k, 1.f, a.data(), lda, b.data(), ldb, s.beta, c.data(), ldc);
    };
    auto stx_call = [&] {
      if (s.band == Band::kFull) {
        stx::band::gemm(s.ta, s.tb, s.m, s.n, s.k, 1.f, a.data(), lda, b.data(), ldb, s.beta, c2.data(), ldc);
        return;
      }
      const float* bp = b.data();
      int64_t ldp = ldb;
      if (s.tb || stx::band::padded_cols(s.n, false) != s.n) {
        if (s.tb) stx::band::pack_bt(s.k, s.n, b.data(), ldb, packed.data());
        else stx::band::pack_b(s.k, s.n, b.data(), ldb, packed.data());
        bp = packed.data(), ldp = stx::band::padded_cols(s.n, false);
      }
      stx::band::band_gemm(s.band, s.m, s.n, s.k, 1.f, a.data(), s.ta ? 1 : lda, s.ta ? lda : 1, bp, ldp, s.beta,
                           c2.data(), ldc);
    };
    double t_blas = 0, t_stx = 0;
    for (int r = 0; r < rounds; ++r) {
      time_round(r, t_blas, blas_call);
      time_round(r, t_stx, stx_call);
    }
    const std::string dims = std::to_string(s.m) + " x " + std::to_string(s.n) + " x " + std::to_string(s.k);
    std::printf("%-22s %-16s %12.2f %12.2f %9.2f\n", s.name, dims.c_str(), t_blas * 1e6, t_stx * 1e6, t_stx / t_blas);
  }
  return 0;
}
