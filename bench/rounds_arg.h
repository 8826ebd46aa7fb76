// bench/rounds_arg.h — the one argument of the kernel benchmarks (stx_gemm_bench,
// stx_rows_bench): --rounds N, N ≥ 1. Anything else: one line on stderr and exit code 2.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstring>

inline int rounds_from_args(int argc, char** argv, const char* program, int rounds) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc && std::atoi(argv[i + 1]) > 0) {
      rounds = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "%s: unknown or bad argument '%s' (allowed: --rounds N, N ≥ 1)\n", program, argv[i]);
      std::exit(2);
    }
  }
  return rounds;
}
