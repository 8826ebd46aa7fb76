// stx's fused CPU kernels against the LibTorch reference ops they replace (kernels/kernels.h):
// the attention core (self/cross, causal, padding, fully masked rows, attention dropout, packed
// q/k/v), the counter-based dropout (rate, scale, backward mask, neighbour independence,
// determinism, thread count), the cross-entropy (label smoothing, padding), the Adam pass, the
// residual + norm join (LayerNorm, RMSNorm, α), the vectorizable exp's error, and whole models'
// logits and gradients with either set.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <functional>
#include <type_traits>

#include <fmt/format.h>

#include <ATen/Parallel.h>

#include "helpers.h"
#include "stx/config/config_io.h"
#include "stx/core/cpu_cache.h"
#include "stx/kernels/adam.h"
#include "stx/kernels/attention_core.h"
#include "stx/kernels/band_gemm.h"
#include "stx/kernels/cross_entropy.h"
#include "stx/kernels/dropout.h"
#include "stx/kernels/fused_sublayer.h"
#include "stx/kernels/kernels.h"
#include "stx/kernels/residual_norm.h"
#include "stx/kernels/tied_projection.h"
#include "stx/kernels/vec_math.h"
#include "stx/model/attention.h"
#include "stx/model/layer.h"
#include "stx/train/loss.h"
#include "stx/train/optimizer.h"

