// Taps: every point of Xiong et al.'s notation is recorded, and the recorded tensors satisfy the
// scheme's equations (x^{post,2} = x + x^{post,1}, x^{post,3} = LN(x^{post,2}), …).
#include <gtest/gtest.h>

#include "helpers.h"
#include "stx/model/depth_constants.h"
#include "stx/model/taps.h"

namespace stx {
namespace {

TEST(Taps, PostLNPointsSatisfyTheSublayerEquations) {
  auto m = test::tiny(Arch::Encoder, Scheme::DeepNorm);
  Transformer model(m);
  initialize(*model, 1);
  model->eval();
  Taps taps;
  model->forward(test::tokens(2, 6, m.vocab_size, 3), {}, &taps);
  const auto& v = taps.values();
  const double alpha = deepnorm_coefficients(m).encoder_alpha;
  for (int l = 0; l < 3; ++l) {
    const std::string p = "encoder.layers." + std::to_string(l) + ".";
    for (auto n : {"input", "post1", "post2", "post3", "post4", "post5", "output", "self_attn_layer_norm.input",
                   "final_layer_norm.input"})
      ASSERT_TRUE(v.count(p + n)) << p + n;
    EXPECT_TRUE(torch::allclose(v.at(p + "post2"), alpha * v.at(p + "input") + v.at(p + "post1"), 1e-5, 1e-6));
    EXPECT_TRUE(torch::allclose(v.at(p + "post5"), alpha * v.at(p + "post3") + v.at(p + "post4"), 1e-5, 1e-6));
    auto ln = torch::layer_norm(v.at(p + "post5"), {m.d_model}, {}, {}, m.norm_eps);
    EXPECT_TRUE(torch::allclose(v.at(p + "output"), ln, 1e-5, 1e-5));
    if (l < 2) {
      EXPECT_TRUE(torch::equal(v.at(p + "output"), v.at("encoder.layers." + std::to_string(l + 1) + ".input")));
    }
  }
  EXPECT_TRUE(v.count("encoder.out") && v.count("logits") && v.count("encoder.embed"));
  EXPECT_FALSE(v.count("encoder.layers.0.self_attn.probs")) << "probs only when asked";
}

TEST(Taps, PreLNPointsAndFinalNorm) {
  auto m = test::tiny(Arch::EncoderDecoder, Scheme::Pre);
  Transformer model(m);
  initialize(*model, 1);
  model->eval();
  Taps taps;
  model->forward(test::tokens(2, 5, m.vocab_size, 3), test::tokens(2, 4, m.vocab_size, 4), &taps);
  const auto& v = taps.values();
  for (int l = 0; l < 2; ++l) {
    const std::string p = "decoder.layers." + std::to_string(l) + ".";
    for (auto n : {"pre1", "pre2", "pre3", "cross1", "cross2", "cross3", "pre4", "pre5", "output"})
      ASSERT_TRUE(v.count(p + n)) << p + n;
    EXPECT_TRUE(torch::allclose(v.at(p + "pre3"), v.at(p + "input") + v.at(p + "pre2"), 1e-5, 1e-6));
    EXPECT_TRUE(torch::allclose(v.at(p + "output"), v.at(p + "cross3") + v.at(p + "pre5"), 1e-5, 1e-6));
  }
  EXPECT_TRUE(v.count("decoder.layer_norm.input"));
}

TEST(Taps, FilterAndGradients) {
  auto m = test::tiny(Arch::Decoder, Scheme::Post);
  Transformer model(m);
  initialize(*model, 2);
  Taps taps({"post5", "self_attn.probs"}, /*with_grad=*/true);
  auto logits = model->forward({}, test::tokens(2, 5, m.vocab_size, 5), &taps);
  logits.sum().backward();
  EXPECT_EQ(taps.values().size(), 4u);  // post5 and probs of 2 layers
  auto probs = taps.values().at("decoder.layers.0.self_attn.probs");
  EXPECT_TRUE(torch::allclose(probs.sum(-1), torch::ones_like(probs.sum(-1)), 1e-5, 1e-6));
  // Causal: no attention to future keys.
  EXPECT_EQ(probs.triu(1).abs().max().item<float>(), 0.0f);
  for (auto& [name, g] : taps.grads()) EXPECT_TRUE(g.defined()) << name;
}

}  // namespace
}  // namespace stx
