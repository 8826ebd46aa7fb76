// stx/core/runtime.h — process-wide numerics and threading set-up, done once at start-up:
// flush denormals (a 24-layer Post-LN model ran 9× faster with it: vanishing gradients produce
// denormals), intra-op threads = physical cores. (The BLAS is chosen at build time: Debian's
// OpenBLAS ahead of the MKL inside the wheel's libtorch_cpu.so by default, kernels/blas.h.)
#pragma once
#include <cstdint>
#include <string>

namespace stx {

struct RuntimeInfo {
  int threads = 1;
};

// Called first in main(): when the environment lacks them, sets OMP_WAIT_POLICY=PASSIVE (idle
// OpenMP workers sleep instead of spinning: a spinning pool starves other threads on few cores) and glibc malloc
// tunables that keep freed memory in the heap (no mmap/munmap page-fault churn per step) and let
// the per-thread cache hold 2,000 freed chunks per small size (not 7), then
// re-executes the program once so they take effect (libgomp and malloc read them at load).
// Measured on a 3-3 d=128 training step: 1,261 → 4,394 tokens/s (docs/performance.md). It also
// sets OPENBLAS_CORETYPE when OpenBLAS fell back to its SSE3 kernels on a newer CPU
// (blas_coretype.h: 3.4× on the d64 × 24 step). STX_NO_REEXEC=1 disables it.
void reexec_with_runtime_env(int argc, char** argv);

// LibTorch's intra-op threads and, when the process's BLAS is OpenBLAS, its thread pool: the
// same number (an OpenBLAS left at its default of all cores spun a second thread beside a
// one-thread step, twice the CPU time for nothing; docs/performance.md).
void set_threads(int n);
// The library whose sgemm_ this process calls (kernels/blas.h), e.g. "OpenBLAS 0.3.21 … (path)".
std::string blas_info();

// Applies the settings. threads ≤ 0: number of physical cores.
RuntimeInfo init_runtime(int threads = 0);
int physical_cores();

// What `stx --version` prints of the engine: LibTorch's version, whether CUDA and NCCL were
// compiled in (the build's, not the machine's), and how many CUDA devices this machine shows.
std::string build_info();

// Intra-op threads for a model's step when the user chose none (no STX_THREADS, no
// OMP_NUM_THREADS): one thread when
// its matrix products are small (tokens per batch × d_model² < 2²⁴), else the physical cores.
// Measured (docs/performance.md): d64 × 256 tokens runs 24 % faster on one thread than on two
// (24 and 1,000 layers); d128 × 3,072 tokens is even; d256 × 4,096 is 10 % faster on two.
int default_threads(int64_t d_model, int64_t tokens);
// Sets the intra-op threads to default_threads(...) unless STX_THREADS or OMP_NUM_THREADS chose them.
void use_default_threads(int64_t d_model, int64_t tokens);

}  // namespace stx