namespace stx {
namespace {

using test::expect_close;

// Restores the default kernels when a test ends.
struct KernelsGuard {
  ~KernelsGuard() {
    set_kernels(Kernels::Fused), set_attention_core(AttentionCore::Auto);
    set_head_products(HeadProducts::Band);
  }
};

void seed_cpu(uint64_t s) {
  auto gen = at::globalContext().defaultGenerator(at::kCPU);
  gen.set_current_seed(s);
}

struct AttnRun {
  torch::Tensor out, probs, dx, dmem;
  std::vector<torch::Tensor> dparams;
};

// One forward/backward of an Attention module with the given kernels, from a fixed generator
// state; f = Σ out ⊙ R.
AttnRun run_attention(Attention& attn, Kernels k, const torch::Tensor& x, const torch::Tensor& mem_in,
                      const torch::Tensor& pad, bool causal, const torch::Tensor& R) {
  set_kernels(k);
  seed_cpu(123);
  attn->zero_grad();
  auto xx = x.detach().clone().requires_grad_(true);
  auto mm = mem_in.defined() ? mem_in.detach().clone().requires_grad_(true) : xx;
  Taps taps({".probs"});
  auto out = attn->forward(xx, mm, pad, causal, TapSite{&taps, "a."});
  (out * R).sum().backward();
  AttnRun r{out.detach(), taps.values().at("a.probs").detach(), xx.grad(),
            mem_in.defined() ? mm.grad() : torch::Tensor()};
  for (auto& p : attn->parameters()) r.dparams.push_back(p.grad().clone());
  return r;
}

struct AttnCase {
  std::string name;
  bool cross, causal, pad, blind_row;
  double dropout;
  torch::ScalarType dtype;
  int64_t T = 5;         // queries (and self-attention keys)
  double softcap = 0.0;  // Gemma 2's c (0: none)
};

void check_attention(const AttnCase& c) {
  KernelsGuard guard;
  const int64_t B = 3, Tq = c.T, Tk = c.cross ? c.T + 2 : c.T, d = 12, H = 3;
  torch::manual_seed(5);
  ModelConfig m;
  m.d_model = d, m.n_heads = H, m.bias = true, m.sigma_reparam = false, m.attention_dropout = c.dropout;
  m.attn_softcap = c.softcap;
  Attention attn(m);
  {
    torch::NoGradGuard ng;
    for (auto& p : attn->parameters()) p.copy_(torch::randn_like(p) * 0.4);
  }
  attn->to(c.dtype);
  attn->train();
  auto x = torch::randn({B, Tq, d}, c.dtype);
  auto mem = c.cross ? torch::randn({B, Tk, d}, c.dtype) : torch::Tensor();
  torch::Tensor pad;
  if (c.pad) {
    pad = torch::zeros({B, Tk}, torch::kBool);
    pad.index_put_({1, torch::indexing::Slice(Tk - 2)}, true);
    if (c.blind_row) pad.index_put_({2}, true);  // batch row 2 sees no key at all
  }
  auto R = torch::randn({B, Tq, d}, c.dtype);
  ASSERT_TRUE(attention_core_available(x));
  auto ref = run_attention(attn, Kernels::Reference, x, mem, pad, c.causal, R);
  auto fus = run_attention(attn, Kernels::Fused, x, mem, pad, c.causal, R);
  const double tol = c.dtype == torch::kDouble ? 1e-12 : 2e-5;
  expect_close(fus.out, ref.out, tol, c.name + " out");
  expect_close(fus.probs, ref.probs, tol, c.name + " probs");
  expect_close(fus.dx, ref.dx, tol, c.name + " dx");
  if (c.cross) expect_close(fus.dmem, ref.dmem, tol, c.name + " dmemory");
  for (size_t i = 0; i < ref.dparams.size(); ++i)
    expect_close(fus.dparams[i], ref.dparams[i], tol, c.name + " dparam " + std::to_string(i));
}

TEST(Kernels, AttentionCoreEqualsReference) {
  KernelsGuard guard;
  for (auto hp : {HeadProducts::Band, HeadProducts::Blas})
    for (auto dt : {torch::kDouble, torch::kFloat})
      for (const AttnCase& c : std::vector<AttnCase>{
               {"self causal", false, true, false, false, 0.0, dt},
               {"self causal + padding", false, true, true, false, 0.0, dt},
               {"self, padding, a row with no visible key", false, false, true, true, 0.0, dt},
               {"cross + padding", true, false, true, false, 0.0, dt},
               {"cross, a row with no visible key", true, false, true, true, 0.0, dt},
               {"self causal + attention dropout 0.3", false, true, true, false, 0.3, dt},
               {"cross + attention dropout 0.3", true, false, false, false, 0.3, dt},
               // longer rows: several vector-loop blocks per row of softmax and its backward
               {"self causal, T 70", false, true, false, false, 0.0, dt, 70},
               {"self causal + padding, T 70", false, true, true, false, 0.0, dt, 70},
               {"self causal, a row with no visible key, T 70", false, true, true, true, 0.0, dt, 70},
               {"self causal + attention dropout 0.3, T 70", false, true, true, false, 0.3, dt, 70},
               {"cross + padding, T 70", true, false, true, false, 0.0, dt, 70},
               // soft-capped at c = 0.5, well inside tanh's bend at these scores
               {"self causal + padding, soft-cap", false, true, true, false, 0.0, dt, 5, 0.5},
               {"self, a row with no visible key, soft-cap", false, false, true, true, 0.0, dt, 5, 0.5},
               {"cross + dropout 0.3, soft-cap", true, false, true, false, 0.3, dt, 5, 0.5},
               {"self causal + padding, soft-cap, T 70", false, true, true, false, 0.0, dt, 70, 0.5}}) {
        SCOPED_TRACE(c.name + (dt == torch::kDouble ? " (float64)" : " (float32)") +
                     (hp == HeadProducts::Band ? ", band kernel" : ", BLAS"));
        set_head_products(hp);
        check_attention(c);
      }
}

// The band kernel against a plain triple loop, on shapes that are no multiple of its vector width
// or row block, with A read directly and transposed. Where a band skips terms, A holds the exact
// zeros the kernel relies on; kCausalCols must also zero C above the diagonal (kCausalScores may
// leave anything there: not compared). β = 0 must not read C (it starts as NaN); β ≠ 0 adds β·C.
template <typename T>
void check_band_gemm(band::Band b, int64_t m, int64_t n, int64_t k, bool transposed, T beta) {
  const auto dt = std::is_same_v<T, double> ? torch::kDouble : torch::kFloat;
  torch::manual_seed(m * 1000 + n * 10 + k);
  auto A = torch::randn({m, k}, dt), Bm = torch::randn({k, n}, dt);
  const auto i = torch::arange(m).unsqueeze(1), p = torch::arange(k).unsqueeze(0);
  if (b == band::Band::kPUpTo) A.masked_fill_(p > i, 0);  // row r uses p ≤ r
  if (b == band::Band::kPFrom) A.masked_fill_(p < i, 0);  // row r uses p ≥ r
  const T alpha = T(0.75);
  const double c0 = beta == T(0) ? std::nan("") : 3.0;  // C's entries before the call
  auto want = (torch::matmul(A.to(torch::kDouble), Bm.to(torch::kDouble)) * alpha).to(dt);
  if (beta != T(0)) want += beta * c0;
  if (b == band::Band::kCausalCols) want.masked_fill_(torch::arange(n).unsqueeze(0) > i, 0);
  // A as stored: row-major [m, k], or its transpose [k, m] read with rsa = 1, csa = m.
  auto At = transposed ? A.t().contiguous() : A.contiguous();
  const int64_t rsa = transposed ? 1 : k, csa = transposed ? m : 1;
  std::vector<T> packed(static_cast<size_t>(k * band::padded_cols(n, std::is_same_v<T, double>)), T(-7));
  // B through both packings: rows of Bm, and rows of Bmᵀ read transposed.
  for (bool via_t : {false, true}) {
    if (via_t) {
      auto Bt = Bm.t().contiguous();
      band::pack_bt(k, n, Bt.template data_ptr<T>(), k, packed.data());
    } else {
      band::pack_b(k, n, Bm.template data_ptr<T>(), n, packed.data());
    }
    auto C = torch::full({m, n + 3}, 99.0, dt);  // ldc > n: the extra columns stay untouched
    C.narrow(1, 0, n).fill_(c0);
    band::band_gemm(b, m, n, k, alpha, At.template data_ptr<T>(), rsa, csa, packed.data(),
                    band::padded_cols(n, std::is_same_v<T, double>), beta, C.template data_ptr<T>(), n + 3);
    const std::string what = "band " + std::to_string(static_cast<int>(b)) + " m" + std::to_string(m) + " n" +
                             std::to_string(n) + " k" + std::to_string(k) + (transposed ? " Aᵀ" : " A") +
                             (via_t ? " pack_bt" : " pack_b") + " beta " + std::to_string(beta);
    auto got = C.narrow(1, 0, n);
    if (b == band::Band::kCausalScores) got = got.masked_fill(torch::arange(n).unsqueeze(0) > i, 0);
    if (b == band::Band::kCausalScores) want.masked_fill_(torch::arange(n).unsqueeze(0) > i, 0);
    expect_close(got, want, std::is_same_v<T, double> ? 1e-12 : 2e-5, what);
    EXPECT_TRUE(C.narrow(1, n, 3).eq(99.0).all().template item<bool>()) << what << ": wrote past n";
  }
}

TEST(Kernels, BandGemmEqualsTripleLoop) {
  using band::Band;
  for (Band b : {Band::kFull, Band::kCausalCols, Band::kCausalScores, Band::kPUpTo, Band::kPFrom})
    for (auto [m, n, k] : std::vector<std::array<int64_t, 3>>{{1, 1, 1},
                                                              {5, 4, 5},
                                                              {13, 37, 21},
                                                              {70, 70, 16},
                                                              {64, 16, 64},
                                                              {9, 71, 70},
                                                              {33, 130, 40},
                                                              {3, 5, 0},
                                                              {300, 300, 16}})
      for (bool t : {false, true})
        for (double beta : {0.0, 0.5}) {
          if ((b == Band::kCausalCols || b == Band::kCausalScores) && beta != 0) continue;  // used with β = 0 only
          check_band_gemm<float>(b, m, n, k, t, static_cast<float>(beta));
          check_band_gemm<double>(b, m, n, k, t, beta);
        }
}

// band::gemm, blas::gemm's signature on the band kernel: every transpose, B read in place (n a
// multiple of the vector width) or packed, β = 0 (C not read) and β ≠ 0, leading dimensions
// larger than the matrices, with and without a bias row added after α.
template <typename T>
void check_band_as_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T beta, bool with_bias) {
  const auto dt = std::is_same_v<T, double> ? torch::kDouble : torch::kFloat;
  torch::manual_seed(m + 7 * n + 13 * k);
  const int64_t pad = 5;  // extra columns in every stored matrix
  auto A = torch::randn({ta ? k : m, (ta ? m : k) + pad}, dt), Bs = torch::randn({tb ? n : k, (tb ? k : n) + pad}, dt);
  auto opA = A.narrow(1, 0, ta ? m : k), opB = Bs.narrow(1, 0, tb ? k : n);
  if (ta) opA = opA.t();
  if (tb) opB = opB.t();
  auto C = torch::full({m, n + pad}, beta == T(0) ? std::nan("") : 2.0, dt);
  auto want = torch::matmul(opA.to(torch::kDouble), opB.to(torch::kDouble)) * 0.5;
  if (beta != T(0)) want += beta * 2.0;
  const auto bias = torch::randn({n}, dt);
  if (with_bias) want += bias.to(torch::kDouble);
  band::gemm(ta, tb, m, n, k, T(0.5), A.template data_ptr<T>(), A.size(1), Bs.template data_ptr<T>(), Bs.size(1), beta,
             C.template data_ptr<T>(), n + pad, with_bias ? bias.template data_ptr<T>() : nullptr);
  expect_close(C.narrow(1, 0, n), want.to(dt), std::is_same_v<T, double> ? 1e-12 : 2e-5,
               fmt::format("gemm ta {} tb {} {}x{}x{} beta {} bias {}", ta, tb, m, n, k, beta, with_bias));
}

TEST(Kernels, BandGemmAsBlasGemm) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (auto [m, n, k] : std::vector<std::array<int64_t, 3>>{{37, 64, 29},
                                                                {16, 48, 70},
                                                                {5, 19, 3},
                                                                {9, 16, 1},
                                                                // several column panels, chunks of the sum
                                                                {11, 530, 40},
                                                                {10, 37, 2100}})
        for (double beta : {0.0, 0.5})
          for (bool bias : {false, true}) {
            check_band_as_gemm<float>(ta, tb, m, n, k, static_cast<float>(beta), bias);
            check_band_as_gemm<double>(ta, tb, m, n, k, beta, bias);
          }
}

