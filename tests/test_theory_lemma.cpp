// tests/test_theory_lemma.cpp — Xiong et al. Lemma 2 and Lemma 3 experiments, and the closed-form
// LayerNorm / RMSNorm Jacobians (stx/theory/jacobian.h) against the explicit autograd Jacobian.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <set>

#include "helpers.h"
#include "stx/theory/experiments.h"
#include "stx/theory/jacobian.h"

using namespace stx;
using namespace stx::theory;

namespace {

torch::Tensor draw(int64_t d, double scale, double mean, uint64_t seed) {
  auto g = at::detail::createCPUGenerator(seed);
  return torch::randn({d}, g, torch::kFloat64) * scale + mean;
}

const Claim* claim(const Result& r, const std::string& id) {
  for (auto& c : r.claims)
    if (c.id == id) return &c;
  return nullptr;
}

int count_prefix(const Result& r, const std::string& prefix, bool theory) {
  int n = 0;
  for (auto& c : r.claims) n += c.id.rfind(prefix, 0) == 0 && c.theory == theory;
  return n;
}

}  // namespace

// The autograd Jacobian is oriented J[i][j] = ∂f_i/∂x_j: check on a non-symmetric linear map.
TEST(Jacobian, AutogradOrientationOnLinearMap) {
  auto A = torch::randn({5, 5}, at::detail::createCPUGenerator(3), torch::kFloat64);
  auto J = autograd_jacobian([&](const torch::Tensor& x) { return A.matmul(x); }, draw(5, 1, 0, 4));
  EXPECT_LT(test::max_abs_diff(J, A), 1e-14);
}

TEST(Jacobian, LayerNormEps0ClosedFormMatchesAutograd) {
  for (double mean : {0.0, 3.0}) {
    auto x = draw(16, 2.0, mean, 5);
    auto J = norm_jacobian_autograd(NormKind::LayerNorm, x, 0.0);
    auto F = layer_norm_jacobian(x, 0.0);
    EXPECT_LT(test::max_abs_diff(J, F), 1e-12);
    const double s = spectral_norm(J);
    const double y = (x - x.mean()).norm().item<double>();
    EXPECT_NEAR(s, std::sqrt(16.0) / y, 1e-12 * s);  // √d/‖x − x̄‖ exactly
    EXPECT_NEAR(layer_norm_jacobian_norm(x, 0.0), s, 1e-12 * s);
    // J annihilates the all-ones direction (shift invariance) and is symmetric.
    EXPECT_LT(J.matmul(torch::ones({16}, torch::kFloat64)).abs().max().item<double>(), 1e-12);
    EXPECT_LT(test::max_abs_diff(J, J.t()), 1e-12);
  }
  // With a mean, the paper's √d/‖x‖ underestimates the norm.
  auto x = draw(16, 1.0, 3.0, 6);
  EXPECT_GT(layer_norm_jacobian_norm(x, 0.0), 2.0 * paper_jacobian_norm(x));
}

TEST(Jacobian, LayerNormWithEpsClosedFormMatchesAutograd) {
  const double eps = 0.1;  // large, so a misplaced ε would show at the 1e-3 level
  auto x = draw(12, 0.5, 1.0, 7);
  auto J = norm_jacobian_autograd(NormKind::LayerNorm, x, eps);
  auto F = layer_norm_jacobian(x, eps);
  EXPECT_LT(test::max_abs_diff(J, F), 1e-12);
  const double s = spectral_norm(J);
  const double y2 = (x - x.mean()).pow(2).sum().item<double>();
  EXPECT_NEAR(s, std::sqrt(12.0 / (y2 + 12 * eps)), 1e-12 * s);
  EXPECT_NEAR(spectral_norm(F), s, 1e-12 * s);
  EXPECT_NEAR(layer_norm_jacobian_norm(x, eps), s, 1e-12 * s);
  // The ε = 0 formula is measurably wrong here.
  EXPECT_GT(std::abs(layer_norm_jacobian_norm(x, 0.0) - s) / s, 1e-3);
}

TEST(Jacobian, RMSNormClosedFormMatchesAutograd) {
  for (double eps : {0.0, 0.1}) {
    auto x = draw(10, 1.5, 2.0, 8);
    auto J = norm_jacobian_autograd(NormKind::RMSNorm, x, eps);
    EXPECT_LT(test::max_abs_diff(J, rms_norm_jacobian(x, eps)), 1e-12);
    const double s = spectral_norm(J);
    const double x2 = x.pow(2).sum().item<double>();
    EXPECT_NEAR(s, std::sqrt(10.0 / (x2 + 10 * eps)), 1e-12 * s);
    EXPECT_NEAR(rms_norm_jacobian_norm(x, eps), s, 1e-12 * s);
    if (eps == 0) {
      EXPECT_NEAR(paper_jacobian_norm(x), s, 1e-12 * s);  // exact for RMSNorm
    }
  }
}

