// σReparam (Zhai et al. 2023): ‖Ŵ‖₂ = γ, invariance of the output to scaling W, the power
// iteration only in training mode, γ init conventions.
#include <gtest/gtest.h>

#include "stx/model/linear.h"

namespace stx {
namespace {

Linear make(int64_t in, int64_t out, GammaInit g, uint64_t seed) {
  torch::manual_seed(seed);
  Linear l(in, out, LinearOptions{/*bias=*/true, /*sigma_reparam=*/true});
  torch::NoGradGuard ng;
  torch::nn::init::xavier_normal_(l->weight);
  l->bias.normal_();
  l->reset_sigma(g);
  return l;
}

double spectral_norm(const torch::Tensor& w) {
  return at::linalg_svdvals(w.detach(), c10::nullopt).max().item<double>();
}

TEST(SigmaReparam, GammaInitSigmaLeavesWeightUnchanged) {
  auto l = make(24, 16, GammaInit::Sigma, 1);
  EXPECT_NEAR(l->gamma.item<double>(), spectral_norm(l->weight), 1e-5);
  EXPECT_TRUE(torch::allclose(l->effective_weight(), l->weight, 1e-5, 1e-6));
}

TEST(SigmaReparam, EffectiveSpectralNormEqualsGamma) {
  for (auto g : {GammaInit::Sigma, GammaInit::One}) {
    auto l = make(32, 20, g, 2);
    {
      torch::NoGradGuard ng;
      l->gamma.fill_(0.37);
    }
    // With exact u, v (SVD at init) σ = uᵀWv is the top singular value, so ‖γW/σ‖₂ = γ.
    EXPECT_NEAR(spectral_norm(l->effective_weight()), 0.37, 1e-5);
  }
}

TEST(SigmaReparam, OutputInvariantToScalingW) {
  auto l = make(12, 10, GammaInit::One, 3);
  auto x = torch::randn({5, 12});
  l->eval();
  auto y = l->forward(x).detach().clone();
  {
    torch::NoGradGuard ng;
    l->weight.mul_(7.5);  // σ(cW) = c σ(W): Ŵ unchanged
  }
  EXPECT_TRUE(torch::allclose(l->forward(x), y, 1e-5, 1e-6));
  // Also in training mode, after power iterations from the stored vectors.
  l->train();
  EXPECT_TRUE(torch::allclose(l->forward(x), y, 1e-4, 1e-5));
}

TEST(SigmaReparam, PowerIterationOnlyInTraining) {
  auto l = make(16, 16, GammaInit::Sigma, 4);
  {
    torch::NoGradGuard ng;
    l->u.copy_(
        torch::nn::functional::normalize(torch::randn({16}), torch::nn::functional::NormalizeFuncOptions().dim(0)));
  }
  auto u0 = l->u.clone();
  auto x = torch::randn({3, 16});
  l->eval();
  l->forward(x);
  EXPECT_TRUE(torch::equal(l->u, u0)) << "eval mode must not iterate";
  l->train();
  for (int i = 0; i < 200; ++i) l->forward(x);
  EXPECT_FALSE(torch::equal(l->u, u0));
  // After many iterations σ = uᵀWv converges to the top singular value.
  EXPECT_NEAR(l->sigma().item<double>(), spectral_norm(l->weight), 1e-3 * spectral_norm(l->weight));
}

TEST(SigmaReparam, GradientFlowsThroughSigmaNotBuffers) {
  auto l = make(8, 6, GammaInit::Sigma, 5);
  l->train();
  auto y = l->forward(torch::randn({4, 8})).sum();
  y.backward();
  EXPECT_TRUE(l->weight.grad().defined());
  EXPECT_TRUE(l->gamma.grad().defined());
  EXPECT_FALSE(l->u.requires_grad());
  EXPECT_FALSE(l->v.requires_grad());
}

}  // namespace
}  // namespace stx