TEST(Kernels, TiedProjectionEqualsMatmul) {
  // z = h Eᵀ and its gradients on the band kernel against torch::matmul, on one thread (where it
  // runs), with V and d no multiple of the vector width and more than one column panel.
  KernelsGuard guard;
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  for (auto dt : {torch::kDouble, torch::kFloat}) {
    torch::manual_seed(3);
    auto h = torch::randn({3, 5, 24}, dt).requires_grad_(true), E = torch::randn({301, 24}, dt).requires_grad_(true);
    auto R = torch::randn({3, 5, 301}, dt);
    ASSERT_TRUE(tied_projection_available(h));
    auto z = tied_projection(h, E);
    auto g = torch::autograd::grad({(z * R).sum()}, {h, E});
    auto zr = torch::matmul(h, E.t());
    auto gr = torch::autograd::grad({(zr * R).sum()}, {h, E});
    const double tol = dt == torch::kDouble ? 1e-12 : 2e-5;
    expect_close(z, zr, tol, "logits");
    expect_close(g[0], gr[0], tol, "dh");
    expect_close(g[1], gr[1], tol, "dE");
    set_head_products(HeadProducts::Blas);
    EXPECT_FALSE(tied_projection_available(h)) << "--head-products blas keeps the BLAS path";
    set_head_products(HeadProducts::Band);
  }
  at::set_num_threads(2);
  EXPECT_FALSE(tied_projection_available(torch::zeros({2, 3}))) << "more threads: BLAS";
  at::set_num_threads(threads);
}

TEST(Kernels, AttentionCoreReadsStridedHeadsInPlace) {
  // q, k, v as column blocks of one [B, T, 3d] tensor (row stride 3d) equal contiguous copies.
  const int64_t B = 2, T = 6, d = 8, H = 2;
  auto qkv = torch::randn({B, T, 3 * d}, torch::kDouble).requires_grad_(true);
  auto packed = attention_core_packed(qkv, {}, H, true, 0.0);
  auto q = qkv.narrow(2, 0, d), k = qkv.narrow(2, d, d), v = qkv.narrow(2, 2 * d, d);
  auto views = attention_core(q, k, v, {}, H, true, 0.0);
  auto copies = attention_core(q.contiguous(), k.contiguous(), v.contiguous(), {}, H, true, 0.0);
  expect_close(packed, copies, 1e-13, "packed vs copies");
  expect_close(views, copies, 1e-13, "strided views vs copies");
  auto R = torch::randn_like(packed);
  auto g_packed = torch::autograd::grad({(packed * R).sum()}, {qkv})[0];
  auto g_views = torch::autograd::grad({(views * R).sum()}, {qkv})[0];
  expect_close(g_packed, g_views, 1e-13, "packed gradient");
  EXPECT_GT(g_packed.abs().sum().item<double>(), 0);
}

