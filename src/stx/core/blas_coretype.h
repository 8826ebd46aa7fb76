// stx/core/blas_coretype.h — which OpenBLAS kernel family to force when OpenBLAS's own CPU
// detection fell short of the CPU. A DYNAMIC_ARCH OpenBLAS picks its kernels at load time from
// the CPU's family and model number; a model newer than the library (Debian 12's OpenBLAS 0.3.21
// on an Intel Xeon of model 207, an AVX-512 part) falls back to "Prescott", its SSE3 kernels:
// sgemm at 15.5 instead of 76 GFLOP/s on the d64 × 24 step's shapes, the whole step 3.4× slower
// (docs/performance.md). OPENBLAS_CORETYPE, read at load, overrides the detection.
#pragma once
#include <string>

namespace stx {

struct CpuSimd {
  bool avx512 = false;    // AVX-512 F, CD, BW, DQ and VL: what OpenBLAS's SkylakeX kernels use
  bool avx2_fma = false;  // AVX2 and FMA3: what its Haswell kernels use
};

// The SIMD this CPU and its operating system support (GCC's __builtin_cpu_supports).
CpuSimd cpu_simd();

// The OPENBLAS_CORETYPE to force, or "" to keep OpenBLAS's choice. Only a fallback is corrected:
// when OpenBLAS chose none of its AVX-512 or AVX2 families (SkylakeX, Cooperlake, SapphireRapids;
// Haswell, Zen, Excavator), "SkylakeX" on a CPU with AVX-512, "Haswell" on one with AVX2 + FMA.
// `corename` is openblas_get_corename()'s answer ("" when the BLAS is not OpenBLAS: no change).
std::string openblas_coretype_override(const std::string& corename, CpuSimd cpu);

// The running OpenBLAS's core name (openblas_get_corename), or "" when the process's BLAS is not
// a DYNAMIC_ARCH OpenBLAS.
std::string openblas_corename();

}  // namespace stx
