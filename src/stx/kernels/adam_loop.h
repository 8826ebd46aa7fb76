// stx/kernels/adam_loop.h — the element loop of kernels/adam.h, in a file of its own: it is
// compiled with -fno-math-errno (so that the square root vectorizes) and without LibTorch's
// precompiled header (whose flags must match).
#pragma once
#include <cstdint>

namespace stx {

// Each coefficient is rounded to float once from its double value (as LibTorch's scalar
// arguments are): 1 − β₂ in float arithmetic would be off by 1e-5 relative.
struct AdamCoefficients {
  float beta1, one_minus_beta1, beta2, one_minus_beta2, eps, step_size, bias_correction2_sqrt;
  float l2 = 0;     // Adam's weight decay (added to the gradient)
  float decay = 1;  // AdamW's 1 − lr·λ
};

void adam_range(float* p, const float* g, float* m, float* v, int64_t n, const AdamCoefficients& c);

// True when the square root is torch.sqrt's own (MKL's vmsSqrt, found in the process): then
// adam_range is bit-equal to torch.optim's single-tensor Adam / AdamW; otherwise it may differ
// by an ulp of √v in some elements.
bool adam_sqrt_is_torchs();

}  // namespace stx