TEST(Kernels, DropoutRateScaleAndBackwardMask) {
  KernelsGuard guard;
  const double p = 0.1;
  auto x = torch::ones({1000, 1000}, torch::kFloat).requires_grad_(true);
  seed_cpu(7);
  auto y = stx::dropout(x, p, true);
  const auto kept = (y != 0).to(torch::kDouble);
  const int64_t n = kept.numel();
  const double rate = 1 - kept.mean().item<double>();
  EXPECT_NEAR(rate, p, 5 * std::sqrt(p * (1 - p) / n)) << "dropped fraction";
  // Neighbours independent: both dropped with probability p² (elements i, i+1 and i, i+1000).
  const auto dropped = (y == 0).to(torch::kDouble).flatten();
  for (int64_t lag : {1, 1000}) {
    const double both = (dropped.narrow(0, 0, n - lag) * dropped.narrow(0, lag, n - lag)).mean().item<double>();
    EXPECT_NEAR(both, p * p, 5 * std::sqrt(p * p * (1 - p * p) / n)) << "lag " << lag;
  }
  const float scale = 1.0f / static_cast<float>(1 - p);
  const auto kept_values = y.masked_select(y != 0);
  EXPECT_TRUE(torch::equal(kept_values, torch::full_like(kept_values, scale))) << "kept values are x / (1 − p)";
  auto w = torch::randn_like(x);
  (y * w).sum().backward();
  EXPECT_TRUE(torch::allclose(x.grad(), w * (y != 0).to(torch::kFloat) * scale, 0, 0))
      << "backward mask = forward mask";
  EXPECT_TRUE(torch::equal(stx::dropout(x, p, false), x)) << "eval is the identity";
}

TEST(Kernels, DropoutDeterminismAndThreads) {
  KernelsGuard guard;
  auto x = torch::randn({333, 77});
  seed_cpu(11);
  auto a = stx::dropout(x, 0.3, true);
  auto b = stx::dropout(x, 0.3, true);
  EXPECT_FALSE(torch::equal(a, b)) << "two draws, two masks";
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  seed_cpu(11);
  auto a1 = stx::dropout(x, 0.3, true);
  at::set_num_threads(std::max(2, threads));
  seed_cpu(11);
  auto a2 = stx::dropout(x, 0.3, true);
  at::set_num_threads(threads);
  EXPECT_TRUE(torch::equal(a, a1)) << "same generator state, same mask";
  EXPECT_TRUE(torch::equal(a, a2)) << "the mask does not depend on the thread count";
  set_kernels(Kernels::Reference);
  seed_cpu(11);
  auto r = stx::dropout(x, 0.3, true);
  EXPECT_EQ(r.sizes(), x.sizes());
  EXPECT_FALSE(torch::equal(r, a)) << "reference kernels use torch::dropout";
}

// f on one thread, where the layers' products run on the band kernel, and on two, where they run
// on the BLAS: both paths.
void on_one_and_two_threads(const std::function<void()>& f) {
  const int threads = at::get_num_threads();
  for (int n : {1, 2}) {
    SCOPED_TRACE(std::to_string(n) + " thread(s)");
    at::set_num_threads(n);
    f();
  }
  at::set_num_threads(threads);
}

void whole_model_loss_and_gradients_match() {
  KernelsGuard guard;
  for (auto [arch, scheme, norm] :
       std::vector<std::tuple<Arch, Scheme, NormKind>>{{Arch::Decoder, Scheme::DeepNorm, NormKind::LayerNorm},
                                                       {Arch::EncoderDecoder, Scheme::DeepNorm, NormKind::LayerNorm},
                                                       {Arch::Decoder, Scheme::Post, NormKind::RMSNorm},
                                                       {Arch::EncoderDecoder, Scheme::Pre, NormKind::LayerNorm}}) {
    SCOPED_TRACE(to_string(arch) + "/" + to_string(scheme) + "/" + to_string(norm));
    auto m = test::tiny(arch, scheme, norm);
    m.dropout = 0;
    Transformer model(m);
    initialize(*model, 3);
    model->train();
    auto src = m.has_encoder() ? test::tokens(3, 6, m.vocab_size, 1) : torch::Tensor();
    auto tgt = test::tokens(3, 5, m.vocab_size, 2);
    std::vector<std::vector<torch::Tensor>> grads;
    std::vector<torch::Tensor> logits;
    for (auto k : {Kernels::Reference, Kernels::Fused}) {
      set_kernels(k);
      model->zero_grad();
      auto y = model->forward(src, tgt);
      y.pow(2).mean().backward();
      logits.push_back(y.detach());
      grads.emplace_back();
      for (auto& p : model->parameters()) grads.back().push_back(p.grad().clone());
    }
    expect_close(logits[1], logits[0], 2e-5, test::name(arch) + " logits");
    for (size_t i = 0; i < grads[0].size(); ++i)
      expect_close(grads[1][i], grads[0][i], 2e-5, test::name(arch) + " grad " + std::to_string(i));
  }
}

TEST(Kernels, WholeModelLossAndGradientsMatch) { on_one_and_two_threads(whole_model_loss_and_gradients_match); }

