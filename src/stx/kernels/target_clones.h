// stx/kernels/target_clones.h — STX_CLONES: compile a kernel loop three times, for AVX-512
// (x86-64-v4), AVX2 and baseline x86-64, and pick one when the program loads (GCC's
// target_clones; elsewhere a no-op). The AVX-512 clone: a step 2–7 % faster (medians) on an
// AVX-512 Xeon (docs/performance.md); its row sums use wider vectors, so float32 results move in
// the last bits.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define STX_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define STX_CLONES
#endif
