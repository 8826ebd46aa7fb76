// stx/kernels/tied_projection.h — the tied output projection z = h Eᵀ (Press & Wolf 2017: the
// softmax weights are the embedding E [V, d]) as one autograd node on stx's band kernel
// (band_gemm.h): dh = dz E and dE = dzᵀ h read dz, E and h where they lie instead of BLAS's packed
// copies (at d64 with 8,000 words: 0.74× and 0.88× OpenBLAS's time, build/stx_gemm_bench); the
// forward z = h Eᵀ packs Eᵀ once per call (pack_bt). The forward on the band kernel made the d64 × 24
// step faster (paired median 1.056) where OpenBLAS ran its AVX2 kernels, and no slower (1.016) at
// OpenBLAS's full AVX-512 rate (docs/performance.md). With it, no product of a one-thread d64 step
// depends on the BLAS's kernel family.
// Equals torch::matmul(h, E.t()) up to rounding (tests/test_kernels.cpp).
// Under a DirectGradsScope (direct_grads.h) dE is added into E.grad() by the product (β = 1).
#pragma once
#include <torch/torch.h>

namespace stx {

// True when the node runs: CPU float32/float64, kernels() == Fused, head_products() == Band and
// one intra-op thread (the band kernel has no threads of its own; on more, BLAS's win).
bool tied_projection_available(const torch::Tensor& h);

// h [..., d], E [V, d] → z [..., V].
torch::Tensor tied_projection(const torch::Tensor& h, const torch::Tensor& E);

}  // namespace stx
