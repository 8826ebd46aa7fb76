// The capability gate of the fused path (kernels/fused_features.h, model/layer.cpp): every value
// of every model key, and every variant the scheme table names, either runs fused — and then
// equals the composed path, logits and every gradient, in float64 with dropout on — or runs
// composed, with no fused node in its graph. A model key this walk does not know fails it, and a
// fused kernel handed a feature it does not declare refuses it.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>
#include <unordered_set>

#include "helpers.h"
#include "stx/config/config_io.h"
#include "stx/config/schemes.h"
#include "stx/kernels/fused_sublayer.h"
#include "stx/model/layer.h"

namespace stx {
namespace {

// The numbers among the model keys, each with the values the walk tries (the first is the base's).
// Sizes and init-only numbers take one value: they change no feature a sub-layer asks.
const std::map<std::string, std::vector<std::string>> kNumbers{{"model.vocab_size", {"11"}},
                                                               {"model.d_model", {"16"}},
                                                               {"model.n_heads", {"2"}},
                                                               {"model.d_ff", {"24"}},
                                                               {"model.encoder_layers", {"2"}},
                                                               {"model.decoder_layers", {"3"}},
                                                               {"model.norm_eps", {"1e-5", "1e-3"}},
                                                               {"model.dyt_alpha", {"0.5"}},
                                                               {"model.layerscale_init", {"0", "0.3"}},
                                                               {"model.mix_ln_ratio", {"0.25", "0.7"}},
                                                               {"model.residual_scale", {"1", "0.5"}},
                                                               {"model.ds_init_exponent", {"0.5"}},
                                                               {"model.attn_softcap", {"0", "0.5"}},
                                                               {"model.logit_softcap", {"0", "30"}},
                                                               {"model.dropout", {"0.1", "0"}},
                                                               {"model.attention_dropout", {"0.1", "0"}},
                                                               {"model.max_len", {"16"}},
                                                               {"model.pad_id", {"0", "-1"}}};

ModelConfig base() {
  Config c;
  c.model = test::tiny(Arch::Decoder, Scheme::Pre);
  for (auto& [key, values] : kNumbers) apply_override(c, key + "=" + values.front());
  return c.model;
}

void seed_cpu(uint64_t s) {
  auto gen = at::globalContext().defaultGenerator(at::kCPU);
  gen.set_current_seed(s);
}

// The fused nodes (kernels/fused_node.h) anywhere in y's graph.
int fused_nodes(const torch::Tensor& y) {
  int n = 0;
  std::vector<torch::autograd::Node*> todo{y.grad_fn().get()};
  std::unordered_set<torch::autograd::Node*> seen;
  while (!todo.empty()) {
    auto* node = todo.back();
    todo.pop_back();
    if (!node || !seen.insert(node).second) continue;
    if (node->name().rfind("stx::", 0) == 0 && node->name().find("Sublayer") != std::string::npos) ++n;
    for (auto& e : node->next_edges()) todo.push_back(e.function.get());
  }
  return n;
}

struct Run {
  torch::Tensor logits;
  std::vector<torch::Tensor> grads;
  int fused = 0;
};

// One variant: the gate's path against the composed one. Returns the gate's choice.
LayerPath check_variant(const ModelConfig& m, const std::string& what) {
  SCOPED_TRACE(what);
  Transformer model(m);
  initialize(*model, 3);
  {  // gains, skip weights and norms away from their initial 0 and 1 (ReZero's small: no norm)
    torch::NoGradGuard no_grad;
    const double gain = m.scheme == Scheme::ReZero ? 0.1 : 1.0;
    for (auto& np : model->named_parameters())
      if (np.value().dim() == 1 && np.key().find("embed") == std::string::npos)
        np.value().copy_(gain * (0.5 + torch::rand_like(np.value())));
  }
  model->to(torch::kDouble);
  model->train();
  const auto choice = model->layer_path(model->parameters().front());
  std::vector<torch::Tensor> buffers;  // σReparam's u, v: each training forward iterates them
  for (auto& b : model->buffers()) buffers.push_back(b.clone());
  auto tgt = test::tokens(3, 7, m.vocab_size, 2), src = test::tokens(3, 5, m.vocab_size, 1);
  auto run = [&](LayerPath p) {
    model->set_layer_path(p);
    {
      torch::NoGradGuard no_grad;
      auto bs = model->buffers();
      for (size_t i = 0; i < bs.size(); ++i) bs[i].copy_(buffers[i]);
    }
    seed_cpu(5);
    model->zero_grad();
    Run r;
    const bool enc = m.arch == Arch::Encoder;
    auto y = model->forward(enc || m.arch == Arch::EncoderDecoder ? src : torch::Tensor(), enc ? torch::Tensor() : tgt);
    (y * y).mean().backward();
    r.logits = y.detach(), r.fused = fused_nodes(y);
    for (auto& q : model->parameters()) r.grads.push_back(q.grad().defined() ? q.grad().clone() : q.grad());
    return r;
  };
  const auto gate = run(LayerPath::Fused), composed = run(LayerPath::Composed);
  EXPECT_EQ(composed.fused, 0) << "asked to run composed";
  if (choice.path == LayerPath::Composed) {
    EXPECT_EQ(gate.fused, 0) << "the gate chose composed (" << choice.why << ") but a fused node ran";
    return choice.path;
  }
  EXPECT_GT(gate.fused, 0) << "the gate chose fused but no fused node ran";
  test::expect_close(gate.logits, composed.logits, 1e-12, "logits");
  const auto names = model->named_parameters().keys();
  for (size_t i = 0; i < gate.grads.size(); ++i) {
    EXPECT_EQ(gate.grads[i].defined(), composed.grads[i].defined()) << names[i];
    if (gate.grads[i].defined() && composed.grads[i].defined())
      test::expect_close(gate.grads[i], composed.grads[i], 1e-12, "grad " + names[i]);
  }
  return choice.path;
}

TEST(FusedGate, EveryValueOfEveryModelKey) {
  int fused = 0, composed = 0, refused = 0;
  for (const auto& key : config_keys()) {
    if (key.rfind("model.", 0) != 0) continue;
    std::vector<std::string> values;
    if (auto n = kNumbers.find(key); n != kNumbers.end()) {
      values = n->second;
    } else {
      const auto allowed = config_key_allowed(key);
      ASSERT_NE(allowed.find(" | "), std::string::npos) << key << " is a model key this walk does not know (" << allowed
                                                        << "): add its values to kNumbers (tests/test_fused_gate.cpp)";
      for (size_t at = 0; at <= allowed.size();) {
        const auto bar = allowed.find(" | ", at);
        values.push_back(allowed.substr(at, bar == std::string::npos ? std::string::npos : bar - at));
        at = bar == std::string::npos ? allowed.size() + 1 : bar + 3;
      }
    }
    for (const auto& v : values) {
      Config c;
      c.model = base();
      apply_override(c, key + "=" + v);
      if (!test::error_of([&] { validate(c); }).empty()) {
        ++refused;  // a combination the config itself refuses (e.g. ReZero's norm)
        continue;
      }
      (check_variant(c.model, key + "=" + v) == LayerPath::Fused ? fused : composed)++;
    }
  }
  // Every value of today's keys is implemented by the fused kernels; the walk must see them run.
  EXPECT_GT(fused, 40);
  RecordProperty("fused", fused), RecordProperty("composed", composed), RecordProperty("refused", refused);
}

TEST(FusedGate, EveryVariantOfTheSchemeTable) {
  for (const auto& row : scheme_table())
    for (auto arch : {Arch::Decoder, Arch::EncoderDecoder}) {
      auto m = base();
      m.arch = arch;
      row.apply(m);
      Config c;
      c.model = m;
      if (!test::error_of([&] { validate(c); }).empty()) continue;
      check_variant(m, row.name + " " + to_string(arch));
    }
}

// Whatever a run needs that the kernels lack sends the layer composed, and says so.
TEST(FusedGate, ComposedWhereTheRunNeedsIt) {
  auto m = base();
  Layer layer(m, /*causal=*/true, /*cross=*/false, 1.0, 0, 2);
  auto x = torch::randn({2, 5, 16});
  if (fused_ffn_implements().empty()) GTEST_SKIP() << "built without BLAS";
  EXPECT_EQ(layer->path_choice(x).path, LayerPath::Fused);
  Taps taps({"input"});
  const auto tapped = layer->path_choice(x, TapSite{&taps, "0."});
  EXPECT_EQ(tapped.path, LayerPath::Composed);
  EXPECT_NE(tapped.why.find("taps"), std::string::npos) << tapped.why;
  const auto half = layer->path_choice(x.to(torch::kHalf));
  EXPECT_EQ(half.path, LayerPath::Composed);
  EXPECT_NE(half.why.find("float32/float64"), std::string::npos) << half.why;
}

// A fused kernel refuses a feature it does not declare, naming it.
TEST(FusedGate, AKernelRefusesAFeatureItDoesNotDeclare) {
  if (fused_ffn_implements().empty()) GTEST_SKIP() << "built without BLAS";
  const auto o = torch::TensorOptions().dtype(torch::kDouble);
  auto x = torch::randn({2, 3, 8}, o), w1 = torch::randn({16, 8}, o), w2 = torch::randn({8, 16}, o);
  FusedJoin j;
  const JoinWeights jw{torch::ones({8}, o), torch::zeros({8}, o), {}, {}, {}, {}, {}, {}, {}};
  const Features ok{Feature::PostJoin, Feature::LayerNorm, Feature::ReLU, Feature::CPU, Feature::Float64};
  const FFNBranch g{false, w1, {}, w2, {}, {}};
  EXPECT_NO_THROW(fused_ffn_sublayer(ok, x, j, jw, g));
  for (auto f : {Feature::Taps, Feature::OtherActivation, Feature::Causal, Feature::OtherDevice}) {
    auto asked = ok;
    asked.add(f);
    try {
      fused_ffn_sublayer(asked, x, j, jw, g);
      ADD_FAILURE() << "the fused FFN accepted " << feature_name(f);
    } catch (const c10::Error& e) {
      EXPECT_NE(std::string(e.what()).find(feature_name(f)), std::string::npos) << e.what();
    }
  }
  for (auto f : {Feature::Softcap, Feature::HeadScales})
    EXPECT_FALSE(Features{f}.within(fused_ffn_implements())) << feature_name(f);
}

// A feature asked by name (a component's option no kernel implements yet) is outside every
// kernel's set: the layer runs composed, the message names it, a kernel refuses it.
TEST(FusedGate, ANamedFeatureIsOutsideEveryKernel) {
  Features f{Feature::CPU};
  f.add_named("rope").add_named("rope").add_named("gated-attention", false);
  EXPECT_FALSE(f.empty());
  EXPECT_FALSE(f.within(Features{Feature::CPU}));
  EXPECT_EQ(f.outside(Features{Feature::CPU}), "rope");
  const auto both = Features{Feature::Taps} | f;
  EXPECT_EQ(both.outside(Features{Feature::CPU}), "taps, rope");
  EXPECT_TRUE(Features{Feature::CPU}.within(Features{Feature::CPU}));
  try {
    check_implements("the test kernel", f, Features{Feature::CPU});
    ADD_FAILURE() << "a named feature was accepted";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("rope"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace stx