// The fused sub-layers (kernels/fused_sublayer.h) against the same model composed of its modules
// (kernels = Fused for both: the same attention core and dropout streams), forward and every
// parameter's gradient, with dropout and attention dropout on (the same seed: the same masks).
void fused_sublayers_equal_composed() {
  KernelsGuard guard;
  struct Case {
    Scheme scheme;
    NormKind norm;
    Activation act;
    bool sigma;
    Arch arch = Arch::Decoder;  // encoder-decoder: the decoder's cross-attention fused too
    bool qk = false;            // QK-LayerNorm
    double cap = 0.0;           // attention soft-capping (Gemma 2's c)
  };
  const std::vector<Case> cases{
      {Scheme::Post, NormKind::LayerNorm, Activation::ReLU, false},
      {Scheme::Pre, NormKind::LayerNorm, Activation::GELU, false},
      {Scheme::DeepNorm, NormKind::LayerNorm, Activation::GELU, false},
      {Scheme::Post, NormKind::RMSNorm, Activation::GELU, false},
      {Scheme::Pre, NormKind::RMSNorm, Activation::ReLU, true},
      {Scheme::LNScaling, NormKind::LayerNorm, Activation::GELU, false},
      {Scheme::DepthScaled, NormKind::LayerNorm, Activation::ReLU, false},
      {Scheme::MixLN, NormKind::LayerNorm, Activation::GELU, false},
      {Scheme::ReZero, NormKind::None, Activation::ReLU, false},
      {Scheme::LayerScale, NormKind::LayerNorm, Activation::GELU, false},
      {Scheme::PeriLN, NormKind::LayerNorm, Activation::ReLU, false},
      {Scheme::PeriLN, NormKind::RMSNorm, Activation::GELU, false},
      {Scheme::Admin, NormKind::LayerNorm, Activation::ReLU, false},
      {Scheme::Post, NormKind::None, Activation::GELU, true},
      {Scheme::SubLN, NormKind::LayerNorm, Activation::GELU, false},
      {Scheme::SubLN, NormKind::RMSNorm, Activation::ReLU, true},
      {Scheme::NormFormer, NormKind::LayerNorm, Activation::GELU, false},
      {Scheme::Pre, NormKind::DyT, Activation::GELU, false},
      {Scheme::Post, NormKind::DyT, Activation::ReLU, false},
      {Scheme::PeriLN, NormKind::DyT, Activation::ReLU, false},
      {Scheme::SubLN, NormKind::DyT, Activation::GELU, false},
      {Scheme::Pre, NormKind::LayerNorm, Activation::GELU, false, Arch::Decoder, true},
      {Scheme::Post, NormKind::RMSNorm, Activation::ReLU, true, Arch::Decoder, true},
      {Scheme::Pre, NormKind::LayerNorm, Activation::GELU, false, Arch::Decoder, false, 0.5},
      {Scheme::Post, NormKind::RMSNorm, Activation::ReLU, true, Arch::Decoder, true, 0.5},
      {Scheme::Pre, NormKind::LayerNorm, Activation::ReLU, false, Arch::EncoderDecoder, false, 0.5},
      {Scheme::Post, NormKind::LayerNorm, Activation::ReLU, false, Arch::EncoderDecoder},
      {Scheme::PeriLN, NormKind::LayerNorm, Activation::GELU, false, Arch::EncoderDecoder},
      {Scheme::Pre, NormKind::LayerNorm, Activation::GELU, false, Arch::EncoderDecoder, true},
      {Scheme::Post, NormKind::RMSNorm, Activation::ReLU, true, Arch::EncoderDecoder, true, 0.5}};
  for (auto dt : {torch::kDouble, torch::kFloat})
    for (const auto& c : cases)
      for (double p : {0.0, 0.1}) {
        SCOPED_TRACE(to_string(c.arch) + "/" + to_string(c.scheme) + "/" + to_string(c.norm) +
                     (c.act == Activation::GELU ? "/gelu" : "/relu") + (c.sigma ? "/sigma" : "") +
                     (c.qk ? "/qk-norm" : "") + (c.cap > 0 ? "/softcap" : "") + " dropout " + std::to_string(p) +
                     (dt == torch::kDouble ? " float64" : " float32"));
        auto m = test::tiny(c.arch, c.scheme, c.norm, c.sigma);
        m.d_model = 16, m.n_heads = 2, m.d_ff = 24, m.decoder_layers = 4, m.activation = c.act;
        m.dropout = p, m.attention_dropout = p, m.qk_norm = c.qk, m.attn_softcap = c.cap;
        Transformer model(m);
        initialize(*model, 3);
        {  // gains (ReZero's start at 0), skip weights and norms away from their initial 1 and 0.
          // ReZero's (α and the biases) at 0.05–0.15: with no norm and α ≈ 1 the stream grows
          // through the layers and float32 fails itself — the composed path 5.8e-5 off float64 in
          // α's gradient, a sum that cancels (the fused path 2e-4) on an AVX-512 EPYC.
          torch::NoGradGuard no_grad;
          const double gain = c.scheme == Scheme::ReZero ? 0.1 : 1.0;
          for (auto& np : model->named_parameters())
            if (np.value().dim() == 1 && np.key().find("embed") == std::string::npos)
              np.value().copy_(gain * (0.5 + torch::rand_like(np.value())));
        }
        model->to(dt);
        model->train();
        auto tgt = test::tokens(3, 7, m.vocab_size, 2);  // the last row ends in padding
        auto src = test::tokens(3, 5, m.vocab_size, 1);
        std::vector<std::vector<torch::Tensor>> grads;
        std::vector<torch::Tensor> logits;
        std::vector<torch::Tensor> buffers;  // σReparam's u, v: each training forward iterates them
        for (auto& b : model->buffers()) buffers.push_back(b.clone());
        for (auto path : {LayerPath::Composed, LayerPath::Fused}) {
          model->set_layer_path(path);
          seed_cpu(5);
          {
            torch::NoGradGuard no_grad;
            auto bs = model->buffers();
            for (size_t i = 0; i < bs.size(); ++i) bs[i].copy_(buffers[i]);
          }
          model->zero_grad();
          auto y = model->forward(c.arch == Arch::EncoderDecoder ? src : torch::Tensor(), tgt);
          (y * y).mean().backward();
          logits.push_back(y.detach());
          grads.emplace_back();
          for (auto& q : model->parameters()) grads.back().push_back(q.grad().defined() ? q.grad().clone() : q.grad());
        }
        const double tol = dt == torch::kDouble ? 1e-12 : 2e-5;
        expect_close(logits[1], logits[0], tol, "logits");
        const auto names = model->named_parameters().keys();
        for (size_t i = 0; i < grads[0].size(); ++i) {
          ASSERT_EQ(grads[1][i].defined(), grads[0][i].defined()) << names[i];
          if (grads[0][i].defined()) expect_close(grads[1][i], grads[0][i], tol, "grad " + names[i]);
        }
      }
}

