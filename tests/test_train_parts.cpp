// Unit tests of the trainer's parts: label-smoothed loss (fairseq's formula, by hand), the
// divergence guard (non-finite, z-score spike, state round trip), the metrics log's resume
// truncation, and the diagnostics (per-layer gradient norms add up to the global norm;
// attention entropy of uniform attention is log T).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "helpers.h"
#include "stx/core/error.h"
#include "stx/probe/diagnostics.h"
#include "stx/report/metrics_log.h"
#include "stx/report/metrics_schema.h"
#include "stx/train/divergence_guard.h"
#include "stx/train/loss.h"

namespace stx {
namespace {

TEST(LabelSmoothedLoss, MatchesFairseqFormulaByHand) {
  torch::manual_seed(0);
  auto logits = torch::randn({2, 3, 5}, torch::kFloat64);
  auto target = torch::tensor({{1, 4, 0}, {2, 0, 0}}, torch::kInt64);  // pad 0
  const double eps = 0.1;
  auto r = label_smoothed_loss(logits, target, eps, /*pad_id=*/0);
  EXPECT_EQ(r.tokens, 3);
  auto lp = torch::log_softmax(logits, -1);
  double nll = 0, loss = 0;
  const double eps_i = eps / 4;
  for (auto [b, t] : std::vector<std::pair<int, int>>{{0, 0}, {0, 1}, {1, 0}}) {
    const double n = -lp[b][t][target[b][t].item<int64_t>()].item<double>();
    nll += n;
    loss += (1 - eps - eps_i) * n + eps_i * (-lp[b][t].sum().item<double>());
  }
  EXPECT_NEAR(r.nll.item<double>(), nll, 1e-12);
  EXPECT_NEAR(r.loss.item<double>(), loss, 1e-12);
  auto plain = label_smoothed_loss(logits, target, 0.0, 0);
  EXPECT_NEAR(plain.loss.item<double>(), nll, 1e-12);
}

TEST(DivergenceGuard, NonFiniteAndSpikes) {
  DivergenceGuard g(/*window=*/10, /*zscore=*/6);
  EXPECT_EQ(g.check(NAN, 1), DivergenceGuard::Verdict::NonFinite);
  EXPECT_EQ(g.check(1, INFINITY), DivergenceGuard::Verdict::NonFinite);
  EXPECT_EQ(g.check(100, 1), DivergenceGuard::Verdict::Ok) << "no spike judgement before window/2 losses";
  for (int i = 0; i < 10; ++i) g.accept(5.0 + 0.1 * (i % 2));   // mean 5.05, sd ≈ 0.053
  EXPECT_EQ(g.check(5.2, 1), DivergenceGuard::Verdict::Ok);     // z ≈ 2.8
  EXPECT_EQ(g.check(5.5, 1), DivergenceGuard::Verdict::Spike);  // z ≈ 8.5
  EXPECT_EQ(g.check(1.0, 1), DivergenceGuard::Verdict::Ok) << "a drop is not a spike";
  EXPECT_NE(g.describe(DivergenceGuard::Verdict::Spike, 5.5, 1).find("standard deviations"), std::string::npos);
  DivergenceGuard h(10, 6);
  h.load(g.state());
  EXPECT_EQ(h.check(5.5, 1), DivergenceGuard::Verdict::Spike);
  EXPECT_EQ(h.state(), g.state());
  DivergenceGuard off(10, 0);
  for (int i = 0; i < 10; ++i) off.accept(5);
  EXPECT_EQ(off.check(1e9, 1), DivergenceGuard::Verdict::Ok) << "zscore 0 disables spikes";
}

TEST(MetricsLog, ResumeDropsLinesAfterTheCheckpointAndTornLines) {
  const auto path =
      (std::filesystem::temp_directory_path() / ("stx_metrics_" + std::to_string(getpid()) + ".jsonl")).string();
  {
    MetricsLog log(path, 0);
    for (int s = 1; s <= 5; ++s) log.write({{"step", s}, {"loss", 1.0 / s}});
  }
  { std::ofstream(path, std::ios::app) << "{\"step\": 6, \"lo"; }  // a torn write (kill -9)
  {
    MetricsLog log(path, 3);
    log.write({{"step", 4}, {"loss", 9}});
  }
  auto rows = metrics::read_metrics(path).records;
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].json[metrics::key::schema], metrics::kSchemaVersion);  // the first line states the version
  EXPECT_EQ(rows[2].step, 3);
  EXPECT_EQ(rows[3].loss, 9);
  { std::ofstream(path, std::ios::app) << "not json\n"; }
  EXPECT_THROW(metrics::read_metrics(path), InputError);
  std::filesystem::remove(path);
}

TEST(Diagnostics, LayerNormsAddUpAndUniformAttentionHasEntropyLogT) {
  auto cfg = test::tiny(Arch::EncoderDecoder, Scheme::Post);
  Transformer model(cfg);
  initialize(*model, 3);
  auto src = torch::randint(1, cfg.vocab_size, {2, 5}, torch::kInt64);
  auto tgt = torch::randint(1, cfg.vocab_size, {2, 4}, torch::kInt64);
  model->forward(src, tgt).pow(2).mean().backward();
  auto g = probe::gradient_norms(*model);
  double layers = 0, sub = 0;
  for (auto& [stack, v] : g["grad_norm_layer"].items())
    for (auto& x : v) layers += x.get<double>() * x.get<double>();
  for (auto& [stack, m] : g["grad_norm_sublayer"].items())
    for (auto& [k, v] : m.items())
      for (auto& x : v) sub += x.get<double>() * x.get<double>();
  EXPECT_NEAR(layers, sub, 1e-9 * layers);
  EXPECT_LT(layers, g["grad_norm"].get<double>() * g["grad_norm"].get<double>());  // embeddings are outside the layers
  EXPECT_NEAR(g["grad_norm"].get<double>(), probe::global_grad_norm(*model), 1e-6 * g["grad_norm"].get<double>());
  EXPECT_EQ(g["grad_norm_layer"]["encoder"].size(), 3u);
  EXPECT_EQ(g["grad_norm_sublayer"]["decoder"]["encoder_attn"].size(), 2u);
  EXPECT_NEAR(g["grad_norm_w2"]["decoder"][1].get<double>(),
              model->decoder->layers[1]->ffn->fc2->weight.grad().norm().item<double>(), 1e-6);

  // W^Q = W^K = 0 → uniform self-attention: entropy log T on every unpadded row.
  cfg.qk_init = QKInit::Zero;
  Transformer uni(cfg);
  initialize(*uni, 4);
  auto src2 = torch::randint(1, cfg.vocab_size, {2, 6}, torch::kInt64);
  Taps taps = probe::probe_taps();
  {
    torch::NoGradGuard ng;
    uni->eval();
    uni->forward(src2, tgt, &taps);
  }
  auto j = probe::norm_and_entropy(taps, cfg.d_model, src2.ne(0).to(torch::kFloat), tgt.ne(0).to(torch::kFloat));
  for (auto& e : j["attn_entropy"]["encoder"]["self_attn"]["mean"]) EXPECT_NEAR(e.get<double>(), std::log(6.0), 1e-5);
  EXPECT_EQ(j["ln_input_norm"]["encoder"]["final_layer_norm"].size(), 3u);
  auto w = probe::weight_stats(*model);
  EXPECT_TRUE(w["sigma"].empty());
  EXPECT_GT(w["param_norm"].get<double>(), 0);
}

}  // namespace
}  // namespace stx
