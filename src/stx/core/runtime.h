// stx/core/runtime.h — process-wide numerics and threading set-up, done once at start-up:
// flush denormals (a 24-layer Post-LN model ran 9× faster with it: vanishing gradients produce
// denormals), intra-op threads = physical cores, and a check that BLAS is OpenBLAS.
#pragma once
#include <string>

namespace stx {

struct RuntimeInfo {
  int threads = 1;
  std::string blas;  // the BLAS library mapped into the process
  bool reference_blas = false;
};

// Applies the settings. threads ≤ 0: number of physical cores.
RuntimeInfo init_runtime(int threads = 0);
int physical_cores();

}  // namespace stx
