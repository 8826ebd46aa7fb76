// stx/kernels/kernels.h — which implementation runs the step's hot spots: stx's own CPU
// kernels (attention_core.h, dropout.h: one autograd node each, products straight to BLAS) or
// the LibTorch reference ops they are tested against. Fused is the default wherever a fused
// kernel exists (CPU, float32/float64, built with CBLAS); `stx bench --kernels reference` and
// the tests switch to the reference to measure and check the difference.
#pragma once

namespace stx {

enum class Kernels { Fused, Reference };

void set_kernels(Kernels k);
Kernels kernels();

}  // namespace stx
