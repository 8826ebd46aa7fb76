// The products stx bench times as its "products alone" bound (bench/sgemm_rate.h): each call must
// compute op(a)·op(b) for every transpose pair, batched or not — else the bound times other work.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "stx/bench/sgemm_rate.h"

namespace stx::bench {

TEST(SgemmRate, CallComputesTheProductOfItsShape) {
  torch::manual_seed(3);
  const auto o = torch::TensorOptions().dtype(torch::kFloat32);
  for (const int64_t batch : {1, 3})
    for (const bool ta : {false, true})
      for (const bool tb : {false, true}) {
        const Gemm g{"test", batch, 5, 7, 11, ta, tb, 1};
        const auto a = gemm_operand(batch, g.m, g.k, ta, o), b = gemm_operand(batch, g.k, g.n, tb, o);
        ASSERT_EQ(a.size(-2), g.m);
        ASSERT_EQ(b.size(-1), g.n);
        const auto want = torch::matmul(a.to(torch::kFloat64), b.to(torch::kFloat64)).to(torch::kFloat32);
        auto c = batch > 1 ? torch::full({batch, g.m, g.n}, 7.0f, o) : torch::full({g.m, g.n}, 7.0f, o);
        gemm_call(g, a, b, c)();
        EXPECT_TRUE(torch::allclose(c, want, 1e-5, 1e-5)) << "batch " << batch << " ta " << ta << " tb " << tb
                                                          << ": max |Δ| " << (c - want).abs().max().item<float>();
        const auto band = band_gemm_call(g, a, b, c);  // the band kernel's bound: the same product
#ifdef STX_HAVE_BLAS
        ASSERT_TRUE(band);
        c.fill_(7.0f);
        band();
        EXPECT_TRUE(torch::allclose(c, want, 1e-5, 1e-5)) << "band kernel, batch " << batch << " ta " << ta << " tb "
                                                          << tb << ": max |Δ| " << (c - want).abs().max().item<float>();
#else
        EXPECT_FALSE(band);
#endif
      }
}

TEST(SgemmRate, MeasuresEveryShapeOnce) {
  const std::vector<Gemm> gemms{{"nn", 1, 32, 16, 8, false, false, 2}, {"batched tn", 4, 8, 8, 16, true, false, 3}};
  const auto r = measure_sgemm_rate(gemms, torch::Device(torch::kCPU), torch::kFloat32, 0.001);
  ASSERT_EQ(r.shapes.size(), 2u);
  for (const auto& t : r.shapes) EXPECT_GT(t.seconds, 0);
  EXPECT_NEAR(r.step_seconds, 2 * r.shapes[0].seconds + 3 * r.shapes[1].seconds, 1e-12);
  EXPECT_GT(r.gflops, 0);
  // The tighter bound: each shape at the faster of the BLAS and the band kernel.
  for (const auto& t : r.shapes)
    EXPECT_EQ(t.best_seconds(), t.band_seconds > 0 ? std::min(t.seconds, t.band_seconds) : t.seconds);
  EXPECT_NEAR(r.best_step_seconds, 2 * r.shapes[0].best_seconds() + 3 * r.shapes[1].best_seconds(), 1e-12);
  EXPECT_LE(r.best_step_seconds, r.step_seconds);
}

}  // namespace stx::bench
