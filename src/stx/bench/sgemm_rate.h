// stx/bench/sgemm_rate.h — the machine's matrix-product rate on a training step's own shapes:
// times every distinct product of flops.h's list through the BLAS the model's products go
// through — on the CPU stx's blas::gemm (sgemm_), one call per batch entry as the fused kernels
// make them; on CUDA torch::mm / torch::bmm — same layouts (transposed), device and dtype, and reports
// the FLOP-weighted rate Σ flops_i / Σ time_i over the step's products — the rate a step would
// reach if it did nothing but its products back to back, the ceiling stx bench compares to.
// On the CPU in float32 each shape is timed on stx's band kernel too (kernels/band_gemm.h, dense):
// where the BLAS is slower than stx's own kernel on a shape (OpenBLAS pinned to its AVX2 kernels
// on an AVX-512 CPU, say), the BLAS bound flatters the step, and best_step_seconds — each shape at
// the faster of the two — is the tighter ceiling.
#pragma once
#include <torch/torch.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "stx/bench/flops.h"

namespace stx::bench {

struct GemmTiming {
  Gemm gemm;
  double seconds = 0;       // one call through the BLAS
  double band_seconds = 0;  // one call on stx's band kernel (0: not timed — not CPU float32, or no BLAS build)
  double best_seconds() const { return band_seconds > 0 ? std::min(seconds, band_seconds) : seconds; }
  double gflops() const { return gemm.flops_once() / seconds / 1e9; }
};

struct SgemmRate {
  std::vector<GemmTiming> shapes;
  double step_seconds = 0;       // Σ count_i · time_i: the step's products alone, through the BLAS
  double gflops = 0;             // Σ flops_i / step_seconds
  double best_step_seconds = 0;  // Σ count_i · min(BLAS, band kernel): the products at the faster kernel
};

// An operand [rows × cols] of random numbers (batched when batch > 1), stored transposed when
// `trans` (a transposed view, as the model's backward pass hands it to BLAS).
torch::Tensor gemm_operand(int64_t batch, int64_t rows, int64_t cols, bool trans, const torch::TensorOptions& o);

// The call measure_sgemm_rate times: c ← op(a)·op(b) for operands made by gemm_operand (c
// contiguous [batch ×] m × n) — on the CPU in float32 through blas::gemm, else torch::mm / bmm.
std::function<void()> gemm_call(const Gemm& g, const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& c);

// The same product on stx's band kernel (band::gemm, dense), CPU float32 only; an empty function
// elsewhere.
std::function<void()> band_gemm_call(const Gemm& g, const torch::Tensor& a, const torch::Tensor& b,
                                     const torch::Tensor& c);

// Seconds per call of `call` over one round of at least 2 calls and at least `seconds`.
double seconds_per_call(const std::function<void()>& call, double seconds);

// Each shape: one untimed call, then at least 5 rounds of ≥ 2 calls and ≥ min_seconds/5 each
// (more rounds until min_seconds have passed, at most 21); its time is the best round's per-call
// time.
SgemmRate measure_sgemm_rate(const std::vector<Gemm>& gemms, const torch::Device& device, torch::ScalarType dtype,
                             double min_seconds = 0.05);

}  // namespace stx::bench