TEST(Kernels, FusedSublayersEqualComposed) { on_one_and_two_threads(fused_sublayers_equal_composed); }

// The fused path is taken where it should be, and the composed one where a scheme or a tap needs it.
TEST(Kernels, FusedSublayerRunsWhereTheSchemeAllows) {
  KernelsGuard guard;
  auto x = torch::randn({2, 5, 16});
  auto m = test::tiny(Arch::Decoder, Scheme::Pre);
  m.d_model = 16;
  Layer layer(m, /*causal=*/true, /*cross=*/false, 1.0, 0, 2);
  EXPECT_EQ(layer->path_choice(x).path, LayerPath::Fused) << layer->path_choice(x).why;
  EXPECT_EQ(layer->path_choice(x.to(torch::kDouble)).path, LayerPath::Fused);
  EXPECT_EQ(layer->path_choice(x.to(torch::kHalf)).path, LayerPath::Composed);
  layer->set_composed(true);
  EXPECT_EQ(layer->path_choice(x).path, LayerPath::Composed);
  layer->set_composed(false);
  set_kernels(Kernels::Reference);
  EXPECT_EQ(layer->path_choice(x).path, LayerPath::Composed);
  set_kernels(Kernels::Fused);
  // The node that ends a layer: the FFN sub-layer's, or the composed path's last op.
  auto last_node = [&](Scheme scheme, bool qk_norm, bool with_tap, NormKind norm = NormKind::LayerNorm,
                       double softcap = 0.0) {
    auto m = test::tiny(Arch::Decoder, scheme, norm);
    m.d_model = 16, m.qk_norm = qk_norm, m.attn_softcap = softcap;
    Layer layer(m, /*causal=*/true, /*cross=*/false, 1.0, 0, 2);
    auto in = torch::randn({2, 5, 16}).requires_grad_(true);
    Taps taps({"input"});
    auto y = layer->forward(in, {}, {}, {}, with_tap ? TapSite{&taps, "0."} : TapSite{});
    return y.grad_fn()->name();
  };
  EXPECT_NE(last_node(Scheme::Post, false, false).find("FFNSublayer"), std::string::npos);
  EXPECT_NE(last_node(Scheme::DeepNorm, false, false).find("FFNSublayer"), std::string::npos);
  EXPECT_NE(last_node(Scheme::Pre, false, false).find("FFNSublayer"), std::string::npos);
  for (auto scheme : {Scheme::LayerScale, Scheme::PeriLN, Scheme::Admin, Scheme::SubLN, Scheme::NormFormer})
    EXPECT_NE(last_node(scheme, false, false).find("FFNSublayer"), std::string::npos) << to_string(scheme);
  for (auto scheme : {Scheme::ReZero, Scheme::Post})
    EXPECT_NE(last_node(scheme, false, false, NormKind::None).find("FFNSublayer"), std::string::npos)
        << to_string(scheme) << " without norms";
  EXPECT_NE(last_node(Scheme::Pre, false, false, NormKind::DyT).find("FFNSublayer"), std::string::npos) << "DyT";
  for (const bool qk : {false, true}) {  // a decoder layer with cross-attention: three fused sub-layers
    auto m = test::tiny(Arch::EncoderDecoder, Scheme::Pre);
    m.d_model = 16, m.qk_norm = qk;
    Layer layer(m, /*causal=*/true, /*cross=*/true, 1.0, 0, 2);
    auto in = torch::randn({2, 5, 16}).requires_grad_(true), memory = torch::randn({2, 3, 16});
    auto y = layer->forward(in, {}, memory, {}, TapSite{});
    EXPECT_NE(y.grad_fn()->name().find("FFNSublayer"), std::string::npos);
    const auto& before = y.grad_fn()->next_edges()[0].function;  // the FFN's input x
    ASSERT_TRUE(before);
    EXPECT_NE(before->name().find("CrossAttentionSublayer"), std::string::npos) << before->name() << " qk " << qk;
  }
  EXPECT_NE(last_node(Scheme::Pre, true, false).find("FFNSublayer"), std::string::npos) << "QK-LayerNorm";
  EXPECT_NE(last_node(Scheme::Post, false, false, NormKind::LayerNorm, 50.0).find("FFNSublayer"), std::string::npos)
      << "soft-capping";
  EXPECT_EQ(last_node(Scheme::Pre, false, true).find("FFNSublayer"), std::string::npos) << "a tap";
}

// The caching CPU allocator (core/cpu_cache.h): a freed block of a size comes back for the next
// tensor of that size, holds what is written to it, and nothing is cached while disabled.
TEST(CpuCache, ReusesFreedBlocksOfTheSameSize) {
  install_cpu_cache();
  set_cpu_cache_enabled(true);
  ASSERT_TRUE(cpu_cache_enabled());
  void* first = nullptr;
  {
    auto t = torch::empty({1000, 37});
    first = t.data_ptr();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u) << "64-byte aligned";
  }
  const auto before = cpu_cache_stats();
  auto again = torch::full({37, 1000}, 2.5);  // the same bytes: the same block
  EXPECT_EQ(again.data_ptr(), first);
  EXPECT_EQ(cpu_cache_stats().hits, before.hits + 1);
  EXPECT_EQ(again.sum().item<double>(), 2.5 * 37000);
  auto other = torch::empty({1000, 38});  // another size: not that block (it is in use anyway)
  EXPECT_NE(other.data_ptr(), first);
  set_cpu_cache_enabled(false);
  const auto off = cpu_cache_stats();
  { auto t = torch::empty({123, 45}); }
  auto t2 = torch::empty({123, 45});
  EXPECT_EQ(cpu_cache_stats().hits, off.hits) << "disabled: LibTorch's allocator";
  EXPECT_EQ(cpu_cache_stats().misses, off.misses);
  set_cpu_cache_enabled(true);
}

