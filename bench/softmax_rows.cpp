// bench/softmax_rows.cpp — the attention core's softmax rows (src/stx/kernels/softmax_rows.h),
// forward and backward, alone: the 384 causal heads of a d64 × 24 step (4 sequences × 4 heads ×
// 24 layers, 64 × 64 scores each), one thread, best of --rounds rounds of ≥ 20 ms.
//   build/stx_softmax_bench [--rounds N]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "rounds_arg.h"

#include "stx/bench/sgemm_rate.h"
#include "stx/core/runtime.h"
#include "stx/kernels/softmax_rows.h"

int main(int argc, char** argv) {
  const int rounds = rounds_from_args(argc, argv, "stx_softmax_bench", 7);
  stx::set_threads(1);
  constexpr int64_t T = 64, H = 4 * 4 * 24;
  std::vector<float> scores(H * T * T), S(H * T * T), dP(H * T * T), G(H * T * T), shifted(T);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  for (auto& x : scores) x = normal(rng);
  for (auto& x : dP) x = normal(rng);
  std::vector<int64_t> blind;
  double forward = 0, backward = 0;
  for (int r = 0; r < rounds; ++r) {
    const double f = stx::bench::seconds_per_call(
        [&] {
          S = scores;  // softmax_head works in place
          for (int64_t h = 0; h < H; ++h)
            stx::softmax_head<float>(S.data() + h * T * T, T, T, true, nullptr, nullptr, shifted.data(), 0, blind);
        },
        0.02);
    const double copy = stx::bench::seconds_per_call([&] { S = scores; }, 0.02);
    const double b = stx::bench::seconds_per_call(
        [&] {
          G = dP;
          for (int64_t h = 0; h < H; ++h)
            stx::softmax_backward_head<float>(G.data() + h * T * T, S.data() + h * T * T, T, T, true, nullptr,
                                              nullptr, 0);
        },
        0.02);
    if (r == 0 || f - copy < forward) forward = f - copy;
    if (r == 0 || b - copy < backward) backward = b - copy;
  }
  std::printf("softmax rows, %lld causal heads of %lld x %lld (a d64 x 24 step), best of %d rounds:\n",
              static_cast<long long>(H), static_cast<long long>(T), static_cast<long long>(T), rounds);
  std::printf("  forward  %8.1f us\n  backward %8.1f us\n", 1e6 * forward, 1e6 * backward);
  return 0;
}
