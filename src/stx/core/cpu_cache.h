// stx/core/cpu_cache.h — a caching allocator for LibTorch's CPU tensors, as LibTorch's CUDA
// caching allocator is on the GPU: a freed block goes to a free list of its (rounded) size and the
// next allocation of that size takes it back, without malloc. A training step of fixed shape
// allocates the same sizes in the same order every step, so after the first step its
// activations, gradients and workspaces cycle through the lists (glibc's bins — _int_malloc,
// unlink_chunk, malloc_consolidate — were 6 % of a d64 × 1,000-layer step: docs/performance.md,
// "Fused sub-layers, a caching allocator").
// Sizes round up to 64 bytes (to 1/64 of the size above 64 KiB); blocks are 64-byte aligned
// like LibTorch's own. Free blocks are kept up to STX_CPU_CACHE_MB (default 8192) MiB; past it a
// freed block goes back to malloc. Token-budget batches (the trainer's, the atlas's) change shape
// from step to step, and then most sizes do not come back: the lists would hoard memory that
// malloc could reuse (the atlas's 24-layer runs grew to 8 GB where 0.9 GB is live). So every
// training step ends with end_cpu_cache_step(), which returns to malloc the blocks that a whole
// step did not take. The memory a step has used stays with the process, as it already did with
// stx's malloc tunables (runtime.h). STX_CPU_CACHE=0 leaves LibTorch's allocator.
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

// Marks the end of a training step (train/train_step.h calls it as the next step begins): the
// blocks freed before the step that has just ended and not taken during it go back to malloc. A
// step of fixed shape takes back every block the previous one freed, so it loses none.
void end_cpu_cache_step();

struct CpuCacheStats {
  int64_t hits = 0, misses = 0;  // allocations served from a free list / by malloc
  int64_t cached_bytes = 0;      // in the free lists now
  int64_t returned = 0;          // blocks end_cpu_cache_step() gave back to malloc
};
CpuCacheStats cpu_cache_stats();

}  // namespace stx
