// stx/kernels/kernels.h — which implementation runs the step's hot spots: stx's own CPU
// kernels (attention_core.h, dropout.h: one autograd node each, products straight to BLAS) or
// the LibTorch reference ops they are tested against. Fused is the default wherever a fused
// kernel exists (CPU, float32/float64, built with BLAS: kernels/blas.h); `stx bench --kernels reference` and
// the tests switch to the reference to measure and check the difference.
#pragma once

namespace stx {

enum class Kernels { Fused, Reference };

void set_kernels(Kernels k);
Kernels kernels();

// Which attention core runs where no tap needs the scores or probabilities and no soft-capping
// is on: Auto = LibTorch's scaled_dot_product_attention (its flash / memory-efficient kernels)
// on CUDA and stx's own core (attention_core.h) on the CPU, where it measured faster
// (docs/performance.md); Sdpa or Stx force one everywhere (`stx bench --attention`, the tests).
enum class AttentionCore { Auto, Sdpa, Stx };

void set_attention_core(AttentionCore a);
AttentionCore attention_core_choice();

// How stx's attention core (attention_core.h) multiplies within a head: Band = stx's own
// product kernel (band_gemm.h), which computes only the causal band; Blas = one dense BLAS call
// per product. Band by default; `stx bench --head-products` and the tests switch.
enum class HeadProducts { Band, Blas };

void set_head_products(HeadProducts h);
HeadProducts head_products();

}  // namespace stx
