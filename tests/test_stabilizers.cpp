// The stabilizers of docs/model.md#stabilizers: what each paper states at initialization
// (ReZero: the identity map; LayerScale: ε-close to it, CaiT's ε by depth; LayerNorm Scaling:
// norm outputs of RMS 1/√l; Mix-LN: Post-LN below ⌊p·L⌋), soft-capping's bound, z-loss, and the
// combinations validate() refuses. Forward parity with the float64 reference is in
// tests/ref/test_parity.py, gradients in test_gradcheck.cpp.
#include <gtest/gtest.h>

#include <cmath>

#include "helpers.h"
#include "stx/config/config_io.h"
#include "stx/model/admin_pass.h"
#include "stx/model/layer.h"
#include "stx/train/loss.h"

namespace stx {
namespace {

ModelConfig wide(Arch arch, Scheme scheme, NormKind norm = NormKind::LayerNorm) {
  auto m = test::tiny(arch, scheme, norm);
  m.d_model = 64;
  m.n_heads = 4;
  m.d_ff = 128;
  m.encoder_layers = 4;
  m.decoder_layers = 4;
  return m;
}

// The stack's input (embedding) and output for a decoder-only model in eval mode.
std::pair<torch::Tensor, torch::Tensor> embed_and_out(const ModelConfig& m) {
  Transformer model(m);
  initialize(*model, 3);
  model->eval();
  Taps taps({"decoder.embed", "decoder.out"});
  torch::NoGradGuard ng;
  model->forward({}, test::tokens(2, 6, m.vocab_size, 4), &taps);
  return {taps.values().at("decoder.embed"), taps.values().at("decoder.out")};
}

TEST(ReZero, IsTheIdentityMapAtInit) {  // Bachlechner et al. 2020: α = 0, so x_L = x_0
  auto [x0, xL] = embed_and_out(wide(Arch::Decoder, Scheme::ReZero, NormKind::None));
  EXPECT_TRUE(torch::equal(x0, xL));
}

TEST(LayerScale, CaiTEpsilonByDepth) {  // Touvron et al. 2021
  ModelConfig m;
  EXPECT_EQ(layerscale_epsilon(m, 18), 0.1);
  EXPECT_EQ(layerscale_epsilon(m, 19), 1e-5);
  EXPECT_EQ(layerscale_epsilon(m, 24), 1e-5);
  EXPECT_EQ(layerscale_epsilon(m, 25), 1e-6);
  m.layerscale_init = 0.02;
  EXPECT_EQ(layerscale_epsilon(m, 1000), 0.02);
}

TEST(LayerScale, IsNearTheIdentityMapAtInit) {
  // Each branch is scaled by ε, so ‖x_L − x_0‖ = O(ε·L·‖G‖); before the final norm.
  for (double eps : {1e-2, 1e-4}) {
    auto m = wide(Arch::Decoder, Scheme::LayerScale);
    m.layerscale_init = eps;
    Transformer model(m);
    initialize(*model, 3);
    model->eval();
    Taps taps({"decoder.embed", "decoder.layer_norm.input", "pre2"});
    torch::NoGradGuard ng;
    model->forward({}, test::tokens(2, 6, m.vocab_size, 4), &taps);
    auto x0 = taps.values().at("decoder.embed"), xL = taps.values().at("decoder.layer_norm.input");
    const double rel = ((xL - x0).norm() / x0.norm()).item<double>();
    // Unscaled, a branch G(LN(x)) has RMS ≈ 1 (Xavier, LN output of RMS 1); 2L branches of ε.
    EXPECT_LT(rel, 2 * m.decoder_layers * eps * 2) << "ε = " << eps;
    EXPECT_GT(rel, eps * 0.1) << "ε = " << eps;
  }
}

TEST(LNScaling, NormOutputsShrinkAsOneOverSqrtDepth) {  // Sun et al. 2025
  auto m = wide(Arch::Encoder, Scheme::LNScaling);
  Transformer model(m);
  initialize(*model, 3);
  model->eval();
  Taps taps({"pre1"});
  torch::NoGradGuard ng;
  model->forward(test::tokens(2, 6, m.vocab_size, 4), {}, &taps);
  for (int64_t l = 0; l < m.encoder_layers; ++l) {
    auto n = taps.values().at("encoder.layers." + std::to_string(l) + ".pre1");
    const double rms = n.pow(2).mean().sqrt().item<double>();  // LN output: RMS 1 before the scale
    EXPECT_NEAR(rms, 1.0 / std::sqrt(l + 1.0), 1e-3) << "layer " << l + 1;
  }
}

TEST(MixLN, PostLNBelowTheSplitPreLNAbove) {  // Li et al. 2024: ⌊p·L⌋ Post-LN layers
  auto m = wide(Arch::Encoder, Scheme::MixLN);
  m.encoder_layers = 8;  // p = 0.25: layers 0, 1 Post-LN
  Transformer model(m);
  initialize(*model, 3);
  Taps taps({"post1", "pre1"});
  torch::NoGradGuard ng;
  model->eval();
  model->forward(test::tokens(2, 6, m.vocab_size, 4), {}, &taps);
  for (int64_t l = 0; l < 8; ++l) {
    const auto p = "encoder.layers." + std::to_string(l) + ".";
    EXPECT_EQ(taps.values().count(p + "post1"), l < 2 ? 1u : 0u) << l;
    EXPECT_EQ(taps.values().count(p + "pre1"), l < 2 ? 0u : 1u) << l;
  }
  EXPECT_TRUE(model->encoder->layer_norm);  // the final norm of its Pre-LN part
}

TEST(Admin, ProfilingPassFollowsTheVarianceRecurrence) {
  // Liu et al. 2020 / Transformer-Clinic: ω_1 = 1, ω_{i+1} = sqrt(Var[ω_i ⊙ x] + Var[f_i(x)]),
  // checked against a second, tapped forward pass on the same batch (the profiled ω in place).
  for (Arch arch : {Arch::Decoder, Arch::EncoderDecoder}) {
    SCOPED_TRACE(test::name(arch));
    auto m = wide(arch, Scheme::Admin);
    Transformer model(m);
    initialize(*model, 5);
    auto src = arch == Arch::EncoderDecoder ? test::tokens(3, 7, m.vocab_size, 1) : torch::Tensor();
    auto tgt = test::tokens(3, 6, m.vocab_size, 2);
    const auto rec = admin_profile(*model, src, tgt);
    ASSERT_EQ(rec.size(), arch == Arch::EncoderDecoder ? 4u * 2 + 4u * 3 : 4u * 2);
    model->eval();
    Taps taps;
    {
      torch::NoGradGuard ng;
      model->forward(src, tgt, &taps);
    }
    auto params = model->named_parameters();
    auto var = [](const torch::Tensor& t) { return t.to(torch::kFloat64).var(false).item<double>(); };
    for (size_t i = 0; i < rec.size(); ++i) {
      const auto& r = rec[i];
      SCOPED_TRACE(r.name);
      const auto& w = params[r.name];
      EXPECT_TRUE(torch::all(w == w[0]).item<bool>());
      EXPECT_EQ(w[0].item<float>(), static_cast<float>(r.omega));
      const bool first = i == 0 || rec[i - 1].name.substr(0, 7) != r.name.substr(0, 7);
      if (first) EXPECT_EQ(r.omega, 1.0);
      else EXPECT_NEAR(r.omega, std::sqrt(rec[i - 1].var_skip + rec[i - 1].var_branch), 1e-9);
      // The branch output recorded is the tapped f_i: post1 (self), cross1, post4 (FFN).
      const auto at = r.name.substr(0, r.name.rfind('.') + 1);
      const auto leaf = r.name.substr(r.name.rfind('.') + 1);
      const char* point = leaf == "fc_ratio_change" ? "post4" : leaf == "encoder_ratio_change" ? "cross1" : "post1";
      EXPECT_NEAR(var(taps.values().at(at + point)), r.var_branch, 1e-5 * r.var_branch);
    }
  }
}

TEST(SoftCap, BoundsAttentionAndOutputLogits) {  // Gemma 2: |c·tanh(z/c)| ≤ c (= c once tanh rounds to 1)
  auto run = [](double attn_cap, double logit_cap, Taps* taps) {
    auto m = wide(Arch::Decoder, Scheme::Pre);
    m.attn_softcap = attn_cap;
    m.logit_softcap = logit_cap;
    Transformer model(m);
    initialize(*model, 3);
    model->eval();
    torch::NoGradGuard ng;
    return model->forward({}, test::tokens(2, 6, m.vocab_size, 4), taps);
  };
  Taps raw({"scores"}), capped({"scores"});
  auto z = run(0, 0, &raw), zc = run(0.5, 0.25, &capped);
  EXPECT_GT(z.abs().max().item<double>(), 0.5);  // the caps bind
  EXPECT_LE(zc.abs().max().item<double>(), 0.25);
  ASSERT_FALSE(capped.values().empty());
  double raw_max = 0;
  for (auto& [name, s] : raw.values()) raw_max = std::max(raw_max, s.abs().max().item<double>());
  for (auto& [name, s] : capped.values()) EXPECT_LE(s.abs().max().item<double>(), 0.5) << name;
  EXPECT_GT(raw_max, 0.5);
}

TEST(ZLoss, IsTheSumOfSquaredLogPartitionOverTargets) {  // PaLM (Chowdhery et al. 2022)
  auto logits = torch::randn({2, 3, 7}, torch::kFloat64) * 3;
  auto target = torch::tensor({{1, 2, 0}, {3, 0, 0}});  // 0 = pad
  const double got = z_loss_sum(logits, target, 0).item<double>();
  double want = 0;
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 3; ++t)
      if (target[b][t].item<int64_t>() != 0) {
        const double lz = torch::logsumexp(logits[b][t], 0).item<double>();
        want += lz * lz;
      }
  EXPECT_NEAR(got, want, 1e-4 * want);
  EXPECT_NEAR(z_loss_sum(logits, target, -1).item<double>(), torch::logsumexp(logits, -1).pow(2).sum().item<double>(),
              1e-3);
}

TEST(Stabilizers, IncompatibleCombinationsAreRefused) {
  auto refused = [](const std::vector<std::string>& sets) { return test::error_of([&] { resolve_config("", sets); }); };
  EXPECT_NE(refused({"model.scheme=rezero"}).find("ReZero"), std::string::npos);  // layernorm by default
  EXPECT_EQ(refused({"model.scheme=rezero", "model.norm=none"}), "");
  EXPECT_NE(refused({"model.scheme=peri-ln", "model.norm=none"}).find("needs a norm"), std::string::npos);
  EXPECT_NE(refused({"model.scheme=deepnorm", "model.norm=dyt"}).find("Dynamic Tanh"), std::string::npos);
  EXPECT_NE(refused({"model.scheme=post", "model.norm=dyt"}).find("Dynamic Tanh"), std::string::npos);
  EXPECT_NE(refused({"model.scheme=mix-ln", "model.norm=dyt"}).find("Dynamic Tanh"), std::string::npos);
  EXPECT_EQ(refused({"model.scheme=layerscale", "model.norm=dyt"}), "");
  EXPECT_NE(refused({"model.scheme=t-fixup"}).find("T-Fixup"), std::string::npos);
  EXPECT_EQ(refused({"model.scheme=t-fixup", "model.norm=none"}), "");
  EXPECT_NE(refused({"model.scheme=ds-init", "model.norm=dyt"}).find("Dynamic Tanh"), std::string::npos);
  EXPECT_NE(refused({"model.ds_init_exponent=-1"}).find("model.ds_init_exponent"), std::string::npos);
  EXPECT_NE(refused({"model.mix_ln_ratio=1.5"}).find("[0, 1]"), std::string::npos);
  EXPECT_NE(refused({"model.attn_softcap=-1"}).find("model.attn_softcap"), std::string::npos);
  EXPECT_NE(refused({"train.z_loss=-1e-4"}).find("train.z_loss"), std::string::npos);
  EXPECT_NE(refused({"model.dyt_alpha=0"}).find("model.dyt_alpha"), std::string::npos);
  EXPECT_NE(refused({"model.scheme=admin", "model.norm=none"}).find("needs a norm"), std::string::npos);
  EXPECT_NE(refused({"model.scheme=admin", "model.norm=dyt"}).find("Dynamic Tanh"), std::string::npos);
  EXPECT_EQ(refused({"model.scheme=normformer", "model.norm=dyt"}), "");
  EXPECT_NE(refused({"model.scheme=sub-ln", "model.norm=none"}).find("needs a norm"), std::string::npos);
  EXPECT_NE(refused({"model.scheme=nope"}).find("rezero"), std::string::npos);  // the allowed list
}

}  // namespace
}  // namespace stx
