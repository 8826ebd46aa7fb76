// tests/test_theory_gradient.cpp — Xiong et al. Theorem 1 and Figure 3 experiments: the
// W^{2,l} gradient measure itself (against autograd and central finite differences in float64),
// and the quick runs of `stx theory theorem1` / `grad-profile` (every theory claim must hold;
// the result has the expected series shapes).
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>

#include "stx/theory/claims_table.h"
#include "stx/theory/experiments.h"
#include "stx/theory/theory_setting.h"

namespace stx::theory {
namespace {

TheorySpec tiny_spec(Scheme scheme, bool sigma) {
  TheorySpec s;
  s.d = 6;
  s.d_ff = 9;
  s.layers = 3;
  s.scheme = scheme;
  s.sigma_reparam = sigma;
  s.vocab = 7;
  s.heads = 2;
  return s;
}

// The helper's per-sequence ∂L̃_b/∂W^{2,l} equals (1) autograd's parameter gradient of L̃_b and
// (2) central finite differences of L̃_b in every entry of W^{2,l}, in float64.
void check_w2_gradient(Scheme scheme, bool sigma, int64_t layer) {
  SCOPED_TRACE(to_string(scheme) + (sigma ? "+sigma" : "") + " layer " + std::to_string(layer));
  const auto spec = tiny_spec(scheme, sigma);
  auto model = make_theory_model(spec, 11, torch::kFloat64);
  auto batch = gaussian_batch(3, 5, spec.d, spec.vocab, 12, torch::kFloat64);
  auto w = w2_grads_per_sequence(model, batch, layer);
  ASSERT_EQ(w.grad.sizes(), (std::vector<int64_t>{3, spec.d, spec.d_ff}));
  const int64_t li = layer < 0 ? layer + spec.layers : layer;
  auto& W = model->encoder->layers[li]->ffn->fc2->weight;
  for (int64_t b = 0; b < 3; ++b) {
    TheoryBatch one{batch.x.slice(0, b, b + 1), batch.y.slice(0, b, b + 1)};
    // (1) autograd on the parameter
    model->zero_grad();
    sequence_losses(model, one).sum().backward();
    EXPECT_TRUE(torch::allclose(w.grad[b], W.grad(), 1e-9, 1e-11)) << (w.grad[b] - W.grad()).abs().max();
    // (2) central differences, h = 1e-6 (truncation O(h²) ≈ 1e-12, rounding ≈ 1e-10)
    torch::NoGradGuard ng;
    auto fd = torch::zeros_like(W);
    const double h = 1e-6;
    for (int64_t p = 0; p < W.size(0); ++p)
      for (int64_t q = 0; q < W.size(1); ++q) {
        const double w0 = W[p][q].item<double>();
        W[p][q].fill_(w0 + h);
        const double lp = sequence_losses(model, one).item<double>();
        W[p][q].fill_(w0 - h);
        const double lm = sequence_losses(model, one).item<double>();
        W[p][q].fill_(w0);
        fd[p][q] = (lp - lm) / (2 * h);
      }
    EXPECT_TRUE(torch::allclose(w.grad[b], fd, 1e-6, 1e-8)) << (w.grad[b] - fd).abs().max();
    EXPECT_NEAR(w.norm[b].item<double>(), fd.norm().item<double>(), 1e-7);
  }
}

TEST(Theorem1Measure, W2GradientMatchesFiniteDifferencesPostLN) { check_w2_gradient(Scheme::Post, false, -1); }
TEST(Theorem1Measure, W2GradientMatchesFiniteDifferencesPreLN) { check_w2_gradient(Scheme::Pre, false, -1); }
TEST(Theorem1Measure, W2GradientMatchesFiniteDifferencesDeepNormLayer0) {
  check_w2_gradient(Scheme::DeepNorm, false, 0);
}
TEST(Theorem1Measure, W2GradientMatchesFiniteDifferencesSigmaReparam) { check_w2_gradient(Scheme::Post, true, -1); }

// The theory setting: W^Q = W^K = 0 (uniform attention), Gaussian inputs, and a Post-LN model's
// output rows have ‖x_{L+1}‖² = d (LN with γ=1, β=0), so the loss sees unit-scale features.
TEST(Theorem1Measure, SettingIsTheTheorySetting) {
  auto spec = tiny_spec(Scheme::Post, false);
  auto model = make_theory_model(spec, 3);
  for (auto& l : model->encoder->layers) {
    EXPECT_EQ(l->self_attn->q_proj->weight.abs().max().item<double>(), 0.0);
    EXPECT_EQ(l->self_attn->k_proj->weight.abs().max().item<double>(), 0.0);
    EXPECT_FALSE(l->ffn->fc2->bias.defined());
  }
  auto sigma = make_theory_model(tiny_spec(Scheme::Post, true), 3);  // σReparam: Ŵ^Q = Ŵ^K = 0 via γ = 0
  for (auto& l : sigma->encoder->layers) {
    EXPECT_EQ(l->self_attn->q_proj->effective_weight().abs().max().item<double>(), 0.0);
    EXPECT_EQ(l->self_attn->k_proj->effective_weight().abs().max().item<double>(), 0.0);
    EXPECT_TRUE(torch::allclose(l->ffn->fc2->effective_weight(), l->ffn->fc2->weight, 1e-5, 1e-6));
  }
  auto batch = gaussian_batch(2, 4, spec.d, spec.vocab, 5);
  auto h = model->encoder->run_layers(batch.x, {}, {}, {});
  EXPECT_NEAR(h.pow(2).sum(-1).mean().item<double>(), static_cast<double>(spec.d), 1e-3);
  EXPECT_EQ(sequence_losses(model, batch).sizes(), (std::vector<int64_t>{2}));
}

// Runs an experiment at its quick defaults and prints its table, findings and time.
Result run_and_print(Result (*run)(const Options&)) {
  auto t0 = std::chrono::steady_clock::now();
  auto r = run(Options{});
  std::cout << claims_table_text(r);
  for (auto& f : r.findings) std::cout << "  • " << f << "\n";
  std::cout << "  (" << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s)\n";
  return r;
}

TEST(Theorem1Quick, TheoryClaimsHoldAndSeriesHaveTheGridShape) {
  auto r = run_and_print(run_theorem1);
  for (auto& c : r.claims)
    if (c.theory) {
      EXPECT_TRUE(c.holds) << c.statement << ": measured " << c.measured << " tol " << c.tolerance;
    }
  const auto Ls = r.config["L"].get<std::vector<int64_t>>();
  for (const char* key : {"post", "pre", "deepnorm", "post_sigma"})
    for (auto d : r.config["d"].get<std::vector<int64_t>>()) {
      const auto& s = r.series[key]["d" + std::to_string(d)];
      EXPECT_EQ(s["grad_mean"].size(), Ls.size()) << key << " d=" << d;
      EXPECT_EQ(s["grad_se"].size(), Ls.size());
    }
  EXPECT_TRUE(r.plot);
  EXPECT_FALSE(r.data_files.empty());
}

// Figure 3 quick run: every claim there is an observation (theory=false) — none may be marked
// theory; series shapes; measure (1) ≤ measure (2) per layer (‖mean_k g_k‖ ≤ mean_k ‖g_k‖, the
// triangle inequality, per seed and hence for the seed means).
TEST(GradProfileQuick, ObservationsAndSeriesShapes) {
  auto r = run_and_print(run_grad_profile);
  EXPECT_FALSE(r.claims.empty());
  for (auto& c : r.claims)
    if (c.theory) {
      EXPECT_TRUE(c.holds) << c.statement;
    }
  const auto N = r.config["layers_ab"].get<size_t>();
  const auto depths = r.config["depths_cd"].get<std::vector<int64_t>>();
  for (const char* key : {"post", "pre", "deepnorm", "post_init", "post_sigma"})
    for (const char* stack : {"encoder", "decoder"}) {
      const auto& p = r.series["per_layer"][key][stack];
      ASSERT_EQ(p["avg_then_norm"].size(), N) << key << " " << stack;
      ASSERT_EQ(p["mean_of_norms"].size(), N);
      for (size_t l = 0; l < N; ++l) {
        const double a = p["avg_then_norm"][l], b = p["mean_of_norms"][l];
        EXPECT_GT(a, 0);
        EXPECT_LE(a, b * (1 + 1e-6)) << key << " " << stack << " layer " << l;
      }
    }
  for (const char* key : {"post", "pre", "deepnorm", "post_init"})
    for (const char* stack : {"encoder", "decoder"})
      EXPECT_EQ(r.series["last_layer"][key][stack]["avg_then_norm"].size(), depths.size()) << key;
  EXPECT_TRUE(r.plot);
  EXPECT_EQ(r.data_files.size(), 4u);
}

}  // namespace
}  // namespace stx::theory
