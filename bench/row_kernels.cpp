// bench/row_kernels.cpp — stx's latency-bound row kernels alone, forward and backward, on the
// rows of one d64 × 24 step, one thread, best of --rounds rounds of ≥ 20 ms each:
//   the attention core's softmax rows (src/stx/kernels/softmax_rows.h): 384 causal heads
//   (4 sequences × 4 heads × 24 layers), 64 × 64 scores each;
//   the fused sub-layers' LayerNorm rows (src/stx/kernels/norm_rows.h): 48 norms of 256 rows of 64.
//   build/stx_rows_bench [--rounds N]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "rounds_arg.h"

#include "stx/bench/sgemm_rate.h"
#include "stx/core/runtime.h"
#include "stx/kernels/norm_rows.h"
#include "stx/kernels/softmax_rows.h"

int main(int argc, char** argv) {
  const int rounds = rounds_from_args(argc, argv, "stx_rows_bench", 7);
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
  // LayerNorm rows as the Post-LN join runs them: s = x + g, ŝ, r, y = ŝ·w + b; backward ds.
  constexpr int64_t N = 256, d = 64, norms = 48;
  std::vector<float> x(norms * N * d), g(norms * N * d), xhat(norms * N * d), y(norms * N * d), dy(norms * N * d),
      dsv(norms * N * d), rstd(norms * N), w(d, 1.1f), bias(d, 0.1f);
  for (auto& v : x) v = normal(rng);
  for (auto& v : g) v = normal(rng);
  for (auto& v : dy) v = normal(rng);
  double norm_forward = 0, norm_backward = 0;
  for (int r = 0; r < rounds; ++r) {
    const double f = stx::bench::seconds_per_call(
        [&] {
          for (int64_t k = 0; k < norms; ++k)
            stx::forward_rows<float>(x.data() + k * N * d, g.data() + k * N * d, xhat.data() + k * N * d,
                                     rstd.data() + k * N, y.data() + k * N * d, w.data(), bias.data(), d, 0, N, 1.0f,
                                     1e-5f, true);
        },
        0.02);
    const double b = stx::bench::seconds_per_call(
        [&] {
          for (int64_t k = 0; k < norms; ++k)
            stx::backward_rows<float>(dy.data() + k * N * d, xhat.data() + k * N * d, rstd.data() + k * N, w.data(),
                                      dsv.data() + k * N * d, d, 0, N, true);
        },
        0.02);
    if (r == 0 || f < norm_forward) norm_forward = f;
    if (r == 0 || b < norm_backward) norm_backward = b;
  }
  std::printf("one d64 x 24 step's rows, one thread, best of %d rounds (us):\n", rounds);
  std::printf("  softmax, %lld causal heads of %lld x %lld:  forward %8.1f  backward %8.1f\n",
              static_cast<long long>(H), static_cast<long long>(T), static_cast<long long>(T), 1e6 * forward,
              1e6 * backward);
  std::printf("  LayerNorm, %lld norms of %lld rows of %lld:   forward %8.1f  backward %8.1f\n",
              static_cast<long long>(norms), static_cast<long long>(N), static_cast<long long>(d), 1e6 * norm_forward,
              1e6 * norm_backward);
  return 0;
}