// Steps of one shape keep their blocks; steps whose shapes change (token-budget batches) give
// back at each step's end the blocks the step did not take, instead of hoarding them.
TEST(CpuCache, GivesBackWhatAWholeStepDidNotTake) {
  install_cpu_cache();
  set_cpu_cache_enabled(true);
  end_cpu_cache_step(), end_cpu_cache_step();  // nothing left from earlier tests
  ASSERT_EQ(cpu_cache_stats().cached_bytes, 0);
  auto step = [](int64_t rows) {  // a "step": activations held together, then freed
    std::vector<torch::Tensor> held;
    for (int i = 0; i < 4; ++i) held.push_back(torch::empty({rows, 64}));
    end_cpu_cache_step();
  };
  step(100);
  const auto fixed = cpu_cache_stats();
  for (int i = 0; i < 5; ++i) step(100);
  EXPECT_EQ(cpu_cache_stats().misses, fixed.misses) << "the same shape: every block taken back";
  EXPECT_EQ(cpu_cache_stats().returned, fixed.returned) << "and none given back";
  for (int64_t rows = 200; rows < 260; ++rows) step(rows);  // a new shape every step
  const auto varying = cpu_cache_stats();
  EXPECT_GT(varying.returned, fixed.returned);
  // the last two steps' 4 + 4 blocks (with the size rounding), not the 60 steps' 240
  EXPECT_LE(varying.cached_bytes, 8 * 270 * 64 * 4) << "at most two steps' blocks held";
}

TEST(Kernels, CrossEntropyEqualsReference) {
  KernelsGuard guard;
  const int64_t B = 3, T = 7, V = 50, pad = 1;
  for (auto dt : {torch::kDouble, torch::kFloat})
    for (double eps : {0.0, 0.1})
      for (int64_t pad_id : {pad, int64_t{-1}}) {
        SCOPED_TRACE("eps " + std::to_string(eps) + " pad_id " + std::to_string(pad_id) +
                     (dt == torch::kDouble ? " float64" : " float32"));
        torch::manual_seed(2);
        auto logits = (torch::randn({B, T, V}, dt) * 3);
        auto target = torch::randint(0, V, {B, T});
        target.index_put_({0, torch::indexing::Slice(4)}, pad);  // some padding
        std::vector<torch::Tensor> loss, nll, grad;
        std::vector<int64_t> tokens;
        for (auto k : {Kernels::Reference, Kernels::Fused}) {
          set_kernels(k);
          EXPECT_EQ(fused_cross_entropy_available(logits), k == Kernels::Fused);
          auto l = logits.clone().requires_grad_(true);
          auto r = label_smoothed_loss(l, target, eps, pad_id);
          (r.loss * 0.7).backward();
          loss.push_back(r.loss.detach()), nll.push_back(r.nll), grad.push_back(l.grad()), tokens.push_back(r.tokens);
        }
        const double tol = dt == torch::kDouble ? 1e-12 : 2e-5;
        EXPECT_EQ(tokens[1], tokens[0]);
        expect_close(loss[1], loss[0], tol, "loss");
        expect_close(nll[1], nll[0], tol, "nll");
        expect_close(grad[1], grad[0], tol, "gradient");
        if (pad_id >= 0) {
          EXPECT_EQ(grad[1][0][5].abs().sum().item<double>(), 0.0) << "padding gets no gradient";
        }
      }
}

// The CUDA attention path, LibTorch's scaled_dot_product_attention, run on the CPU against stx's
// core and the composed ops: causal self-attention with key padding, cross-attention, QK-norm.
// Compared at the real (unpadded) target positions, the only ones a loss or probe reads: causal
// SDPA leaves the key padding to the causal mask (model/attention.cpp), so padded queries differ.
TEST(Kernels, SdpaAttentionEqualsStxCore) {
  KernelsGuard guard;
  for (auto [arch, scheme, qk] :
       std::vector<std::tuple<Arch, Scheme, bool>>{{Arch::Decoder, Scheme::Pre, false},
                                                   {Arch::EncoderDecoder, Scheme::Post, false},
                                                   {Arch::Decoder, Scheme::Pre, true}}) {
    SCOPED_TRACE(to_string(arch) + "/" + to_string(scheme) + (qk ? "/qk_norm" : ""));
    auto m = test::tiny(arch, scheme);
    m.dropout = 0, m.qk_norm = qk;
    Transformer model(m);
    initialize(*model, 5);
    model->train();
    auto src = m.has_encoder() ? test::tokens(3, 6, m.vocab_size, 1) : torch::Tensor();
    auto tgt = test::tokens(3, 5, m.vocab_size, 2);
    ASSERT_GT(tgt.eq(m.pad_id).sum().item<int64_t>(), 0) << "the batch has padding";
    auto real = tgt.ne(m.pad_id).unsqueeze(-1).to(torch::kFloat);
    std::vector<torch::Tensor> logits, grads;
    for (auto core : {AttentionCore::Stx, AttentionCore::Sdpa}) {
      set_attention_core(core);
      model->zero_grad();
      auto y = model->forward(src, tgt) * real;
      y.pow(2).mean().backward();
      logits.push_back(y.detach());
      std::vector<torch::Tensor> g;
      for (auto& p : model->parameters()) g.push_back(p.grad().flatten());
      grads.push_back(torch::cat(g));
    }
    expect_close(logits[1], logits[0], 2e-5, "logits, SDPA vs stx");
    expect_close(grads[1], grads[0], 2e-5, "gradients, SDPA vs stx");
  }
}