TEST(Lemma2, QuickRunAllTheoryClaimsHold) {
  Options o;  // quick defaults: d=128, 6 layers, 32 seeds, 32 tokens, d_F = d
  auto r = run_lemma2(o);
  for (auto& c : r.claims)
    if (c.theory) {
      EXPECT_TRUE(c.holds) << c.id << ": " << c.statement << " measured " << c.measured;
    }
  EXPECT_TRUE(r.all_theory_claims_hold());
  const int L = r.config["layers"].get<int>();
  EXPECT_EQ(L, 6);
  EXPECT_EQ(r.config["seeds"].get<int>(), 32);
  EXPECT_EQ(count_prefix(r, "post_ratio_l", true), L);
  EXPECT_EQ(count_prefix(r, "pre_ratio_l", true), L);
  EXPECT_EQ(count_prefix(r, "pre_step_l", true), L);
  EXPECT_EQ(count_prefix(r, "post_exact_l", true), 0);  // only when d_F ≠ d
  int theory = 0;
  for (auto& c : r.claims) theory += c.theory;
  EXPECT_EQ(theory, 3 * L + 1);
  EXPECT_EQ(r.config["theory_claims_K"].get<int>(), theory);  // the Bonferroni K is the real count
  ASSERT_NE(claim(r, "post_ratio_pooled"), nullptr);
  EXPECT_TRUE(claim(r, "post_ratio_pooled")->theory);
  // The tolerance has power: the pooled Post-LN value and layer 1 exclude the d_F = 2d constant 1 + 4/9.
  for (std::string id : {"post_ratio_pooled", "post_ratio_l1"}) {
    auto* c = claim(r, id);
    ASSERT_NE(c, nullptr);
    EXPECT_GT(std::abs(c->measured - (1 + 4.0 / 9)), c->tolerance.get<double>()) << id;
  }
  // The literal indexing (x_l = input of layer l) fails at l = 1: E‖x_1‖²/d = 1 < 1.5.
  auto* lit = claim(r, "pre_literal_l1");
  ASSERT_NE(lit, nullptr);
  EXPECT_FALSE(lit->theory);
  EXPECT_FALSE(lit->holds);
  EXPECT_NEAR(lit->measured, 1.0, 0.1);
  // Pre-LN at l = 1 is 1 + 1/n + 1/2 in expectation (n = 32 tokens): near the lower bound 1.5.
  EXPECT_NEAR(claim(r, "pre_ratio_l1")->measured, 1.53, 0.05);
  EXPECT_TRUE(static_cast<bool>(r.plot));
  EXPECT_EQ(r.data_files.size(), 1u);
}

TEST(Lemma2, ToleranceIsTheStudentTQuantile) {
  Options o;  // 3 layers → K = 10 theory claims → α = 1e-3 per claim; 16 seeds → 15 dof
  o.d = 16, o.layers = 3, o.seeds = 16, o.tokens = 4;
  auto r = run_lemma2(o);
  EXPECT_EQ(r.config["theory_claims_K"].get<int>(), 10);
  EXPECT_NEAR(r.config["z"].get<double>(), 4.073, 1e-3);  // t_{15}, two-sided 1e-3 (tables: 4.0728)
  auto* c = claim(r, "post_ratio_l2");
  ASSERT_NE(c, nullptr);
  EXPECT_NEAR(c->tolerance.get<double>(), 4.0728 * r.series["per_layer"][1]["post_se"].get<double>(),
              1e-3 * c->tolerance.get<double>());
}

TEST(Lemma2, WiderFFNIsAnObservationAndTheDerivedConstantHolds) {
  Options o;
  o.d = 64, o.layers = 2, o.d_ff = 128, o.seeds = 64, o.tokens = 128;
  auto r = run_lemma2(o);
  EXPECT_TRUE(r.all_theory_claims_hold());
  EXPECT_EQ(count_prefix(r, "post_ratio_l", false), 2);  // 3/2 demoted to an observation
  EXPECT_EQ(count_prefix(r, "pre_ratio_l", false), 2);
  EXPECT_EQ(count_prefix(r, "post_exact_l", true), 2);
  EXPECT_NEAR(claim(r, "post_exact_l1")->predicted.get<double>(), 1 + 4.0 / 9, 1e-12);
  EXPECT_FALSE(claim(r, "post_ratio_pooled")->holds);  // 1.444 is not 3/2
  // Pre-LN lower bound at l = 1: 1 + 1/n + 4/9 ≈ 1.452 < 1.5.
  EXPECT_LT(claim(r, "pre_ratio_l1")->measured, 1.5);
  EXPECT_FALSE(claim(r, "pre_ratio_l1")->holds);
}

TEST(Lemma3, QuickRunAllTheoryClaimsHold) {
  Options o;  // quick defaults: d = 64, 3 draws per setting
  auto r = run_lemma3(o);
  for (auto& c : r.claims)
    if (c.theory) {
      EXPECT_TRUE(c.holds) << c.id << ": " << c.statement << " measured " << c.measured;
    }
  EXPECT_TRUE(r.all_theory_claims_hold());
  // 4 norms × 2 input families × (norm, matrix) + LayerNorm's formula-norm (2 ε × 2 families).
  int theory = 0;
  for (auto& c : r.claims) theory += c.theory;
  EXPECT_EQ(theory, 20);
  for (std::string id : {"ln0_norm_zero", "ln0_norm_shift", "lneps_matrix_zero", "lneps_formula_norm_shift",
                         "rms0_norm_shift", "rmseps_matrix_zero"}) {
    auto* c = claim(r, id);
    ASSERT_NE(c, nullptr) << id;
    EXPECT_LT(c->measured, 1e-12) << id;  // float64 rounding, far inside the 1e-9 tolerance
  }
  // The paper's √d/‖x‖ at d = 64 with mean 3: true ≈ 1.06, paper ≈ 0.32 (one earlier draw: 1.057 vs 0.317).
  auto* m3 = claim(r, "paper_mean3");
  ASSERT_NE(m3, nullptr);
  EXPECT_FALSE(m3->theory);
  EXPECT_FALSE(m3->holds);
  EXPECT_NEAR(m3->measured, 1.0, 0.15);
  EXPECT_NEAR(m3->predicted.get<double>(), 1 / std::sqrt(10.0), 0.05);
  EXPECT_TRUE(claim(r, "paper_zero_mean")->holds);
  EXPECT_EQ(r.data_files.size(), 4u);
}
