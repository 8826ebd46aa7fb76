// Finite-difference gradient check in double precision for every scheme × architecture (and
// σReparam, RMSNorm, no norm): autograd's ∂f/∂θ against (f(θ+h) − f(θ−h)) / 2h for sampled
// entries of every parameter tensor, f = Σ logits ⊙ R with a fixed random R.
#include <gtest/gtest.h>

#include <functional>

#include "helpers.h"

namespace stx {
namespace {

struct Case {
  Arch arch;
  Scheme scheme;
  NormKind norm;
  bool sigma;
  std::function<void(ModelConfig&)> tweak = {};  // modifiers
  std::string what = "";
};

std::string label(const Case& c) {
  return to_string(c.arch) + "/" + to_string(c.scheme) + "/" + to_string(c.norm) + (c.sigma ? "/sigma" : "") +
         (c.what.empty() ? "" : "/" + c.what);
}

// Moves the parameters init sets to constants (ReZero's α = 0, LayerScale's λ = ε, DyT's α,
// norm weights) off them, so the check also covers how they enter: with α = 0 every gradient
// into a ReZero branch would be exactly zero.
void perturb_scalars(TransformerImpl& model) {
  torch::NoGradGuard ng;
  auto g = at::detail::createCPUGenerator(11);
  for (auto& p : model.named_parameters())
    if (p.value().dim() == 1 && p.key().find("bias") == std::string::npos)
      p.value().add_(torch::randn(p.value().sizes(), g, torch::kFloat64) * 0.3);
}

void gradcheck(const Case& c) {
  auto m = test::tiny(c.arch, c.scheme, c.norm, c.sigma);
  if (c.tweak) c.tweak(m);
  Transformer model(m);
  initialize(*model, 7);
  model->to(torch::kFloat64);
  perturb_scalars(*model);
  if (c.sigma) {  // one training forward moves u, v off the exact SVD; then check in eval mode
    model->train();
    torch::NoGradGuard ng;
    model->forward(test::tokens(2, 5, m.vocab_size, 1), test::tokens(2, 4, m.vocab_size, 2));
  }
  model->eval();
  auto src = m.has_encoder() ? test::tokens(2, 5, m.vocab_size, 1) : torch::Tensor();
  auto tgt = m.has_decoder() ? test::tokens(2, 4, m.vocab_size, 2) : torch::Tensor();
  const int64_t T = m.has_decoder() ? 4 : 5;
  auto R = torch::randn({2, T, m.vocab_size}, torch::kFloat64);
  auto f = [&] { return (model->forward(src, tgt) * R).sum(); };
  model->zero_grad();
  f().backward();
  const double h = 1e-6;
  int checked = 0;
  for (auto& p : model->named_parameters()) {
    auto w = p.value();
    auto flat = w.view({-1});
    auto grad = w.grad().view({-1});
    const int64_t n = flat.numel();
    for (int64_t k : {int64_t{0}, n / 2, n - 1}) {
      torch::NoGradGuard ng;
      const double orig = flat[k].item<double>();
      flat[k] = orig + h;
      const double fp = f().item<double>();
      flat[k] = orig - h;
      const double fm = f().item<double>();
      flat[k] = orig;
      const double fd = (fp - fm) / (2 * h), ad = grad[k].item<double>();
      // Central differences: truncation O(h²) plus rounding O(ε·|f|/h) ≈ 1e-10 here.
      EXPECT_NEAR(ad, fd, 1e-6 + 1e-5 * std::abs(fd)) << label(c) << " " << p.key() << "[" << k << "]";
      ++checked;
    }
  }
  EXPECT_GT(checked, 30) << label(c);
}

TEST(GradCheck, EverySchemeAndArchitecture) {
  for (auto arch : {Arch::Encoder, Arch::Decoder, Arch::EncoderDecoder})
    for (auto scheme : {Scheme::Post, Scheme::Pre, Scheme::DeepNorm, Scheme::PostInit})
      gradcheck({arch, scheme, NormKind::LayerNorm, false});
}

TEST(GradCheck, SigmaReparamEveryScheme) {
  for (auto arch : {Arch::Encoder, Arch::Decoder, Arch::EncoderDecoder})
    for (auto scheme : {Scheme::Post, Scheme::Pre, Scheme::DeepNorm, Scheme::PostInit})
      gradcheck({arch, scheme, NormKind::LayerNorm, true});
}

TEST(GradCheck, RMSNormAndNoNorm) {
  for (auto arch : {Arch::Encoder, Arch::Decoder, Arch::EncoderDecoder}) {
    gradcheck({arch, Scheme::Pre, NormKind::RMSNorm, false});
    gradcheck({arch, Scheme::DeepNorm, NormKind::RMSNorm, false});
    gradcheck({arch, Scheme::Post, NormKind::None, true});
  }
}

TEST(GradCheck, Stabilizers) {
  auto mix = [](ModelConfig& m) { m.mix_ln_ratio = 0.5; };
  auto scaled = [](ModelConfig& m) { m.residual_scale = 1.5; };
  for (auto arch : {Arch::Encoder, Arch::Decoder, Arch::EncoderDecoder}) {
    gradcheck({arch, Scheme::ReZero, NormKind::None, false});
    gradcheck({arch, Scheme::LayerScale, NormKind::LayerNorm, false});
    gradcheck({arch, Scheme::PeriLN, NormKind::LayerNorm, false});
    gradcheck({arch, Scheme::MixLN, NormKind::LayerNorm, false, mix, "p=0.5"});
    gradcheck({arch, Scheme::LNScaling, NormKind::RMSNorm, false});
    gradcheck({arch, Scheme::DepthScaled, NormKind::LayerNorm, false, scaled, "a=1.5"});
    gradcheck({arch, Scheme::Pre, NormKind::DyT, false});
    gradcheck({arch, Scheme::TFixup, NormKind::None, false});
    gradcheck({arch, Scheme::DSInit, NormKind::LayerNorm, false});
    gradcheck({arch, Scheme::Admin, NormKind::LayerNorm, false});
    gradcheck({arch, Scheme::NormFormer, NormKind::LayerNorm, false});
    gradcheck({arch, Scheme::SubLN, NormKind::RMSNorm, false});
  }
}

TEST(GradCheck, AttentionAndLogitModifiers) {
  auto qk = [](ModelConfig& m) { m.qk_norm = true; };
  auto cap = [](ModelConfig& m) {
    m.attn_softcap = 0.3;
    m.logit_softcap = 2.0;
  };
  for (auto arch : {Arch::Encoder, Arch::Decoder, Arch::EncoderDecoder}) {
    gradcheck({arch, Scheme::Post, NormKind::LayerNorm, false, qk, "qk_norm"});
    gradcheck({arch, Scheme::Pre, NormKind::LayerNorm, false, cap, "softcap"});
  }
}

}  // namespace
}  // namespace stx
