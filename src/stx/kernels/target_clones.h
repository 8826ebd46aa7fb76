// stx/kernels/target_clones.h — STX_CLONES: compile a kernel loop twice, for AVX2 and for
// baseline x86-64, and pick one when the program loads (GCC's target_clones; elsewhere a no-op).
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define STX_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define STX_CLONES
#endif
