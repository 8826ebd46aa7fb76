// Activation checkpointing (stx/model/recompute.h): a training step with per-layer
// recomputation gives exactly the plain step's loss, parameter gradients, σReparam buffers and
// random-number stream, for every scheme, with dropout, decoder-only and encoder-decoder.
// One exception, by construction: the encoder output feeds every decoder layer's cross-
// attention (k and v), and with checkpointing each layer sums its two contributions before they
// join the others — the same 2·M float32 terms added in another order, so the encoder's
// gradients may differ by rounding: the memory gradient by ~2M·ε_f32 of its size, which the
// encoder's backward carries into every encoder parameter; so the bound is 2M·ε_f32 times the
// largest encoder gradient (a cancelling, near-zero gradient such as a key bias's has no
// smaller error than its neighbours').
#include <gtest/gtest.h>

#include <limits>

#include "stx/model/init.h"
#include "stx/model/transformer.h"

namespace stx {
namespace {

struct StepResult {
  double loss;
  std::map<std::string, torch::Tensor> grads, buffers;
  double next_random;
};

StepResult step(const ModelConfig& cfg, bool checkpoint) {
  Transformer m(cfg);
  initialize(*m, 3);
  m->train();
  m->set_checkpoint_activations(checkpoint);
  auto g = at::detail::createCPUGenerator(17);
  auto src = torch::randint(4, cfg.vocab_size, {3, 6}, g, torch::kInt64);
  auto tgt = torch::randint(4, cfg.vocab_size, {3, 5}, g, torch::kInt64);
  src[2][5] = cfg.pad_id, tgt[1][4] = cfg.pad_id;  // padding on both sides
  torch::manual_seed(99);                          // the dropout stream
  auto logits = m->forward(cfg.arch == Arch::Decoder ? torch::Tensor() : src, tgt);
  auto loss = torch::nn::functional::cross_entropy(logits.reshape({-1, cfg.vocab_size}), tgt.reshape({-1}));
  loss.backward();
  StepResult r{loss.item<double>(), {}, {}, torch::rand({1}).item<double>()};
  for (auto& p : m->named_parameters()) r.grads[p.key()] = p.value().grad().clone();
  for (auto& b : m->named_buffers()) r.buffers[b.key()] = b.value().clone();
  return r;
}

TEST(Checkpointing, SameLossGradientsAndRandomStream) {
  for (Arch arch : {Arch::Decoder, Arch::EncoderDecoder})
    for (Scheme scheme : {Scheme::Post, Scheme::Pre, Scheme::DeepNorm, Scheme::PostInit})
      for (bool sigma : {false, true}) {
        ModelConfig cfg;
        cfg.arch = arch, cfg.scheme = scheme, cfg.sigma_reparam = sigma;
        cfg.vocab_size = 24, cfg.d_model = 16, cfg.n_heads = 2, cfg.d_ff = 32;
        cfg.encoder_layers = 2, cfg.decoder_layers = 3;
        cfg.dropout = 0.1, cfg.attention_dropout = 0.1, cfg.max_len = 16, cfg.pad_id = 0;
        SCOPED_TRACE(to_string(arch) + " " + to_string(scheme) + (sigma ? " σReparam" : ""));
        const auto plain = step(cfg, false), ckpt = step(cfg, true);
        EXPECT_EQ(plain.loss, ckpt.loss);
        EXPECT_EQ(plain.next_random, ckpt.next_random);
        ASSERT_EQ(plain.grads.size(), ckpt.grads.size());
        double encoder_scale = 0;
        for (auto& [name, grad] : plain.grads)
          if (name.rfind("encoder.", 0) == 0) encoder_scale = std::max(encoder_scale, grad.abs().max().item<double>());
        for (auto& [name, grad] : plain.grads) {
          ASSERT_TRUE(ckpt.grads.at(name).defined()) << name;
          const bool upstream_of_memory = arch == Arch::EncoderDecoder && name.rfind("encoder.", 0) == 0;
          if (!upstream_of_memory) {
            EXPECT_TRUE(torch::equal(grad, ckpt.grads.at(name))) << name;
          } else {
            const double eps = std::numeric_limits<float>::epsilon();
            EXPECT_LE((grad - ckpt.grads.at(name)).abs().max().item<double>(),
                      2 * cfg.decoder_layers * eps * encoder_scale)
                << name;
          }
        }
        for (auto& [name, buf] : plain.buffers) EXPECT_TRUE(torch::equal(buf, ckpt.buffers.at(name))) << name;
      }
}

TEST(Checkpointing, OffInEvalAndWithoutGradients) {
  ModelConfig cfg;
  cfg.arch = Arch::Decoder, cfg.vocab_size = 24, cfg.d_model = 16, cfg.n_heads = 2, cfg.d_ff = 32;
  cfg.decoder_layers = 2, cfg.dropout = 0, cfg.pad_id = 0;
  Transformer m(cfg);
  initialize(*m, 3);
  m->set_checkpoint_activations(true);
  auto tgt = torch::randint(4, 24, {2, 5}, torch::kInt64);
  m->eval();
  auto a = m->forward({}, tgt);
  {
    torch::NoGradGuard ng;
    m->train();
    auto b = m->forward({}, tgt);
    EXPECT_TRUE(torch::equal(a.detach(), b));
  }
}

}  // namespace
}  // namespace stx
