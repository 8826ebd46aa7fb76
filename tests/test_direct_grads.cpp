// Weight gradients straight into .grad() (kernels/direct_grads.h): the same gradients as through
// autograd's AccumulateGrad nodes, added to what .grad() held; the nodes really gone; the
// fallbacks where a parameter cannot take its gradient that way; the trainer's step unchanged.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "helpers.h"
#include "stx/kernels/direct_grads.h"
#include "stx/kernels/kernels.h"
#include "stx/train/optimizer.h"
#include "stx/train/train_step.h"

namespace stx {
namespace {

// AccumulateGrad nodes reachable from `loss` (one per parameter that autograd reaches itself).
size_t accumulate_nodes(const torch::Tensor& loss) {
  std::unordered_set<torch::autograd::Node*> seen;
  std::vector<torch::autograd::Node*> todo{loss.grad_fn().get()};
  size_t n = 0;
  while (!todo.empty()) {
    auto* node = todo.back();
    todo.pop_back();
    if (!node || !seen.insert(node).second) continue;
    if (node->name().find("AccumulateGrad") != std::string::npos) ++n;
    for (const auto& e : node->next_edges()) todo.push_back(e.function.get());
  }
  return n;
}

void seed_cpu(uint64_t s) {
  auto gen = at::globalContext().defaultGenerator(at::kCPU);
  gen.set_current_seed(s);
}

struct Pass {
  std::vector<torch::Tensor> grads;
  size_t nodes = 0;
};

// One forward/backward of `model` from the same generator state and buffers (σReparam's u, v
// move with each training forward), .grad() starting at `start`.
Pass run(Transformer& model, const torch::Tensor& tgt, const std::vector<torch::Tensor>& start, bool direct,
         const torch::Tensor& src = {}) {
  static std::unordered_map<const void*, std::vector<torch::Tensor>> buffers;
  auto& saved = buffers[model.get()];
  {
    torch::NoGradGuard no_grad;
    auto bs = model->buffers();
    if (saved.empty())
      for (auto& b : bs) saved.push_back(b.clone());
    for (size_t i = 0; i < bs.size(); ++i) bs[i].copy_(saved[i]);
  }
  seed_cpu(5);
  auto ps = model->parameters();
  for (size_t i = 0; i < ps.size(); ++i) ps[i].mutable_grad() = start[i].defined() ? start[i].clone() : torch::Tensor();
  DirectGradsScope scope(direct);
  auto y = model->forward(src, tgt);
  auto loss = (y * y).mean();
  Pass r;
  r.nodes = accumulate_nodes(loss);
  loss.backward();
  for (auto& p : model->parameters()) r.grads.push_back(p.grad().clone());
  return r;
}

// modifier: 0 none, 1 QK-LayerNorm, 2 attention soft-capping (c = 0.5).
Transformer tiny_model(Scheme scheme, NormKind norm, bool sigma, torch::Dtype dt, int modifier = 0) {
  auto m = test::tiny(Arch::Decoder, scheme, norm, sigma);
  m.qk_norm = modifier == 1, m.attn_softcap = modifier == 2 ? 0.5 : 0.0;
  m.d_model = 16, m.n_heads = 2, m.d_ff = 24, m.decoder_layers = 3, m.dropout = 0.1, m.attention_dropout = 0.1;
  Transformer model(m);
  initialize(*model, 3);
  model->to(dt);
  model->train();
  return model;
}

std::vector<torch::Tensor> random_grads(Transformer& model, bool zero = false) {
  std::vector<torch::Tensor> g;
  for (auto& p : model->parameters()) g.push_back(zero ? torch::zeros_like(p) : torch::randn_like(p));
  return g;
}

// The gradients of two passes: bit-equal, except the token embedding's when .grad() held
// something before (`accumulated`): autograd adds the tied projection's and the lookup's sum to
// it at once, g + (dE_tied + dE_emb), the direct path one after the other, (g + dE_tied) + dE_emb.
void expect_same(const Pass& on, const Pass& off, Transformer& model, bool accumulated, double tol) {
  const auto names = model->named_parameters().keys();
  for (size_t i = 0; i < off.grads.size(); ++i) {
    if (accumulated && names[i].find("embed_tokens") != std::string::npos)
      test::expect_close(on.grads[i], off.grads[i], tol, names[i]);
    else EXPECT_TRUE(torch::equal(on.grads[i], off.grads[i])) << names[i];
  }
}

// Every fused sub-layer of an eligible model writes its 10 + 6 parameters' gradients itself, the
// token embedding and the tied projection theirs: the sums equal autograd's to the last bit on
// one thread (β = 1 adds the product to .grad() as AccumulateGrad's add_ does), from a zeroed
// .grad() (the optimizer's zero_grad) and from one holding gradients already (the embedding
// then within rounding, expect_same); on two threads (BLAS) within the fused path's tolerance.
TEST(DirectGrads, EqualAutogradsAccumulation) {
  const int threads = at::get_num_threads();
  for (int t : {1, 2}) {
    at::set_num_threads(t);
    for (bool zero : {true, false})
      for (auto dt : {torch::kDouble, torch::kFloat})
        for (auto [scheme, norm, mod] : {std::tuple{Scheme::Post, NormKind::LayerNorm, 0},
                                         {Scheme::Pre, NormKind::RMSNorm, 0},
                                         {Scheme::DeepNorm, NormKind::LayerNorm, 0},
                                         {Scheme::ReZero, NormKind::None, 0},
                                         {Scheme::LayerScale, NormKind::LayerNorm, 0},
                                         {Scheme::PeriLN, NormKind::RMSNorm, 0},
                                         {Scheme::Admin, NormKind::LayerNorm, 0},
                                         {Scheme::SubLN, NormKind::LayerNorm, 0},
                                         {Scheme::NormFormer, NormKind::LayerNorm, 0},
                                         {Scheme::PeriLN, NormKind::DyT, 0},
                                         {Scheme::Pre, NormKind::LayerNorm, 1},
                                         {Scheme::Post, NormKind::LayerNorm, 2}}) {
          SCOPED_TRACE(to_string(scheme) + "/" + to_string(norm) +
                       (mod == 1   ? "/qk-norm"
                        : mod == 2 ? "/softcap"
                                   : "") +
                       (dt == torch::kDouble ? " float64" : " float32") + " threads " + std::to_string(t) +
                       (zero ? " from zero" : " accumulating"));
          auto model = tiny_model(scheme, norm, false, dt, mod);
          const auto tgt = test::tokens(3, 7, 11, 2);
          const auto start = random_grads(model, zero);
          const Pass off = run(model, tgt, start, false), on = run(model, tgt, start, true);
          const auto names = model->named_parameters().keys();
          const auto per_layer = std::count_if(names.begin(), names.end(),
                                               [](const std::string& n) { return n.find("layers.0.") != n.npos; });
          EXPECT_GE(per_layer, 12);
          EXPECT_EQ(on.nodes, off.nodes - 3 * per_layer);
          const double tol = dt == torch::kDouble ? 1e-12 : 2e-5;
          if (t == 1) {
            expect_same(on, off, model, !zero, tol);
            continue;
          }
          for (size_t i = 0; i < off.grads.size(); ++i) test::expect_close(on.grads[i], off.grads[i], tol, names[i]);
        }
  }
  at::set_num_threads(threads);
}

// An encoder-decoder model: the decoder's cross-attention sub-layers (fused_cross_attention.cpp)
// write their 8 projections' (and QK-LayerNorm's) gradients too, and pass the encoder its memory's gradient.
TEST(DirectGrads, CrossAttentionEqualsAutograd) {
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  for (auto [scheme, zero, qk] :
       {std::tuple{Scheme::Post, true, false}, {Scheme::PeriLN, false, false}, {Scheme::Pre, true, true}}) {
    SCOPED_TRACE(to_string(scheme) + (zero ? " from zero" : " accumulating") + (qk ? " QK-LayerNorm" : ""));
    auto m = test::tiny(Arch::EncoderDecoder, scheme, NormKind::LayerNorm);
    m.d_model = 16, m.n_heads = 2, m.d_ff = 24, m.decoder_layers = 2, m.dropout = 0.1, m.attention_dropout = 0.1;
    m.qk_norm = qk;
    Transformer model(m);
    initialize(*model, 3);
    model->train();
    const auto tgt = test::tokens(3, 7, 11, 2), src = test::tokens(3, 5, 11, 1);
    const auto start = random_grads(model, zero);
    const Pass off = run(model, tgt, start, false, src), on = run(model, tgt, start, true, src);
    EXPECT_LT(on.nodes, off.nodes);
    expect_same(on, off, model, !zero, 1e-6);
  }
  at::set_num_threads(threads);
}

// Where a parameter cannot take its gradient directly, autograd keeps it: σReparam's W/σ (not a
// leaf), a frozen parameter. Where it has no .grad() yet (a run's first step) one is made, zero,
// and the node writes into it: the same path as every later step (exact resume).
TEST(DirectGrads, FallsBackWhereAParameterCannotTakeIt) {
  const auto tgt = test::tokens(3, 7, 11, 2);
  {
    auto model = tiny_model(Scheme::Pre, NormKind::LayerNorm, true, torch::kDouble);
    const auto start = random_grads(model);
    const Pass off = run(model, tgt, start, false), on = run(model, tgt, start, true);
    EXPECT_EQ(on.nodes, off.nodes) << "σReparam";
    expect_same(on, off, model, true, 1e-12);
  }
  auto model = tiny_model(Scheme::Post, NormKind::LayerNorm, false, torch::kDouble);
  const std::vector<torch::Tensor> none(model->parameters().size());
  const Pass off = run(model, tgt, none, false), first = run(model, tgt, none, true);
  EXPECT_EQ(first.nodes, off.nodes - 3 * 16) << "no .grad() yet: made, and written directly";
  for (size_t i = 0; i < off.grads.size(); ++i) EXPECT_TRUE(torch::equal(first.grads[i], off.grads[i]));
  auto start = random_grads(model);
  const auto keys = model->named_parameters().keys();
  const auto it = std::find_if(keys.begin(), keys.end(), [](const std::string& k) {
    return k.find("layers.1.") != std::string::npos && k.find("fc1.weight") != std::string::npos;
  });
  ASSERT_NE(it, keys.end());
  const auto i_frozen = static_cast<size_t>(it - keys.begin());
  model->parameters()[i_frozen].set_requires_grad(false);
  const Pass off2 = run(model, tgt, start, false), on2 = run(model, tgt, start, true);
  EXPECT_EQ(on2.nodes, off2.nodes - 2 * 16 - 10) << "layer 1's FFN keeps its nodes";
  expect_same(on2, off2, model, true, 1e-12);
  EXPECT_TRUE(torch::equal(on2.grads[i_frozen], start[i_frozen])) << "a frozen parameter's .grad() is left alone";
}

// The trainer's step (TrainStep with the optimizer's flat gradient buffer) gives the same
// parameters after three updates with the direct gradients on and off.
TEST(DirectGrads, TrainStepUnchanged) {
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  Config cfg;
  cfg.model = test::tiny(Arch::Decoder, Scheme::Post);
  cfg.model.d_model = 16, cfg.model.d_ff = 32, cfg.model.dropout = 0.1;
  cfg.train.optimizer = OptimizerKind::Adam;
  std::vector<std::vector<torch::Tensor>> after;
  std::vector<size_t> nodes;
  for (bool direct : {false, true}) {
    Transformer model(cfg.model);
    initialize(*model, 1);
    NamedTensors params;
    for (auto& p : model->named_parameters(true)) params.emplace_back(p.key(), p.value());
    Optimizer opt(params, cfg.train);
    TrainStep step(*model, opt, cfg, torch::kCPU);
    step.set_direct_grads(direct);
    Batch b;
    b.tgt_in = test::tokens(4, 9, cfg.model.vocab_size, 4);
    b.tgt_out = test::tokens(4, 9, cfg.model.vocab_size, 5);
    seed_cpu(11);
    for (int i = 0; i < 3; ++i) {
      step.begin();
      auto ls = step.forward(b);
      if (i == 2) nodes.push_back(accumulate_nodes(ls.loss));
      (ls.loss / static_cast<double>(ls.tokens)).backward();
      step.apply(step.grad_norm(), 1e-3);
    }
    after.emplace_back();
    for (auto& p : model->parameters()) after.back().push_back(p.detach().clone());
  }
  EXPECT_EQ(nodes[1], nodes[0] - 2 * 16) << "the third step's fused sub-layers wrote their own gradients";
  for (size_t i = 0; i < after[0].size(); ++i) EXPECT_TRUE(torch::equal(after[1][i], after[0][i])) << i;
  at::set_num_threads(threads);
}

}  // namespace
}  // namespace stx
