// stx/bench/sgemm_rate.cpp — see sgemm_rate.h.
#include "stx/bench/sgemm_rate.h"

#include <chrono>

#include "stx/core/device.h"

namespace stx::bench {

namespace {

using Clock = std::chrono::steady_clock;

// An operand [rows × cols] (batched when batch > 1), stored transposed when `trans`, so that it
// reaches BLAS as a transposed view as in the model's backward pass.
torch::Tensor operand(int64_t batch, int64_t rows, int64_t cols, bool trans, const torch::TensorOptions& o) {
  auto t = batch > 1 ? torch::randn({batch, trans ? cols : rows, trans ? rows : cols}, o)
                     : torch::randn({trans ? cols : rows, trans ? rows : cols}, o);
  return trans ? t.transpose(-2, -1) : t;
}

double time_one(const Gemm& g, const torch::Device& device, torch::ScalarType dtype, double min_seconds) {
  torch::NoGradGuard no_grad;
  const auto o = torch::TensorOptions().device(device).dtype(dtype);
  auto a = operand(g.batch, g.m, g.k, g.trans_a, o);
  auto b = operand(g.batch, g.k, g.n, g.trans_b, o);
  auto c = g.batch > 1 ? torch::empty({g.batch, g.m, g.n}, o) : torch::empty({g.m, g.n}, o);
  auto call = [&] {
    if (g.batch > 1) torch::bmm_out(c, a, b);
    else torch::mm_out(c, a, b);
  };
  call();  // untimed: first-touch pages, BLAS thread start-up
  synchronize(device);
  // Best of several rounds (each ≥ 2 calls and ≥ min_seconds/5): the rate the machine reaches,
  // not one disturbed by a passing load on a shared machine.
  double best = 0;
  const auto start = Clock::now();
  for (int round = 0; round < 5 || std::chrono::duration<double>(Clock::now() - start).count() < min_seconds; ++round) {
    int64_t calls = 0;
    const auto t0 = Clock::now();
    double elapsed = 0;
    do {
      call();
      ++calls;
      synchronize(device);
      elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    } while (calls < 2 || elapsed < min_seconds / 5);
    const double per_call = elapsed / static_cast<double>(calls);
    if (round == 0 || per_call < best) best = per_call;
    if (round >= 20) break;
  }
  return best;
}

}  // namespace

SgemmRate measure_sgemm_rate(const std::vector<Gemm>& gemms, const torch::Device& device, torch::ScalarType dtype,
                             double min_seconds) {
  SgemmRate r;
  double flops = 0;
  for (const auto& g : gemms) {
    GemmTiming t{g, time_one(g, device, dtype, min_seconds)};
    r.step_seconds += t.seconds * static_cast<double>(g.count);
    flops += g.flops();
    r.shapes.push_back(t);
  }
  r.gflops = r.step_seconds > 0 ? flops / r.step_seconds / 1e9 : 0;
  return r;
}

}  // namespace stx::bench
