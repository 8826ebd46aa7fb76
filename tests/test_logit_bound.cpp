// stx/probe/logit_bound.h: Zhai et al. Theorem 3.1 on a model's own attention layers. The
// per-head ‖M_h‖₂ (computed through QR) equals the spectral norm of the explicit bias-augmented
// product; every logit row of a real forward (padding, self- and cross-attention, σReparam) has
// norm ≤ 𝛔 = σ_h ‖X'_q‖₂‖X'_k‖₂; and the logged bound never exceeds the measured entropy, and at
// small 𝛔 lies within 0.05 nats of it in every layer (causal key counts included).
#include <gtest/gtest.h>

#include <cmath>

#include "helpers.h"
#include "stx/probe/attention_entropy.h"
#include "stx/probe/diagnostics.h"
#include "stx/probe/logit_bound.h"

namespace stx {
namespace {

const auto kF64 = torch::kFloat64;

torch::Tensor augmented(LinearImpl& lin) {
  auto w = lin.effective_weight().detach();
  return torch::cat({w, lin.bias.detach().unsqueeze(1)}, 1);  // [d, d+1]
}

// Scales every attention's effective W_Q, W_K and their biases by s (σReparam: γ, as Ŵ = γW/σ(W)
// does not change when W is scaled).
void scale_qk(TransformerImpl& model, double s) {
  torch::NoGradGuard ng;
  for (auto& p : model.named_parameters(true)) {
    const auto& k = p.key();
    if (k.find("q_proj.") != std::string::npos || k.find("k_proj.") != std::string::npos)
      if (k.find("weight") != std::string::npos || k.find("bias") != std::string::npos ||
          k.find("gamma") != std::string::npos)
        p.value().mul_(s);
  }
}

TEST(LogitBound, HeadNormEqualsExplicitProduct) {
  for (bool sigma : {false, true}) {
    auto m = test::tiny(Arch::Decoder, Scheme::Post, NormKind::LayerNorm, sigma);
    Transformer model(m);
    initialize(*model, 3);
    model->to(kF64);
    torch::NoGradGuard ng;
    for (auto& p : model->named_parameters(true))
      if (p.key().find("bias") != std::string::npos) p.value().normal_(0, 0.3);  // non-zero biases
    auto& attn = *model->decoder->layers[1]->self_attn;
    const int64_t H = m.n_heads, dh = m.d_model / H;
    auto aq = augmented(*attn.q_proj).view({H, dh, -1}), ak = augmented(*attn.k_proj).view({H, dh, -1});
    auto M = torch::matmul(aq.transpose(1, 2), ak) / std::sqrt(double(dh));  // [H, d+1, d+1]
    auto expect = torch::linalg_svdvals(M).select(-1, 0);
    auto got = probe::head_logit_norms(attn, H);
    EXPECT_TRUE(torch::allclose(got, expect, 1e-10, 0)) << got << expect;
  }
}

// One encoder-decoder forward in float64; returns (taps, src mask, tgt mask).
struct Probe {
  Transformer model{nullptr};
  Taps taps = probe::probe_taps();
  torch::Tensor src, tgt, src_mask, tgt_mask;
};
Probe forward(bool sigma, double qk_scale) {
  auto m = test::tiny(Arch::EncoderDecoder, Scheme::Post, NormKind::LayerNorm, sigma);
  Probe p;
  p.model = Transformer(m);
  initialize(*p.model, 5);
  p.model->to(kF64);
  scale_qk(*p.model, qk_scale);
  p.model->eval();
  p.src = test::tokens(3, 7, m.vocab_size, 11);
  p.tgt = test::tokens(3, 6, m.vocab_size, 12);
  p.src_mask = (p.src != 0).to(kF64);
  p.tgt_mask = (p.tgt != 0).to(kF64);
  torch::NoGradGuard ng;
  p.model->forward(p.src, p.tgt, &p.taps);
  return p;
}

TEST(LogitBound, EveryLogitRowWithinSigmaBar) {
  for (bool sigma : {false, true}) {
    auto p = forward(sigma, 2.0);
    const auto& v = p.taps.values();
    const int64_t H = p.model->config().n_heads, dh = p.model->config().d_model / H;
    for (int64_t l = 0; l < 2; ++l)
      for (bool cross : {false, true}) {
        const std::string pre = "decoder.layers." + std::to_string(l) + (cross ? ".encoder_attn." : ".self_attn.");
        auto attn = cross ? p.model->decoder->layers[l]->encoder_attn : p.model->decoder->layers[l]->self_attn;
        auto xq = v.at(pre + "queries_in"), xk = cross ? v.at(pre + "keys_in") : xq;
        auto kmask = cross ? p.src_mask : p.tgt_mask;
        auto q = torch::matmul(xq, augmented(*attn->q_proj).narrow(1, 0, xq.size(2)).t()) + attn->q_proj->bias;
        auto k = torch::matmul(xk, augmented(*attn->k_proj).narrow(1, 0, xk.size(2)).t()) + attn->k_proj->bias;
        auto split = [&](const torch::Tensor& t) { return t.view({t.size(0), t.size(1), H, dh}).transpose(1, 2); };
        auto logits = torch::matmul(split(q), split(k).transpose(-2, -1)) / std::sqrt(double(dh));  // [B, H, Tq, Tk]
        auto sig_h = probe::head_logit_norms(*attn, H);
        for (int64_t b = 0; b < 3; ++b) {
          auto qm = p.tgt_mask[b].to(torch::kBool), km = kmask[b].to(torch::kBool);
          auto ones = [](const torch::Tensor& x) {
            return torch::cat({x, torch::ones({x.size(0), 1}, x.options())}, 1);
          };
          const double sq = torch::linalg_svdvals(ones(xq[b].index({qm}))).max().item<double>();
          const double sk = torch::linalg_svdvals(ones(xk[b].index({km}))).max().item<double>();
          for (int64_t h = 0; h < H; ++h) {
            const double bar = sig_h[h].item<double>() * sq * sk;
            auto rows = logits[b][h].index({qm}).index({torch::indexing::Slice(), km});  // real queries × real keys
            const double worst = rows.norm(2, -1).max().item<double>();
            EXPECT_LE(worst, bar * (1 + 1e-9)) << pre << " b " << b << " h " << h;
            EXPECT_GT(worst, 1e-3 * bar) << "𝛔 is not loose by 1000× on this tiny layer";
          }
        }
      }
  }
}

TEST(LogitBound, LoggedBoundNeverExceedsMeasuredEntropy) {
  // Small W_Q, W_K: 𝛔 ≈ 0.1–1, where the bound is close to log n and any mistake shows; large: near 0.
  for (double s : {0.05, 0.3, 1.0, 4.0})
    for (bool sigma : {false, true}) {
      auto p = forward(sigma, s);
      auto ent = probe::norm_and_entropy(p.taps, p.model->config().d_model, p.src_mask, p.tgt_mask)["attn_entropy"];
      auto bnd = probe::logit_bound(*p.model, p.taps, p.src_mask, p.tgt_mask);
      ASSERT_TRUE(bnd.contains("attn_entropy_bound")) << bnd.dump();
      int checked = 0;
      double loosest = 0;
      for (auto& [stack, kinds] : ent.items())
        for (auto& [kind, f] : kinds.items())
          for (const char* field : {"mean", "min_head"}) {
            const auto& e = f[field];
            const auto& b = bnd["attn_entropy_bound"][stack][kind][field];
            ASSERT_EQ(e.size(), b.size()) << stack << "." << kind;
            for (size_t l = 0; l < e.size(); ++l, ++checked) {
              EXPECT_GE(e[l].get<double>() + 1e-9, b[l].get<double>())
                  << stack << "." << kind << "." << field << "[" << l << "]";
              loosest = std::max(loosest, e[l].get<double>() - b[l].get<double>());
            }
          }
      EXPECT_EQ(checked, 2 * (3 + 2 + 2));  // encoder self 3, decoder self 2, cross 2; mean and min_head
      // At tiny 𝛔 every row's entropy and bound are both ≈ log n: a bound too low anywhere (wrong
      // key counts, wrong 𝛔) shows as a gap here, in every stack, attention kind and layer.
      if (s == 0.05) {
        EXPECT_LT(loosest, 0.05) << "sigma_reparam " << sigma;
      }
      EXPECT_EQ(bnd["attn_sigma_kq"]["decoder"]["encoder_attn"]["max_head"].size(), 2u);
    }
}

TEST(LogitBound, DivergedModelGivesNaNNotAnError) {
  auto p = forward(false, 1.0);
  {
    torch::NoGradGuard ng;
    p.model->decoder->layers[0]->self_attn->q_proj->weight.fill_(INFINITY);
    p.taps.clear();
    p.model->forward(p.src, p.tgt, &p.taps);  // non-finite inputs downstream too
  }
  nlohmann::json b;
  ASSERT_NO_THROW(b = probe::logit_bound(*p.model, p.taps, p.src_mask, p.tgt_mask));
  EXPECT_TRUE(std::isnan(b["attn_sigma_kq"]["decoder"]["self_attn"]["max_head"][0].get<double>()));
}

TEST(LogitBound, SingleKeyRowsBoundZero) {
  auto b = probe::entropy_lower_bound(torch::tensor({0.0, 0.5, 3.0}, kF64), torch::tensor({1.0, 1.0, 1.0}, kF64));
  EXPECT_EQ(b.abs().max().item<double>(), 0.0);
  for (int64_t n : {2, 5, 40})
    for (double s : {0.0, 0.7, 6.0})
      EXPECT_NEAR(probe::entropy_lower_bound(torch::tensor({s}, kF64), torch::tensor({double(n)}, kF64)).item<double>(),
                  probe::entropy_lower_bound(s, n), 1e-14);
}

}  // namespace
}  // namespace stx
