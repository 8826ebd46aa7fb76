// Decoding (stx/eval/decode.h) on tiny random models, against references written here with the
// plain full forward: greedy == a step-by-step argmax loop == beam search with one beam; beam
// search with a beam wider than the whole search space == exhaustive search of the
// length-normalized score; beam ≥ greedy; batching, padding and length limits; sampling.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>

#include "helpers.h"
#include "stx/core/error.h"
#include "stx/eval/decode.h"
#include "stx/model/init.h"

namespace stx {
namespace {

constexpr int32_t kPad = 0, kBos = 2, kEos = 3;
constexpr double kInf = std::numeric_limits<double>::infinity();
using Ids = std::vector<int32_t>;

// The shared tiny model (helpers.h), a little wider, with 20 ids.
ModelConfig tiny(Arch arch, Scheme scheme = Scheme::Post, bool tie = true) {
  auto m = test::tiny(arch, scheme);
  m.vocab_size = 20, m.d_model = 16, m.d_ff = 32, m.encoder_layers = 2, m.tie_embeddings = tie, m.pad_id = kPad;
  return m;
}

Transformer make(const ModelConfig& m, uint64_t seed) {
  Transformer t(m);
  initialize(*t, seed);
  t->eval();
  return t;
}

// Random sources: ids in [4, 20) of lengths 2..9, each ending with eos.
std::vector<Ids> sources(int n, uint64_t seed) {
  auto g = at::detail::createCPUGenerator(seed);
  std::vector<Ids> out;
  for (int i = 0; i < n; ++i) {
    const int64_t len = torch::randint(2, 10, {1}, g).item<int64_t>();
    auto t = torch::randint(4, 20, {len}, g, torch::kInt64);
    Ids s;
    for (int64_t j = 0; j < len; ++j) s.push_back(static_cast<int32_t>(t[j].item<int64_t>()));
    s.push_back(kEos);
    out.push_back(s);
  }
  return out;
}

torch::Tensor row(const Ids& ids, int32_t first = -1) {
  std::vector<int64_t> v;
  if (first >= 0) v.push_back(first);
  v.insert(v.end(), ids.begin(), ids.end());
  return torch::tensor(v, torch::kInt64).unsqueeze(0);
}

// Greedy decoding of one source with the full forward: argmax over all but pad/bos; eos is
// forced after `limit` tokens.
Ids ref_greedy(Transformer& m, const Ids& src, size_t limit) {
  torch::NoGradGuard ng;
  Ids out;
  while (out.size() < limit) {
    auto logits = m->forward(row(src), row(out, kBos))[0][-1].clone();
    logits[kPad] = -kInf;
    logits[kBos] = -kInf;
    const auto tok = static_cast<int32_t>(logits.argmax().item<int64_t>());
    if (tok == kEos) break;
    out.push_back(tok);
  }
  return out;
}

// Teacher-forced log p(out + eos | src) / (|out| + 1)^α.
double score(Transformer& m, const Ids& src, const Ids& out, double alpha) {
  torch::NoGradGuard ng;
  auto lp = torch::log_softmax(m->forward(row(src), row(out, kBos))[0].to(torch::kFloat64), -1);
  double s = 0;
  for (size_t i = 0; i <= out.size(); ++i)
    s += lp[static_cast<int64_t>(i)][i < out.size() ? out[i] : kEos].item<double>();
  return s / std::pow(static_cast<double>(out.size() + 1), alpha);
}

DecodeOptions opts(int64_t beam, int64_t b, double alpha = 1.0, int64_t a = 0) {
  DecodeOptions o;
  o.beam = beam;
  o.max_len_a = a;
  o.max_len_b = b;
  o.length_penalty = alpha;
  return o;
}

// The key/value cache: prefilling 3 positions, then one at a time, with a reorder in between
// (a repeated row, as beam search forks), gives the full forward's hidden states, for every
// scheme, σReparam, RMSNorm, learned positions, QK-LayerNorm and soft-capping, with and without
// an encoder.
TEST(Decode, IncrementalCacheEqualsFullForward) {
  torch::NoGradGuard ng;
  for (Arch arch : {Arch::EncoderDecoder, Arch::Decoder})
    for (Scheme scheme :
         {Scheme::Post, Scheme::Pre, Scheme::DeepNorm, Scheme::ReZero, Scheme::LayerScale, Scheme::PeriLN,
          Scheme::MixLN, Scheme::LNScaling, Scheme::DepthScaled, Scheme::Admin, Scheme::NormFormer, Scheme::SubLN}) {
      for (int variant = 0; variant < 3; ++variant) {
        auto cfg = tiny(arch, scheme);
        const bool zoo = scheme != Scheme::Post && scheme != Scheme::Pre && scheme != Scheme::DeepNorm;
        if (zoo && variant == 1) continue;
        if (scheme == Scheme::ReZero) cfg.norm = NormKind::None;
        if (variant == 1) cfg.sigma_reparam = true, cfg.norm = NormKind::RMSNorm, cfg.positions = Positions::Learned;
        if (variant == 2) cfg.qk_norm = true, cfg.attn_softcap = 0.5, cfg.logit_softcap = 3, cfg.mix_ln_ratio = 0.5;
        auto m = make(cfg, 7);
        for (auto& p : m->parameters())  // ReZero's α and LayerScale's λ off their init
          if (zoo && p.dim() == 1) p.add_(torch::randn(p.sizes(), at::detail::createCPUGenerator(5)) * 0.3);
        SCOPED_TRACE(to_string(arch) + " " + to_string(scheme) + " variant " + std::to_string(variant));
        auto g = at::detail::createCPUGenerator(11);
        auto tgt = torch::randint(4, 20, {2, 7}, g, torch::kInt64);
        torch::Tensor memory, pad;
        if (arch == Arch::EncoderDecoder) {
          auto src = torch::randint(4, 20, {2, 5}, g, torch::kInt64);
          src[1][4] = kPad;  // one padded source position
          memory = m->encoder->forward(src, {}, {}, nullptr);
          pad = m->encoder->padding_mask(src);
        }
        DecoderCache cache;
        std::vector<torch::Tensor> parts{m->decoder->step(tgt.narrow(1, 0, 3), memory, pad, cache)};
        const auto rows = torch::tensor(std::vector<int64_t>{1, 0, 1});
        parts[0] = parts[0].index_select(0, rows);
        cache.reorder(rows);
        auto tgt3 = tgt.index_select(0, rows);
        for (int64_t t = 3; t < 7; ++t) parts.push_back(m->decoder->step(tgt3.narrow(1, t, 1), memory, pad, cache));
        EXPECT_EQ(cache.length, 7);
        auto full = m->decoder->forward(tgt3, memory.defined() ? memory.index_select(0, rows) : memory,
                                        pad.defined() ? pad.index_select(0, rows) : pad, nullptr);
        auto inc = torch::cat(parts, 1);
        EXPECT_LT((inc - full).abs().max().item<double>(), 1e-5 * full.abs().max().item<double>());
      }
    }
}

TEST(Decode, GreedyEqualsReferenceAndBeamOne) {
  // Untied models whose eos output row is scaled by 1, 2, 4: eos wins more or less often, so
  // both ways of ending (eos, length limit) occur.
  int early = 0, at_limit = 0;
  for (double boost : {1.0, 2.0, 4.0}) {
    auto m = make(tiny(Arch::EncoderDecoder, Scheme::Post, /*tie=*/false), 11);
    {
      torch::NoGradGuard ng;
      m->decoder->output_projection->weight[kEos].mul_(boost);
    }
    auto src = sources(12, 5);
    for (int64_t b : {3, 100}) {
      auto o = opts(1, b);
      auto greedy = translate(*m, src, o);
      auto beam1 = detail::translate_beam_search(*m, src, o);
      const size_t limit = std::min<size_t>(b, 15);  // model.max_len − 1
      for (size_t i = 0; i < src.size(); ++i) {
        EXPECT_EQ(greedy[i], ref_greedy(m, src[i], limit)) << "source " << i << " b=" << b << " boost " << boost;
        EXPECT_EQ(beam1[i], greedy[i]) << "source " << i << " b=" << b << " boost " << boost;
        EXPECT_LE(greedy[i].size(), limit);
        (greedy[i].size() == limit ? at_limit : early)++;
      }
    }
  }
  EXPECT_GT(early, 0) << "no source ended with eos: the eos path is untested";
  EXPECT_GT(at_limit, 0) << "no source reached the length limit";
  std::printf("greedy: %d outputs ended by eos, %d at the length limit\n", early, at_limit);
}

TEST(Decode, BeamWiderThanSearchSpaceIsExhaustive) {
  // max 2 tokens before eos over 17 allowed tokens: 1 + 17 + 289 = 307 hypotheses, all kept by
  // a beam of 400, so beam search must return the best length-normalized one.
  auto m = make(tiny(Arch::EncoderDecoder, Scheme::Pre), 3);
  auto src = sources(3, 8);
  Ids allowed{1};
  for (int32_t t = 4; t < 20; ++t) allowed.push_back(t);
  std::vector<Ids> all{{}};
  for (int32_t a : allowed) all.push_back({a});
  for (int32_t a : allowed)
    for (int32_t b : allowed) all.push_back({a, b});
  for (double alpha : {0.0, 1.0, 2.5}) {
    auto got = translate(*m, src, opts(400, 2, alpha));
    for (size_t i = 0; i < src.size(); ++i) {
      double best = -kInf;
      Ids arg;
      for (auto& y : all) {
        const double s = score(m, src[i], y, alpha);
        if (s > best) best = s, arg = y;
      }
      EXPECT_EQ(got[i], arg) << "alpha " << alpha << " source " << i;
      EXPECT_NEAR(score(m, src[i], got[i], alpha), best, 1e-9);
    }
  }
}

TEST(Decode, BeamScoreAtLeastGreedy) {
  // Beam search is not exhaustive: greedy's hypothesis can fall out of the beam, so beam ≥
  // greedy is not a theorem (on random tiny models ~2% of sentences come out worse, e.g. seed 11
  // of a 25-model probe). On this fixed set it holds for every sentence; the mean must hold in
  // general, and beam search must find something better somewhere.
  auto m = make(tiny(Arch::EncoderDecoder), 21);
  auto src = sources(10, 9);
  for (double alpha : {0.0, 1.0}) {
    auto greedy = translate(*m, src, opts(1, 12, alpha));
    for (int64_t k : {2, 5}) {
      auto beam = translate(*m, src, opts(k, 12, alpha));
      int better = 0;
      double sum_b = 0, sum_g = 0;
      for (size_t i = 0; i < src.size(); ++i) {
        const double sb = score(m, src[i], beam[i], alpha), sg = score(m, src[i], greedy[i], alpha);
        EXPECT_GE(sb, sg - 1e-9) << "alpha " << alpha << " k=" << k << " source " << i;
        better += sb > sg + 1e-9;
        sum_b += sb, sum_g += sg;
        EXPECT_LE(beam[i].size(), 12u);
      }
      EXPECT_GT(sum_b, sum_g) << "alpha " << alpha << " k=" << k;
      EXPECT_GT(better, 0) << "beam " << k << " never improved on greedy";
    }
  }
}

TEST(Decode, IndependentOfBatchingAndPadding) {
  for (int64_t pad : {0, -1}) {  // -1: no padding id, so only equal lengths can share a batch
    auto cfg = tiny(Arch::EncoderDecoder, Scheme::DeepNorm);
    cfg.pad_id = pad;
    auto m = make(cfg, 4);
    auto src = sources(9, 13);
    src.push_back(Ids(14, 7));  // a much longer source that pads every other one in its batch
    src.back().back() = kEos;
    for (int64_t k : {1, 3}) {
      auto o = opts(k, 10, 0.8);
      auto together = translate(*m, src, o);
      std::vector<Ids> rev(src.rbegin(), src.rend());
      auto reversed = translate(*m, rev, o);
      for (size_t i = 0; i < src.size(); ++i) {
        auto alone = translate(*m, {src[i]}, o);
        EXPECT_EQ(together[i], alone[0]) << "pad " << pad << " beam " << k << " source " << i;
        EXPECT_EQ(reversed[src.size() - 1 - i], alone[0]);
      }
    }
  }
}

TEST(Decode, LengthLimitsAndSpecialTokens) {
  auto m = make(tiny(Arch::EncoderDecoder), 17);
  auto src = sources(8, 2);
  for (int64_t k : {1, 4}) {
    for (auto [a, b] : std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {0, 2}, {1, 1}, {2, 200}}) {
      auto out = translate(*m, src, opts(k, b, 1.0, a));
      for (size_t i = 0; i < src.size(); ++i) {
        const auto limit = std::min<int64_t>(a * static_cast<int64_t>(src[i].size()) + b, 15);
        EXPECT_LE(static_cast<int64_t>(out[i].size()), limit) << "a=" << a << " b=" << b << " beam " << k;
        for (int32_t t : out[i]) {
          EXPECT_NE(t, kPad);
          EXPECT_NE(t, kBos);
          EXPECT_NE(t, kEos);
        }
      }
    }
  }
}

// A Pre-LN model whose final norm outputs the constant vector 1 and whose untied output
// projection maps it to logit d for eos and 0 elsewhere: eos is the argmax at every step.
void rig_eos(Transformer& m) {
  torch::NoGradGuard ng;
  m->decoder->layer_norm->weight.zero_();
  m->decoder->layer_norm->bias.fill_(1.0);
  auto& w = m->decoder->output_projection->weight;
  w.zero_();
  w[kEos].fill_(1.0);
}

TEST(Decode, EosFirstGivesEmptyOutput) {
  auto m = make(tiny(Arch::EncoderDecoder, Scheme::Pre, /*tie=*/false), 6);
  rig_eos(m);
  auto src = sources(5, 1);
  for (int64_t k : {1, 3}) {
    for (auto& y : translate(*m, src, opts(k, 10))) EXPECT_TRUE(y.empty()) << "beam " << k;
  }
  auto lm = make(tiny(Arch::Decoder, Scheme::Pre, /*tie=*/false), 6);
  rig_eos(lm);
  SampleOptions so;
  so.temperature = 1.0;
  EXPECT_TRUE(sample(*lm, {5, 6}, so).empty());
}

TEST(Decode, EvalModeAndRestoresTrainingFlag) {
  auto cfg = tiny(Arch::EncoderDecoder);
  cfg.dropout = 0.3;
  auto m = make(cfg, 7);
  auto src = sources(4, 3);
  auto ref = translate(*m, src, opts(2, 8));
  m->train();
  EXPECT_EQ(translate(*m, src, opts(2, 8)), ref);  // no dropout during decoding
  EXPECT_TRUE(m->is_training());
  EXPECT_TRUE(m->decoder->layers[0]->is_training());
}

TEST(Decode, BadInputs) {
  auto m = make(tiny(Arch::EncoderDecoder), 1);
  auto lm = make(tiny(Arch::Decoder), 1);
  EXPECT_THROW(translate(*lm, {{5, kEos}}, opts(1, 5)), InputError);
  EXPECT_THROW(translate(*m, {{5, kEos}}, opts(0, 5)), InputError);
  EXPECT_THROW(translate(*m, {{5, 20, kEos}}, opts(1, 5)), InputError);
  EXPECT_THROW(translate(*m, {{5, -1, kEos}}, opts(1, 5)), InputError);
  EXPECT_THROW(translate(*m, {{}}, opts(1, 5)), InputError);
  EXPECT_THROW(translate(*m, {Ids(17, 5)}, opts(1, 5)), InputError);  // > model.max_len
  EXPECT_THROW(translate(*m, {{5, kEos}}, opts(1, -1)), InputError);
  auto bad_eos = opts(1, 5);
  bad_eos.eos_id = kPad;
  EXPECT_THROW(translate(*m, {{5, kEos}}, bad_eos), InputError);
  EXPECT_TRUE(translate(*m, {}, opts(2, 5)).empty());
  SampleOptions so;
  EXPECT_THROW(sample(*m, {5}, so), InputError);
  EXPECT_THROW(sample(*lm, {25}, so), InputError);
  EXPECT_THROW(sample(*lm, Ids(16, 5), so), InputError);  // bos + 16 > model.max_len
  so.temperature = -0.5;
  EXPECT_THROW(sample(*lm, {5}, so), InputError);
  so.temperature = 1;
  so.top_k = -2;
  EXPECT_THROW(sample(*lm, {5}, so), InputError);
}

// The LM's next-token logits after bos + ids, with bos and pad excluded.
torch::Tensor lm_logits(Transformer& m, const Ids& ids) {
  torch::NoGradGuard ng;
  auto l = m->forward({}, row(ids, kBos))[0][-1].to(torch::kFloat64).clone();
  l[kPad] = -kInf;
  l[kBos] = -kInf;
  return l;
}

TEST(Sample, ReproducibleGreedyLimitsAndGlobalGenerator) {
  auto m = make(tiny(Arch::Decoder), 12);
  const Ids prompt{5, 9, 4};
  SampleOptions so;
  so.max_new_tokens = 10;
  so.temperature = 1.5;
  so.seed = 42;
  torch::manual_seed(7);
  auto r1 = torch::rand({4});
  torch::manual_seed(7);
  auto a = sample(*m, prompt, so);
  EXPECT_TRUE(torch::equal(torch::rand({4}), r1)) << "sample() used the global generator";
  EXPECT_EQ(sample(*m, prompt, so), a);
  bool differs = false;
  for (uint64_t s = 1; s <= 5; ++s) {
    so.seed = s;
    differs |= sample(*m, prompt, so) != a;
  }
  EXPECT_TRUE(differs) << "the seed has no effect";
  // Greedy continuation by the full forward.
  Ids ctx = prompt, greedy;
  for (int i = 0; i < 10; ++i) {
    const auto t = static_cast<int32_t>(lm_logits(m, ctx).argmax().item<int64_t>());
    if (t == kEos) break;
    greedy.push_back(t);
    ctx.push_back(t);
  }
  so.temperature = 0;
  EXPECT_EQ(sample(*m, prompt, so), greedy);
  so.temperature = 0.7;
  so.top_k = 1;
  EXPECT_EQ(sample(*m, prompt, so), greedy);
  // Length limits: max_new_tokens, then model.max_len (16 positions incl. bos and prompt).
  so.top_k = 0;
  so.temperature = 1;
  so.max_new_tokens = 2;
  EXPECT_LE(sample(*m, prompt, so).size(), 2u);
  so.max_new_tokens = 100;
  for (uint64_t s = 1; s <= 5; ++s) {
    so.seed = s;
    EXPECT_LE(sample(*m, prompt, so).size(), 12u);
  }
}

TEST(Sample, TopKAndTemperatureDistribution) {
  auto m = make(tiny(Arch::Decoder), 30);
  const Ids prompt{7, 8};
  // Every sampled token is among the k largest logits at its position.
  SampleOptions so;
  so.max_new_tokens = 12;
  so.top_k = 3;
  for (uint64_t s = 1; s <= 4; ++s) {
    so.seed = s;
    Ids ctx = prompt;
    for (int32_t t : sample(*m, prompt, so)) {
      auto kth = std::get<0>(lm_logits(m, ctx).topk(3))[2].item<double>();
      EXPECT_GE(lm_logits(m, ctx)[t].item<double>(), kth);
      ctx.push_back(t);
    }
  }
  // First-token frequencies over many seeds match softmax(logits / T), renormalized to the top k.
  auto logits = lm_logits(m, prompt);
  const int n = 2000;
  for (int64_t k : {0, 4}) {
    const double T = 2.0;
    auto scaled = logits / T;
    if (k > 0) {
      auto keep = std::get<1>(scaled.topk(k));
      auto masked = torch::full_like(scaled, -kInf);
      masked.index_put_({keep}, scaled.index({keep}));
      scaled = masked;
    }
    auto p = torch::softmax(scaled, -1);
    std::vector<int> count(20, 0);
    SampleOptions one;
    one.max_new_tokens = 1;
    one.temperature = T;
    one.top_k = k;
    for (int s = 0; s < n; ++s) {
      one.seed = static_cast<uint64_t>(s) + 1000;
      auto y = sample(*m, prompt, one);
      ++count[y.empty() ? kEos : y[0]];
    }
    for (int64_t v = 0; v < 20; ++v) {
      const double pv = p[v].item<double>(), f = count[v] / static_cast<double>(n);
      if (pv == 0) {
        EXPECT_EQ(count[v], 0) << "token " << v << " top_k " << k;
      }
      EXPECT_NEAR(f, pv, 4.5 * std::sqrt(pv * (1 - pv) / n) + 1e-3) << "token " << v << " top_k " << k;
    }
  }
}

// For the record: greedy translation of 100 sources (30 tokens) into 40 tokens with a 6-6
// d=256 model (a random model rarely emits eos). Run with --gtest_also_run_disabled_tests.
TEST(Decode, DISABLED_Timing) {
  ModelConfig cfg;
  cfg.vocab_size = 8000;
  cfg.d_model = 256;
  cfg.n_heads = 4;
  cfg.d_ff = 1024;
  cfg.dropout = 0;
  auto m = make(cfg, 1);
  auto g = at::detail::createCPUGenerator(3);
  std::vector<Ids> src;
  for (int i = 0; i < 100; ++i) {
    auto t = torch::randint(4, 8000, {29}, g, torch::kInt64);
    Ids s(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + 29);
    s.push_back(kEos);
    src.push_back(s);
  }
  for (int64_t k : {1, 4}) {
    const auto t0 = std::chrono::steady_clock::now();
    auto out = translate(*m, k == 1 ? src : std::vector<Ids>(src.begin(), src.begin() + 10), opts(k, 40));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    size_t toks = 0;
    for (auto& y : out) toks += y.size();
    std::printf("beam %lld: %zu sentences, %zu output tokens, %.2f s\n", static_cast<long long>(k), out.size(), toks,
                s);
  }
}

}  // namespace
}  // namespace stx