TEST(Kernels, AdamPassEqualsReferenceOps) {
  KernelsGuard guard;
  for (std::string kind : {"adam", "adamw"}) {
    SCOPED_TRACE(kind);
    TrainConfig t;
    t.optimizer = parse_optimizer(kind), t.betas = {0.9, 0.98}, t.eps = 1e-8, t.weight_decay = 0.05;
    torch::manual_seed(4);
    const auto p0 = torch::randn({300, 70}), b0 = torch::randn({70});
    std::vector<torch::Tensor> after;
    for (auto k : {Kernels::Reference, Kernels::Fused}) {
      set_kernels(k);
      auto w = p0.clone().requires_grad_(true), b = b0.clone().requires_grad_(true);
      Optimizer opt({{"w", w}, {"b", b}}, t);
      for (int s = 0; s < 6; ++s) {
        opt.zero_grad();
        ((w.sum(1) + b.sum()).pow(2).mean() + w.pow(4).mean()).backward();
        opt.step(1e-2);
      }
      EXPECT_EQ(adam_fused_available(w), k == Kernels::Fused);
      after.push_back(torch::cat({w.detach().flatten(), b.detach()}));
    }
    // Bit-equal: the fused loop rounds where ATen's ops round (kernels/adam.h).
    EXPECT_TRUE(torch::equal(after[1], after[0])) << "max |diff| " << (after[1] - after[0]).abs().max().item<double>();
    EXPECT_GT((after[1] - torch::cat({p0.flatten(), b0})).abs().max().item<double>(), 1e-3) << "the steps moved";
  }
}

TEST(Kernels, ResidualNormEqualsReference) {
  KernelsGuard guard;
  for (auto kind : {NormKind::LayerNorm, NormKind::RMSNorm})
    for (double alpha : {1.0, 2.7}) {
      SCOPED_TRACE(to_string(kind) + " alpha " + std::to_string(alpha));
      torch::manual_seed(9);
      const int64_t d = 24;
      auto x = torch::randn({3, 5, d}, torch::kDouble).requires_grad_(true);
      auto g = torch::randn({3, 5, d}, torch::kDouble).requires_grad_(true);
      auto w = (torch::randn({d}, torch::kDouble) + 1).requires_grad_(true);
      auto b = kind == NormKind::LayerNorm ? torch::randn({d}, torch::kDouble).requires_grad_(true) : torch::Tensor();
      auto R = torch::randn({3, 5, d}, torch::kDouble);
      std::vector<torch::Tensor> inputs{x, g, w};
      if (b.defined()) inputs.push_back(b);
      auto s = alpha * x + g;  // the reference: scale, add, norm (norm.h's formulas)
      auto ref = kind == NormKind::LayerNorm ? torch::layer_norm(s, {d}, w, b, 1e-5)
                                             : s * torch::rsqrt(s.pow(2).mean(-1, true) + 1e-5) * w;
      auto fus = residual_norm(x, g, alpha, kind, w, b, 1e-5);
      expect_close(fus, ref, 1e-12, "y");
      auto g_ref = torch::autograd::grad({(ref * R).sum()}, inputs);
      auto g_fus = torch::autograd::grad({(fus * R).sum()}, inputs);
      const char* names[] = {"dx", "dg", "dweight", "dbias"};
      for (size_t i = 0; i < inputs.size(); ++i) expect_close(g_fus[i], g_ref[i], 1e-12, names[i]);
    }
}

TEST(Kernels, VectorExpWithinTwoUlp) {
  // Every 97th float in [−87.3, 88.3] and a few special points, against double-precision exp.
  double worst = 0;
  int64_t checked = 0;
  auto check = [&](float x) {
    const double want = std::exp(static_cast<double>(x)), got = vec::exp(x);
    worst = std::max(worst, std::abs(got - want) / want);
    ++checked;
  };
  for (float x : {-87.3f, -20.f, -1.f, -1e-7f, 0.f, 1e-7f, 0.5f, 1.f, 10.f, 88.3f}) check(x);
  uint32_t lo, hi;
  const float a = -87.3f, b = 88.3f;
  std::memcpy(&lo, &a, 4), std::memcpy(&hi, &b, 4);
  for (uint32_t bits = 0x80000000u; bits <= lo; bits += 97) {  // negative floats, −0 … −87.3
    float x;
    std::memcpy(&x, &bits, 4);
    check(x);
  }
  for (uint32_t bits = 0; bits <= hi; bits += 97) {  // 0 … 88.3
    float x;
    std::memcpy(&x, &bits, 4);
    check(x);
  }
  EXPECT_GT(checked, 20000000);
  EXPECT_LE(worst, 2.5e-7) << "max relative error (2 ulp = 2.4e-7)";
  EXPECT_EQ(vec::exp(-1e9f), vec::exp(-87.3f)) << "clamped below";
}

// vec::tanh (soft-capping, softcap_rows.h): absolute error within a few ulp of 1 over the bend and
// the tails, exact at 0, saturating to ±1 without overflow.
TEST(Kernels, VectorTanhWithinFewUlpOfOne) {
  double worst = 0;
  for (float x = -30.f; x <= 30.f; x += 1.0f / 1024)
    worst = std::max(worst, std::abs(double(vec::tanh(x)) - std::tanh(double(x))));
  EXPECT_LE(worst, 3.0e-7) << "max absolute error (ulp of 1 = 1.2e-7)";
  EXPECT_EQ(vec::tanh(0.f), 0.f);
  EXPECT_EQ(vec::tanh(1e9f), 1.f);
  EXPECT_EQ(vec::tanh(-1e9f), -1.f);
  EXPECT_NEAR(vec::tanh(0.3), std::tanh(0.3), 1e-15) << "float64";
}

}  // namespace
}  // namespace stx
