// stx/core/cpu_cache.h — a caching allocator for LibTorch's CPU tensors, as LibTorch's CUDA
// caching allocator is on the GPU: a freed block goes to a free list of its (rounded) size and the
// next allocation of that size takes it back, without malloc. A training step allocates the
// same sizes in the same order every step, so after the first step its activations, gradients
// and workspaces cycle through the lists (glibc's bins — _int_malloc, unlink_chunk,
// malloc_consolidate — were 6 % of a d64 × 1,000-layer step: docs/performance.md#cpu-cache).
// Sizes round up to 64 bytes (to 1/64 of the size above 64 KiB); blocks are 64-byte aligned
// like LibTorch's own. Free blocks are kept up to STX_CPU_CACHE_MB (default 8192) MiB; past it a
// freed block goes back to malloc. The memory a step has used stays with the process, as it
// already did with stx's malloc tunables (runtime.h). STX_CPU_CACHE=0 leaves LibTorch's allocator.
#pragma once
#include <cstddef>
#include <cstdint>

namespace stx {

// Installs the allocator as LibTorch's CPU allocator (once; unless STX_CPU_CACHE=0).
void install_cpu_cache();
// While disabled, allocations go to LibTorch's default allocator (blocks already handed out
// return to their own allocator either way): `stx bench --allocator` measures the difference.
void set_cpu_cache_enabled(bool on);
bool cpu_cache_enabled();

struct CpuCacheStats {
  int64_t hits = 0, misses = 0;  // allocations served from a free list / by malloc
  int64_t cached_bytes = 0;      // in the free lists now
};
CpuCacheStats cpu_cache_stats();

}  // namespace stx
