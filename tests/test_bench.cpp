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
        auto c = batch > 1 ? torch::full({batch, g.m, g.n}, 7.0f, o) : torch::full({g.m, g.n}, 7.0f, o);
        gemm_call(g, a, b, c)();
        const auto want = torch::matmul(a.to(torch::kFloat64), b.to(torch::kFloat64)).to(torch::kFloat32);
        EXPECT_TRUE(torch::allclose(c, want, 1e-5, 1e-5)) << "batch " << batch << " ta " << ta << " tb " << tb
                                                          << ": max |Δ| " << (c - want).abs().max().item<float>();
      }
}

TEST(SgemmRate, MeasuresEveryShapeOnce) {
  const std::vector<Gemm> gemms{{"nn", 1, 32, 16, 8, false, false, 2}, {"batched tn", 4, 8, 8, 16, true, false, 3}};
  const auto r = measure_sgemm_rate(gemms, torch::Device(torch::kCPU), torch::kFloat32, 0.001);
  ASSERT_EQ(r.shapes.size(), 2u);
  for (const auto& t : r.shapes) EXPECT_GT(t.seconds, 0);
  EXPECT_NEAR(r.step_seconds, 2 * r.shapes[0].seconds + 3 * r.shapes[1].seconds, 1e-12);
  EXPECT_GT(r.gflops, 0);
}

}  // namespace stx::bench
