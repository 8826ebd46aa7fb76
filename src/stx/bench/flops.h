// stx/bench/flops.h — the matrix products of one training step (forward, backward) of a
// Transformer for a ModelConfig and a batch of B sequences of T tokens, and their FLOP count.
// The list is the single source of both the step's FLOP count (stx bench's achieved GFLOP/s)
// and the shapes whose sgemm rate is measured (sgemm_rate.h). flops.cpp states the formula.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "stx/config/config.h"

namespace stx::bench {

// batch × (A[m×k] · B[k×n]), `count` times per step. trans_a / trans_b: the operand is a
// transposed view of a contiguous matrix (how the forward and backward pass hand it to BLAS).
struct Gemm {
  std::string what;  // e.g. "linear 64->256 fwd", "attn QK^T fwd"
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int64_t count = 1;
  double flops_once() const { return 2.0 * static_cast<double>(batch) * m * n * k; }
  double flops() const { return flops_once() * static_cast<double>(count); }
};

// The products of one step on B×T tokens (an encoder sees B×T source tokens, a decoder B×T
// target tokens), identical shapes merged (counts added).
std::vector<Gemm> step_gemms(const ModelConfig& cfg, int64_t B, int64_t T);

// Σ flops over the list.
double total_flops(const std::vector<Gemm>& gemms);

// The closed form of flops.cpp for a decoder-only model (a cross-check used in tests/docs):
//   FLOP/step = 3 · [ L · R · (8d² + 4·d·d_ff + 4·T·d) + 2·R·d·V ],  R = B·T.
double decoder_step_flops(const ModelConfig& cfg, int64_t B, int64_t T);

}  // namespace stx::bench
