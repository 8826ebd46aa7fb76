// DeepNorm α/β against DeepNet's table, the init's empirical std per matrix against the gain,
// Post-LN-init's 1/(N−l+1) scaling, and bit-identical weights for the same seed.
#include <gtest/gtest.h>

#include <cmath>

#include "helpers.h"
#include "stx/model/depth_constants.h"

namespace stx {
namespace {

TEST(DeepNorm, CoefficientsMatchPaperTable) {
  // The worked values of docs/reference.md#deepnorm-coefficients (N = M = 6).
  auto e = deepnorm_coefficients(Arch::Encoder, 6, 0);
  EXPECT_NEAR(e.encoder_alpha, 1.861, 5e-4);
  EXPECT_NEAR(e.encoder_beta, 0.380, 5e-4);
  auto ed = deepnorm_coefficients(Arch::EncoderDecoder, 6, 6);
  EXPECT_NEAR(ed.encoder_alpha, 1.418, 5e-4);
  EXPECT_NEAR(ed.encoder_beta, 0.497, 5e-4);
  EXPECT_NEAR(ed.decoder_alpha, 2.060, 5e-4);
  EXPECT_NEAR(ed.decoder_beta, 0.343, 5e-4);
  // The formulas for several (N, M).
  for (int64_t N : {1, 12, 100, 500})
    for (int64_t M : {1, 6, 100, 500}) {
      auto c = deepnorm_coefficients(Arch::EncoderDecoder, N, M);
      const double n = N, m = M;
      EXPECT_DOUBLE_EQ(c.encoder_alpha, 0.81 * std::pow(n * n * n * n * m, 1.0 / 16));
      EXPECT_DOUBLE_EQ(c.encoder_beta, 0.87 * std::pow(n * n * n * n * m, -1.0 / 16));
      EXPECT_DOUBLE_EQ(c.decoder_alpha, std::pow(3 * m, 0.25));
      EXPECT_DOUBLE_EQ(c.decoder_beta, std::pow(12 * m, -0.25));
      auto d = deepnorm_coefficients(Arch::Decoder, N, M);
      EXPECT_DOUBLE_EQ(d.decoder_alpha, std::pow(2 * m, 0.25));
      EXPECT_DOUBLE_EQ(d.decoder_beta, std::pow(8 * m, -0.25));
      EXPECT_DOUBLE_EQ(d.encoder_alpha, 1.0);
    }
}

// Sample std of n iid N(0, s²) draws has standard error ≈ s/√(2n); allow 5 standard errors.
void expect_std(const torch::Tensor& w, double expected, const std::string& what) {
  const double n = static_cast<double>(w.numel());
  const double se = expected / std::sqrt(2 * n);
  EXPECT_NEAR(w.std().item<double>(), expected, 5 * se) << what;
  EXPECT_NEAR(w.mean().item<double>(), 0.0, 5 * expected / std::sqrt(n)) << what;
}

TEST(DeepNorm, InitStdMatchesGainPerMatrix) {
  ModelConfig m = test::tiny(Arch::EncoderDecoder, Scheme::DeepNorm);
  m.d_model = 64;
  m.n_heads = 4;
  m.d_ff = 256;
  m.encoder_layers = 4;
  m.decoder_layers = 3;
  Transformer model(m);
  initialize(*model, 3);
  auto c = deepnorm_coefficients(m);
  auto xavier = [](const torch::Tensor& w) { return std::sqrt(2.0 / (w.size(0) + w.size(1))); };
  for (auto* stack : {&model->encoder, &model->decoder}) {
    const double beta = (*stack)->side() == Side::Encoder ? c.encoder_beta : c.decoder_beta;
    for (auto& layer : (*stack)->layers) {
      std::vector<Attention> attns{layer->self_attn};
      if (layer->encoder_attn) attns.push_back(layer->encoder_attn);
      for (auto& a : attns) {
        expect_std(a->q_proj->weight, xavier(a->q_proj->weight), "q_proj gain 1");
        expect_std(a->k_proj->weight, xavier(a->k_proj->weight), "k_proj gain 1");
        expect_std(a->v_proj->weight, beta * xavier(a->v_proj->weight), "v_proj gain beta");
        expect_std(a->out_proj->weight, beta * xavier(a->out_proj->weight), "out_proj gain beta");
      }
      expect_std(layer->ffn->fc1->weight, beta * xavier(layer->ffn->fc1->weight), "fc1 gain beta");
      expect_std(layer->ffn->fc2->weight, beta * xavier(layer->ffn->fc2->weight), "fc2 gain beta");
      EXPECT_TRUE(torch::all(layer->ffn->fc1->bias == 0).item<bool>());
    }
  }
}

TEST(PostInit, LayerWeightsDividedByNMinusLPlusOne) {
  // Same seed → same Xavier draws; post-init must equal post divided by N − l + 1.
  auto m = test::tiny(Arch::EncoderDecoder, Scheme::Post);
  m.encoder_layers = 4;
  m.decoder_layers = 3;
  Transformer post(m);
  initialize(*post, 5);
  m.scheme = Scheme::PostInit;
  Transformer pinit(m);
  initialize(*pinit, 5);
  for (auto [a, b] : {std::make_pair(post->encoder, pinit->encoder), std::make_pair(post->decoder, pinit->decoder)}) {
    const int64_t N = a->num_layers();
    for (int64_t i = 0; i < N; ++i) {
      const double k = N - (i + 1) + 1;
      auto pa = a->layers[i]->named_parameters(), pb = b->layers[i]->named_parameters();
      for (auto& p : pa) {
        auto q = pb[p.key()];
        if (p.value().dim() == 2) EXPECT_TRUE(torch::allclose(q, p.value() / k, 0, 0)) << p.key() << " layer " << i;
        else EXPECT_TRUE(torch::equal(q, p.value())) << p.key();
      }
    }
  }
}

TEST(Init, SameSeedSameWeightsBitForBit) {
  for (auto scheme : {Scheme::Post, Scheme::Pre, Scheme::DeepNorm, Scheme::PostInit}) {
    auto m = test::tiny(Arch::EncoderDecoder, scheme, NormKind::LayerNorm, scheme == Scheme::Post);
    Transformer a(m), b(m), c(m);
    initialize(*a, 11);
    initialize(*b, 11);
    initialize(*c, 12);
    auto sa = a->state(), sb = b->state(), sc = c->state();
    ASSERT_EQ(sa.size(), sb.size());
    bool any_diff = false;
    for (size_t i = 0; i < sa.size(); ++i) {
      EXPECT_EQ(sa[i].first, sb[i].first);
      EXPECT_TRUE(torch::equal(sa[i].second, sb[i].second)) << sa[i].first;
      any_diff |= !torch::equal(sa[i].second, sc[i].second);
    }
    EXPECT_TRUE(any_diff) << "a different seed must give different weights";
  }
}

TEST(Init, ParameterNamesFollowFairseq) {
  auto m = test::tiny(Arch::EncoderDecoder, Scheme::Pre, NormKind::LayerNorm, true);
  m.tie_embeddings = false;
  m.positions = Positions::Learned;
  Transformer model(m);
  std::set<std::string> names;
  for (auto& [n, _] : model->state()) names.insert(n);
  for (const char* n :
       {"encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "encoder.embed_positions.weight",
        "encoder.layers.0.self_attn.q_proj.weight", "encoder.layers.2.self_attn.out_proj.bias",
        "encoder.layers.0.self_attn_layer_norm.weight", "encoder.layers.0.ffn.fc1.weight",
        "encoder.layers.0.final_layer_norm.bias", "decoder.layers.1.encoder_attn.k_proj.weight",
        "decoder.layers.1.encoder_attn_layer_norm.weight", "encoder.layer_norm.weight", "decoder.layer_norm.bias",
        "decoder.output_projection.weight", "decoder.output_projection.gamma", "encoder.layers.0.ffn.fc2.u",
        "encoder.layers.0.ffn.fc2.v", "encoder.layers.0.ffn.fc2.gamma"})
    EXPECT_TRUE(names.count(n)) << n;
  EXPECT_FALSE(names.count("decoder.layers.0.self_attn.q_proj.bias") == 0);
  // Tied encoder-decoder: one stored embedding.
  m.tie_embeddings = true;
  Transformer tied(m);
  std::set<std::string> tnames;
  for (auto& [n, _] : tied->state()) tnames.insert(n);
  EXPECT_TRUE(tnames.count("encoder.embed_tokens.weight"));
  EXPECT_FALSE(tnames.count("decoder.embed_tokens.weight"));
  EXPECT_FALSE(tnames.count("decoder.output_projection.weight"));
}

}  // namespace
}  // namespace stx
