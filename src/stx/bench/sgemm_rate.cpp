// stx/bench/sgemm_rate.cpp — see sgemm_rate.h.
#include "stx/bench/sgemm_rate.h"

#include <chrono>
#include <functional>

#include "stx/core/device.h"
#include "stx/kernels/band_gemm.h"
#include "stx/kernels/blas.h"

namespace stx::bench {

torch::Tensor gemm_operand(int64_t batch, int64_t rows, int64_t cols, bool trans, const torch::TensorOptions& o) {
  auto t = batch > 1 ? torch::randn({batch, trans ? cols : rows, trans ? rows : cols}, o)
                     : torch::randn({trans ? cols : rows, trans ? rows : cols}, o);
  return trans ? t.transpose(-2, -1) : t;
}

namespace {

#ifdef STX_HAVE_BLAS
// c ← op(a)·op(b) in float32, one call of `gemm` (blas::gemm's signature) per batch entry. Each
// operand's storage is row-major [rows × cols], or [cols × rows] when transposed (gemm_operand).
template <class Gemm_>
std::function<void()> per_entry(const Gemm& g, const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& c,
                                Gemm_ gemm) {
  const int64_t lda = g.trans_a ? g.m : g.k, ldb = g.trans_b ? g.k : g.n;
  return [g, lda, ldb, a = a, b = b, c = c, gemm] {  // copies: the handles, not the data
    const float *ap = a.data_ptr<float>(), *bp = b.data_ptr<float>();
    float* cp = c.data_ptr<float>();
    for (int64_t i = 0; i < g.batch; ++i)
      gemm(g.trans_a, g.trans_b, g.m, g.n, g.k, 1.0f, ap + i * g.m * g.k, lda, bp + i * g.k * g.n, ldb, 0.0f,
           cp + i * g.m * g.n, g.n);
  };
}

bool cpu_float(const torch::Tensor& c) { return c.device().is_cpu() && c.scalar_type() == torch::kFloat32; }
#endif

}  // namespace

std::function<void()> gemm_call(const Gemm& g, const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& c) {
#ifdef STX_HAVE_BLAS
  // On the CPU, the fused kernels' own entry point (blas::gemm → sgemm_, one call per batch
  // entry, as kernels/attention_core.cpp makes them): LibTorch's bmm goes to the MKL inside
  // libtorch_cpu.so, whose batched path does not pass through sgemm_ — another BLAS than the step's.
  if (cpu_float(c)) return per_entry(g, a, b, c, [](auto... x) { blas::gemm(x...); });
#endif
  return [g, a = a, b = b, c = c]() mutable {  // copies: the handles, not the data
    if (g.batch > 1) torch::bmm_out(c, a, b);
    else torch::mm_out(c, a, b);
  };
}

std::function<void()> band_gemm_call(const Gemm& g, const torch::Tensor& a, const torch::Tensor& b,
                                     const torch::Tensor& c) {
#ifdef STX_HAVE_BLAS
  if (cpu_float(c)) return per_entry(g, a, b, c, [](auto... x) { band::gemm(x...); });
#endif
  (void)g, (void)a, (void)b, (void)c;
  return {};
}

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

double seconds_per_call(const std::function<void()>& call, double seconds) {
  int64_t calls = 0;
  const auto t0 = Clock::now();
  double elapsed = 0;
  do {
    call();
    ++calls;
    elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  } while (calls < 2 || elapsed < seconds);
  return elapsed / static_cast<double>(calls);
}

namespace {

// Best of several rounds (each ≥ 2 calls and ≥ min_seconds/5) of `call`: the rate the machine
// reaches, not one disturbed by a passing load on a shared machine.
double best_seconds_per_call(const std::function<void()>& call, const torch::Device& device, double min_seconds) {
  call();  // untimed: first-touch pages, BLAS thread start-up, the kernel's pack buffer
  synchronize(device);
  double best = 0;
  const auto start = Clock::now();
  const auto timed = [&] {
    call();
    synchronize(device);
  };
  for (int round = 0; round < 5 || std::chrono::duration<double>(Clock::now() - start).count() < min_seconds; ++round) {
    const double per_call = seconds_per_call(timed, min_seconds / 5);
    if (round == 0 || per_call < best) best = per_call;
    if (round >= 20) break;
  }
  return best;
}

// One product's time through the BLAS and, where it runs, on the band kernel.
GemmTiming time_one(const Gemm& g, const torch::Device& device, torch::ScalarType dtype, double min_seconds) {
  torch::NoGradGuard no_grad;
  const auto o = torch::TensorOptions().device(device).dtype(dtype);
  auto a = gemm_operand(g.batch, g.m, g.k, g.trans_a, o);
  auto b = gemm_operand(g.batch, g.k, g.n, g.trans_b, o);
  auto c = g.batch > 1 ? torch::empty({g.batch, g.m, g.n}, o) : torch::empty({g.m, g.n}, o);
  GemmTiming t{g, best_seconds_per_call(gemm_call(g, a, b, c), device, min_seconds)};
  if (const auto band = band_gemm_call(g, a, b, c)) t.band_seconds = best_seconds_per_call(band, device, min_seconds);
  return t;
}

}  // namespace

SgemmRate measure_sgemm_rate(const std::vector<Gemm>& gemms, const torch::Device& device, torch::ScalarType dtype,
                             double min_seconds) {
  SgemmRate r;
  double flops = 0;
  for (const auto& g : gemms) {
    const GemmTiming t = time_one(g, device, dtype, min_seconds);
    r.step_seconds += t.seconds * static_cast<double>(g.count);
    r.best_step_seconds += t.best_seconds() * static_cast<double>(g.count);
    flops += g.flops();
    r.shapes.push_back(t);
  }
  r.gflops = r.step_seconds > 0 ? flops / r.step_seconds / 1e9 : 0;
  return r;
}

}  // namespace stx::bench
