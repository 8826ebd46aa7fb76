// tests/test_theory_deepnet.cpp — the ModelUpdate probe (DeepNet's ‖ΔF‖, Wang et al. 2022 §3)
// and the quick `deepnet-update` experiment (DeepNet Figures 4–5, Theorem 4.2).
#include <gtest/gtest.h>

#include <cmath>

#include "helpers.h"
#include "stx/probe/model_update.h"
#include "stx/theory/experiments.h"

namespace {

using stx::probe::ModelUpdate;

struct Tiny {
  stx::Transformer model{nullptr};
  torch::Tensor src, tgt;
};

Tiny tiny_model(stx::Arch arch, stx::Scheme scheme) {
  Tiny t;
  t.model = stx::Transformer(stx::test::tiny(arch, scheme));
  stx::initialize(*t.model, 5);
  t.src = stx::test::tokens(3, 5, 11, 1);
  t.tgt = stx::test::tokens(3, 4, 11, 2);
  if (arch == stx::Arch::Decoder) t.src = torch::Tensor();
  return t;
}

TEST(ModelUpdate, ZeroBeforeAnyStep) {
  for (auto arch : {stx::Arch::Encoder, stx::Arch::Decoder, stx::Arch::EncoderDecoder}) {
    auto t = tiny_model(arch, stx::Scheme::Post);
    t.model->train();
    ModelUpdate probe(t.model, t.src, t.tgt);
    auto s = probe.measure();
    EXPECT_EQ(s.from_start, 0.0) << stx::test::name(arch);
    EXPECT_EQ(s.from_previous, 0.0);
    EXPECT_TRUE(t.model->is_training()) << "the probe must restore the training mode";
  }
}

// Pre-LN ends with the stack's final LayerNorm, F = LN(x)·w + b: adding δ to b moves every
// token's F by exactly δ, so ‖ΔF‖ = ‖δ‖ (padding excluded from the mean changes nothing).
TEST(ModelUpdate, FinalNormBiasShiftGivesItsNorm) {
  auto t = tiny_model(stx::Arch::EncoderDecoder, stx::Scheme::Pre);
  ModelUpdate probe(t.model, t.src, t.tgt);
  auto delta = torch::zeros({8});
  delta[2] = 0.3;
  delta[5] = -0.4;  // ‖δ‖ = 0.5
  {
    torch::NoGradGuard ng;
    t.model->decoder->layer_norm->bias.add_(delta);
  }
  auto s = probe.measure();
  EXPECT_NEAR(s.from_start, 0.5, 1e-6);
  EXPECT_NEAR(s.from_previous, 0.5, 1e-6);
  EXPECT_NEAR(probe.measure().from_previous, 0.0, 1e-12);  // nothing changed since
  EXPECT_NEAR(probe.measure().from_start, 0.5, 1e-6);
}

// Post-LN: F is the last layer's final_layer_norm output with bias 0, so scaling its weight by
// (1 + c) scales F, and ‖ΔF‖ = c · mean over real tokens of ‖F₀,t‖ — computed by hand from F₀
// and the padding mask (decoder-only model: tgt's last row has two padding tokens).
TEST(ModelUpdate, FinalNormScaleGivesHandComputedValue) {
  auto t = tiny_model(stx::Arch::Decoder, stx::Scheme::Post);
  ModelUpdate probe(t.model, t.src, t.tgt);
  const auto f0 = probe.reference();
  ASSERT_EQ(f0.sizes(), (std::vector<int64_t>{3, 4, 8}));
  double sum = 0;
  int n = 0;
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t i = 0; i < 4; ++i)
      if (t.tgt[b][i].item<int64_t>() != 0) {
        sum += f0[b][i].norm().item<double>();
        ++n;
      }
  EXPECT_EQ(n, 10);
  const double c = 0.25;
  {
    torch::NoGradGuard ng;
    t.model->decoder->layers.back()->final_layer_norm->weight.mul_(1 + c);
  }
  EXPECT_NEAR(probe.measure().from_start, c * sum / n, 1e-5);
}

TEST(ModelUpdate, MeanTokenDistanceFormula) {
  auto a = torch::zeros({1, 2, 2}), b = torch::zeros({1, 2, 2});
  a[0][0][0] = 3;
  a[0][0][1] = 4;  // ‖·‖ = 5
  a[0][1][0] = 1;  // ‖·‖ = 1
  EXPECT_DOUBLE_EQ(ModelUpdate::mean_token_distance(a, b, torch::ones({1, 2})), 3.0);
  auto m = torch::ones({1, 2});
  m[0][1] = 0;
  EXPECT_DOUBLE_EQ(ModelUpdate::mean_token_distance(a, b, m), 5.0);
}

// The quick experiment: every theory claim holds; the series have the documented shapes.
TEST(DeepNetUpdate, QuickClaimsAndSeries) {
  stx::theory::Options o;
  auto r = stx::theory::run_deepnet_update(o);
  for (auto& c : r.claims)
    std::printf("  %-5s %s: predicted %s measured %.4g tol %s\n",
                c.holds    ? "ok"
                : c.theory ? "FAIL"
                           : "✗obs",
                c.statement.c_str(), c.predicted.dump().c_str(), c.measured, c.tolerance.dump().c_str());
  for (auto& f : r.findings) std::printf("  • %s\n", f.c_str());
  EXPECT_TRUE(r.all_theory_claims_hold());
  int theory = 0;
  for (auto& c : r.claims) theory += c.theory;
  EXPECT_GE(theory, 1);
  const auto depths = r.config["depths"].get<std::vector<int64_t>>();
  const auto steps = r.config["steps"].get<size_t>();
  for (auto scheme : {"post", "post-init", "deepnorm", "pre"})
    for (auto n : depths) {
      const auto& c = r.series["adam"][scheme][std::to_string(n) + "L"];
      for (auto key : {"dF", "increment", "loss", "ln_input_max_over_sqrt_d", "grad_norm_bottom_layer"}) {
        ASSERT_EQ(c[key].size(), steps) << scheme << " " << n << " " << key;
        for (auto& v : c[key]) EXPECT_TRUE(std::isfinite(v.get<double>()));
      }
      // ‖ΔF‖ ≥ 0 and at most ‖F_t‖ + ‖F₀‖: F is a LayerNorm output here (γ≈1), ≲ 2√d per token.
      for (auto& v : c["dF"]) EXPECT_LE(v.get<double>(), 2.5 * std::sqrt(r.config["d"].get<double>()));
      EXPECT_EQ(r.series["sgd_first_step"][scheme][std::to_string(n) + "L"]["dF_over_lr"].size(),
                r.config["sgd_seeds"].get<size_t>());
    }
  EXPECT_FALSE(r.data_files.empty());
  EXPECT_TRUE(static_cast<bool>(r.plot));
}

}  // namespace
