// tests/test_optimizer_checkpoint.cpp — stx/train/optimizer (SGD, Adam, AdamW against the first
// two steps on a small quadratic, worked out by hand and in double precision; state round trips
// and bad state) and stx/train/checkpoint (bitwise exact resume including the RNG, InputErrors
// for bad files, resume_incompatibility). OptimizerParity runs only under
// tests/ref/test_optimizer_parity.py, which passes torch.optim's results in STX_OPT_PARITY_FILE.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>

#include "helpers.h"
#include "stx/config/config_io.h"
#include "stx/core/error.h"
#include "stx/io/model_io.h"
#include "stx/io/safetensors.h"
#include "stx/kernels/adam_loop.h"
#include "stx/kernels/kernels.h"
#include "stx/train/checkpoint.h"
#include "stx/train/optimizer.h"

namespace stx {
namespace {

using test::error_of;

std::string tmp_path(const std::string& name) {
  return ::testing::TempDir() + "/stx_optck_" + std::to_string(::getpid()) + "_" + name;
}

TrainConfig train_cfg(const std::string& opt, double wd) {
  TrainConfig t;
  t.optimizer = parse_optimizer(opt), t.betas = {0.9, 0.999}, t.eps = 1e-8, t.weight_decay = wd, t.momentum = 0.9;
  return t;
}

// f(p) = ½ Σ a·p², so ∇f = a·p. Two steps at lr 0.1; returns p after each step.
std::vector<std::vector<float>> run_quadratic(const TrainConfig& t) {
  auto p = torch::tensor({1.0f, -2.0f}).requires_grad_(true);
  auto a = torch::tensor({1.0f, 3.0f});
  Optimizer opt({{"p", p}}, t);
  std::vector<std::vector<float>> out;
  for (int s = 0; s < 2; ++s) {
    opt.zero_grad();
    (0.5 * (a * p * p).sum()).backward();
    opt.step(0.1);
    out.push_back({p[0].item<float>(), p[1].item<float>()});
  }
  EXPECT_EQ(opt.steps(), 2);
  return out;
}

// Adam/AdamW in double precision, straight from the papers (m̂, v̂, decoupled or L2 decay).
std::vector<std::vector<double>> adam_reference(bool decoupled, double wd) {
  const double lr = 0.1, b1 = 0.9, b2 = 0.999, eps = 1e-8, a[2] = {1, 3};
  double p[2] = {1, -2}, m[2] = {0, 0}, v[2] = {0, 0};
  std::vector<std::vector<double>> out;
  for (int t = 1; t <= 2; ++t) {
    for (int i = 0; i < 2; ++i) {
      double g = a[i] * p[i] + (decoupled ? 0 : wd * p[i]);
      if (decoupled) p[i] *= 1 - lr * wd;
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      const double mh = m[i] / (1 - std::pow(b1, t)), vh = v[i] / (1 - std::pow(b2, t));
      p[i] -= lr * mh / (std::sqrt(vh) + eps);
    }
    out.push_back({p[0], p[1]});
  }
  return out;
}

void expect_near(const std::vector<std::vector<float>>& got, const std::vector<std::vector<double>>& want) {
  for (size_t s = 0; s < want.size(); ++s)
    for (size_t i = 0; i < want[s].size(); ++i)
      EXPECT_NEAR(got[s][i], want[s][i], 1e-6 * std::max(1.0, std::abs(want[s][i])))
          << "step " << s + 1 << " p[" << i << "]";
}

TEST(Optimizer, SgdMomentumWeightDecayByHand) {
  // d = g + 0.01p; b₁ = d₁, b₂ = 0.9b₁ + d₂; p ← p − 0.1b.
  // step 1: d = [1.01, −6.02] → p = [0.899, −1.398]
  // step 2: d = [0.90799, −4.20798], b = [1.81699, −9.62598] → p = [0.717301, −0.435402]
  expect_near(run_quadratic(train_cfg("sgd", 0.01)), {{0.899, -1.398}, {0.717301, -0.435402}});
  auto t = train_cfg("sgd", 0.0);
  t.momentum = 0;  // plain gradient descent: p ← p − 0.1·a·p
  expect_near(run_quadratic(t), {{0.9, -1.4}, {0.81, -0.98}});
}

TEST(Optimizer, AdamL2ByHand) {
  // Step 1 moves each coordinate by lr·g/(|g| + ε) ≈ 0.1 against the sign of g.
  auto got = run_quadratic(train_cfg("adam", 0.01));
  EXPECT_NEAR(got[0][0], 0.9, 1e-6);
  EXPECT_NEAR(got[0][1], -1.9, 1e-6);
  expect_near(got, adam_reference(false, 0.01));
}

TEST(Optimizer, AdamWDecoupledByHand) {
  // Step 1: p·(1 − 0.1·0.1) − 0.1·sign(g) = [0.89, −1.88].
  auto got = run_quadratic(train_cfg("adamw", 0.1));
  EXPECT_NEAR(got[0][0], 0.89, 1e-6);
  EXPECT_NEAR(got[0][1], -1.88, 1e-6);
  expect_near(got, adam_reference(true, 0.1));
  // AdamW's decay is not L2: with the same wd the two optimizers differ.
  auto l2 = run_quadratic(train_cfg("adam", 0.1));
  EXPECT_GT(std::abs(l2[1][0] - got[1][0]), 1e-3);
}

TEST(Optimizer, SkipsParametersWithoutGradAndZeroGradKeepsTensors) {
  auto p = torch::tensor({1.0f, 2.0f}).requires_grad_(true);
  auto q = torch::tensor({3.0f}).requires_grad_(true);
  Optimizer opt({{"p", p}, {"q", q}}, train_cfg("adam", 0.01));
  (p * p).sum().backward();
  auto grad_ptr = p.grad().data_ptr();
  opt.step(0.1);
  EXPECT_EQ(q.item<float>(), 3.0f);
  EXPECT_FALSE(q.grad().defined());
  for (auto& [name, t] : opt.state())
    if (name.find(".q") != std::string::npos) {
      EXPECT_EQ(t.abs().sum().item<float>(), 0.0f) << name;
    }
  opt.zero_grad();
  EXPECT_EQ(p.grad().data_ptr(), grad_ptr);
  EXPECT_EQ(p.grad().abs().sum().item<float>(), 0.0f);
}

// The flat path (gradients accumulated by autograd into the flat buffer, the update run over
// 64 Ki-element chunks whose boundaries fall inside parameters) against the per-parameter path
// (gradients handed in as fresh tensors each step, which the flat path cannot use): same inputs,
// bit-identical parameters and state after every step, for each optimizer.
TEST(Optimizer, FlatChunkedUpdateEqualsPerParameterUpdate) {
  for (auto [name, wd] :
       std::vector<std::pair<std::string, double>>{{"adam", 0.01}, {"adam", 0.0}, {"adamw", 0.1}, {"sgd", 0.01}}) {
    torch::manual_seed(3);
    const std::vector<std::vector<int64_t>> shapes{{300, 301}, {7}, {1000, 70}, {5, 3}};
    std::vector<torch::Tensor> init, coef;
    for (auto& s : shapes) init.push_back(torch::randn(s)), coef.push_back(torch::rand(s));
    NamedTensors a, b;
    for (size_t i = 0; i < shapes.size(); ++i) {
      a.emplace_back("p" + std::to_string(i), init[i].clone().requires_grad_(true));
      b.emplace_back("p" + std::to_string(i), init[i].clone().requires_grad_(true));
    }
    Optimizer flat(a, train_cfg(name, wd)), loop(b, train_cfg(name, wd));
    for (int step = 1; step <= 4; ++step) {
      flat.zero_grad();
      torch::Tensor loss = torch::zeros({});
      for (size_t i = 0; i < a.size(); ++i) loss = loss + (coef[i] * a[i].second.pow(3)).sum();
      loss.backward();  // ∂/∂p Σ c·p³ = 3c·p²
      if (step > 1) {   // from the second step on, every gradient lives in one buffer, in order
        for (size_t i = 1; i < a.size(); ++i)
          ASSERT_EQ(static_cast<const char*>(a[i].second.grad().data_ptr()),
                    static_cast<const char*>(a[i - 1].second.grad().data_ptr()) + a[i - 1].second.numel() * 4)
              << name << " step " << step;
      }
      torch::Tensor loss_b = torch::zeros({});
      std::vector<torch::Tensor> pb;
      for (size_t i = 0; i < b.size(); ++i)
        loss_b = loss_b + (coef[i] * b[i].second.pow(3)).sum(), pb.push_back(b[i].second);
      auto gb = torch::autograd::grad({loss_b}, pb);  // the same gradients, as new tensors every step
      for (size_t i = 0; i < b.size(); ++i) b[i].second.mutable_grad() = gb[i];
      flat.step(1e-2), loop.step(1e-2);
      for (size_t i = 0; i < a.size(); ++i)
        ASSERT_TRUE(torch::equal(a[i].second.detach(), b[i].second.detach()))
            << name << " wd " << wd << " step " << step << " p" << i;
    }
    auto sa = flat.state(), sb = loop.state();
    ASSERT_EQ(sa.size(), sb.size());
    for (size_t i = 0; i < sa.size(); ++i)
      EXPECT_TRUE(torch::equal(sa[i].second, sb[i].second)) << name << " " << sa[i].first;
  }
}

TEST(Optimizer, StateNamesRoundTripAndBadState) {
  auto w = torch::randn({3, 2}).requires_grad_(true);
  Optimizer a({{"w", w}}, train_cfg("adam", 0.0));
  w.sum().backward();
  a.step(0.01);
  auto st = a.state();
  std::vector<std::string> names;
  for (auto& [n, _] : st) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"optim.step", "optim.exp_avg.w", "optim.exp_avg_sq.w"}));
  EXPECT_EQ(st[0].second.scalar_type(), torch::kInt64);

  Optimizer b({{"w", w}}, train_cfg("adam", 0.0));
  b.load_state(st, "ck");
  EXPECT_EQ(b.steps(), 1);
  for (size_t i = 0; i < st.size(); ++i) EXPECT_TRUE(torch::equal(b.state()[i].second, st[i].second)) << names[i];

  auto missing = NamedTensors(st.begin(), st.begin() + 2);
  auto msg = error_of([&] { b.load_state(missing, "ck.safetensors"); });
  EXPECT_NE(msg.find("ck.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("missing optimizer tensor 'optim.exp_avg_sq.w'"), std::string::npos) << msg;
  auto extra = st;
  extra.emplace_back("optim.momentum.w", torch::zeros({3, 2}));
  EXPECT_NE(error_of([&] { b.load_state(extra, "ck"); }).find("unexpected optimizer tensor 'optim.momentum.w'"),
            std::string::npos);
  auto shape = st;
  shape[1].second = torch::zeros({2, 3});
  msg = error_of([&] { b.load_state(shape, "ck"); });
  EXPECT_NE(msg.find("'optim.exp_avg.w' has shape [2, 3]"), std::string::npos) << msg;
  EXPECT_EQ(b.steps(), 1);  // nothing was loaded from the bad states

  Optimizer s({{"w", w}}, train_cfg("sgd", 0.0));
  msg = error_of([&] { s.load_state(st, "ck"); });
  EXPECT_NE(msg.find("unexpected optimizer tensor 'optim.exp_avg.w'"), std::string::npos) << msg;
}

// ---- checkpoints ----

NamedTensors trainable(TransformerImpl& m) {
  NamedTensors out;
  for (auto& [n, t] : m.state())
    if (t.requires_grad()) out.emplace_back(n, t);
  return out;
}

struct TinyRun {
  Config cfg;
  Transformer model{nullptr};
  std::unique_ptr<Optimizer> opt;
  explicit TinyRun(const std::string& optimizer = "adam") {
    cfg.model = test::tiny(Arch::EncoderDecoder, Scheme::Pre);
    cfg.model.dropout = 0.2;  // the trajectory depends on the RNG
    cfg.train.optimizer = parse_optimizer(optimizer);
    model = Transformer(cfg.model);
    initialize(*model, 3);
    model->train();
    opt = std::make_unique<Optimizer>(trainable(*model), cfg.train);
  }
  void step() {
    auto src = test::tokens(2, 5, 11, 1), tgt = test::tokens(2, 4, 11, 2);
    opt->zero_grad();
    auto loss = model->forward(src, tgt).pow(2).mean();
    EXPECT_TRUE(std::isfinite(loss.item<double>()));
    loss.backward();
    opt->step(1e-2);
  }
};

NamedTensors snapshot(TransformerImpl& m, const Optimizer& o) {
  NamedTensors out;
  for (auto& [n, t] : m.state()) out.emplace_back(n, t.detach().clone());
  for (auto& nt : o.state()) out.push_back(nt);
  return out;
}

void expect_bitwise(const NamedTensors& a, const NamedTensors& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_TRUE(torch::equal(a[i].second, b[i].second))
        << a[i].first << ": max |a − b| " << (a[i].second - b[i].second).abs().max().item<double>() << ", NaNs "
        << a[i].second.isnan().sum().item<int64_t>() << " / " << b[i].second.isnan().sum().item<int64_t>();
  }
}

TEST(Checkpoint, RoundTripIsBitwiseAndResumesExactly) {
  for (std::string name : {"adam", "sgd"}) {
    SCOPED_TRACE(name);
    TinyRun run(name);
    run.step();
    const auto path = tmp_path("rt_" + name + ".safetensors");
    nlohmann::json ts = {{"step", 1}, {"best_valid_loss", 3.25}};
    save_checkpoint(path, *run.model, *run.opt, run.cfg, ts);
    const auto saved = snapshot(*run.model, *run.opt);
    const auto rand_after_save = torch::rand({6});
    run.step();  // the uninterrupted second step (dropout draws from the RNG)
    const auto uninterrupted = snapshot(*run.model, *run.opt);
    run.step();  // perturb further

    auto ck = read_checkpoint(path);
    EXPECT_EQ(config_to_json(ck.config), config_to_json(run.cfg));
    EXPECT_EQ(ck.train_state, ts);
    EXPECT_EQ(ck.rng.scalar_type(), torch::kUInt8);
    restore_checkpoint(ck, *run.model, *run.opt, path);
    {
      SCOPED_TRACE("restored = saved");
      expect_bitwise(snapshot(*run.model, *run.opt), saved);
    }
    EXPECT_EQ(run.opt->steps(), 1);
    EXPECT_TRUE(torch::equal(torch::rand({6}), rand_after_save));

    run.step();  // after the same rand draw, the next step is the uninterrupted one, dropout masks included
    {
      SCOPED_TRACE("resumed step = uninterrupted step");
      expect_bitwise(snapshot(*run.model, *run.opt), uninterrupted);
    }
    // The comparison is sharp: the same restore with another RNG state gives another step.
    restore_checkpoint(ck, *run.model, *run.opt, path);
    torch::manual_seed(99);
    run.step();
    EXPECT_FALSE(torch::equal(snapshot(*run.model, *run.opt)[0].second, uninterrupted[0].second));
  }
}

TEST(Checkpoint, BadFilesAreInputErrors) {
  TinyRun run;
  run.step();
  const auto good = tmp_path("good.safetensors");
  save_checkpoint(good, *run.model, *run.opt, run.cfg, {{"step", 1}});

  const auto corrupt = tmp_path("corrupt.safetensors");
  std::ofstream(corrupt, std::ios::binary) << "this is not a safetensors file at all";
  auto msg = error_of([&] { read_checkpoint(corrupt); });
  EXPECT_NE(msg.find(corrupt), std::string::npos) << msg;

  const auto model_file = tmp_path("model.safetensors");
  save_model(model_file, *run.model, run.cfg);
  msg = error_of([&] { read_checkpoint(model_file); });
  EXPECT_NE(msg.find("stx-model/1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("stx-checkpoint/1"), std::string::npos) << msg;

  // Rewrite the good file without one tensor or with broken metadata.
  auto rewrite = [&](const std::string& name, const std::string& drop, const std::string& key,
                     const std::string& value) {
    auto f = load_safetensors(good);
    NamedTensors keep;
    for (auto& nt : f.tensors)
      if (nt.first != drop) keep.push_back(nt);
    if (!key.empty()) f.metadata[key] = value;
    const auto path = tmp_path(name);
    save_safetensors(path, keep, f.metadata);
    return path;
  };
  std::string dropped;
  for (auto& [n, _] : load_safetensors(good).tensors)
    if (dropped.empty() && n.rfind("optim.exp_avg_sq.", 0) == 0) dropped = n;
  const auto no_optim = rewrite("no_optim.safetensors", dropped, "", "");
  auto ck = read_checkpoint(no_optim);
  const auto before = snapshot(*run.model, *run.opt);
  msg = error_of([&] { restore_checkpoint(ck, *run.model, *run.opt, no_optim); });
  EXPECT_NE(msg.find(no_optim), std::string::npos) << msg;
  EXPECT_NE(msg.find("missing optimizer tensor '" + dropped + "'"), std::string::npos) << msg;
  expect_bitwise(snapshot(*run.model, *run.opt), before);  // nothing restored

  msg = error_of([&] { read_checkpoint(rewrite("no_rng.safetensors", "rng.torch", "", "")); });
  EXPECT_NE(msg.find("rng.torch"), std::string::npos) << msg;
  msg = error_of([&] { read_checkpoint(rewrite("bad_json.safetensors", "", "stx.train", "{oops")); });
  EXPECT_NE(msg.find("stx.train"), std::string::npos) << msg;
  msg = error_of(
      [&] { read_checkpoint(rewrite("bad_cfg.safetensors", "", "stx.config", R"({"model":{"d_model":-1}})")); });
  EXPECT_NE(msg.find("model.d_model"), std::string::npos) << msg;

  ck = read_checkpoint(good);
  ck.rng = ck.rng.narrow(0, 0, 10).clone();
  msg = error_of([&] { restore_checkpoint(ck, *run.model, *run.opt, good); });
  EXPECT_NE(msg.find("rng.torch"), std::string::npos) << msg;
}

TEST(Checkpoint, ResumeIncompatibilityNamesFirstKey) {
  Config saved;
  Config now = saved;
  EXPECT_EQ(resume_incompatibility(saved, now), "");
  now.train.max_steps = saved.train.max_steps * 2;
  now.train.log_every = 1;
  now.train.eval_every = 7;
  now.train.checkpoint_every = 9;
  now.train.on_divergence = OnDivergence::Rollback;
  EXPECT_EQ(resume_incompatibility(saved, now), "");
  now.model.d_model = 256;
  now.train.lr = 1.0;
  EXPECT_EQ(resume_incompatibility(saved, now), "model.d_model is 512 in the checkpoint but 256 now");
  now = saved;
  now.train.optimizer = OptimizerKind::SGD;
  EXPECT_EQ(resume_incompatibility(saved, now), "train.optimizer is adam in the checkpoint but sgd now");
  now = saved;
  now.train.betas = {0.9, 0.999};
  EXPECT_EQ(resume_incompatibility(saved, now), "train.betas is [0.9,0.98] in the checkpoint but [0.9,0.999] now");
  now = saved;
  now.data.corpus = "de-en";
  EXPECT_EQ(resume_incompatibility(saved, now), "data.corpus is bible-es-en in the checkpoint but de-en now");
}

// ---- parity with torch.optim (driven by tests/ref/test_optimizer_parity.py) ----

TEST(OptimizerParity, MatchesTorchOptim) {
  const char* file = std::getenv("STX_OPT_PARITY_FILE");
  if (!file) GTEST_SKIP() << "STX_OPT_PARITY_FILE not set (run tests/ref/test_optimizer_parity.py)";
  auto f = load_safetensors(file);
  auto cases = nlohmann::json::parse(f.metadata.at("cases"));
  auto get = [&](const std::string& n) {
    auto* t = f.find(n);
    if (!t) throw std::runtime_error(std::string(file) + ": no tensor " + n);
    return *t;
  };
  ASSERT_FALSE(cases.empty());
  for (auto& c : cases) {
    const std::string name = c["name"];
    // A "perturbed" case has one expectation moved on purpose: the comparison must catch it.
    const bool perturbed = c.value("perturbed", false);
    TrainConfig t;
    t.optimizer = parse_optimizer(c["optimizer"].get<std::string>());
    t.betas = {c["betas"][0], c["betas"][1]};
    t.eps = c["eps"];
    t.weight_decay = c["weight_decay"];
    t.momentum = c["momentum"];
    if (c.value("weight_decay_mode", "coupled") == "independent")
      t.weight_decay_mode = WeightDecayMode::Independent, t.lr = c["peak_lr"];
    NamedTensors params;
    for (const std::string p : c["params"])
      params.emplace_back(p, get(name + ".init." + p).clone().requires_grad_(true));
    // Both implementations: the fused loop (kernels/adam.h) and the ATen ops (Reference).
    for (const Kernels k : {Kernels::Fused, Kernels::Reference}) {
      set_kernels(k);
      const std::string impl = k == Kernels::Fused ? "fused" : "aten";
      NamedTensors ps;
      for (auto& [p, x] : params) ps.emplace_back(p, x.detach().clone().requires_grad_(true));
      Optimizer opt(ps, t);
      int64_t bitwise = 0, total = 0, elements = 0, equal_elements = 0;
      std::string differs;
      for (size_t s = 0; s < c["lr"].size(); ++s) {
        const std::string step = std::to_string(s + 1);
        for (auto& [p, x] : ps) x.mutable_grad() = get(name + ".grad." + step + "." + p).clone();
        opt.step(c["lr"][s].get<double>());
        for (auto& [p, x] : ps) {
          auto want = get(name + ".expect." + step + "." + p);
          const int64_t eq = x.detach().eq(want).sum().item<int64_t>();
          if (eq != want.numel())
            differs += " step " + step + " " + p + " (" + std::to_string(want.numel() - eq) + " elements, max |diff| " +
                       std::to_string((x.detach() - want).abs().max().item<double>()) + ")";
          bitwise += eq == want.numel(), equal_elements += eq, elements += want.numel(), ++total;
        }
      }
      if (perturbed) {
        EXPECT_FALSE(differs.empty()) << name << " (" << impl << "): the perturbed expectation was not detected";
        std::cout << "[parity] " << name << " (" << impl << "): detected" << differs << "\n";
      } else {
        EXPECT_TRUE(differs.empty()) << name << " (" << impl << "): differs from torch.optim at" << differs;
        std::cout << "[parity] " << name << " (" << impl << "): " << bitwise << "/" << total << " (step, tensor) and "
                  << equal_elements << "/" << elements << " elements bit-equal to torch.optim\n";
      }
    }
    set_kernels(Kernels::Fused);
  }
  std::cout << "[parity] the fused loop's square root is torch.sqrt's (MKL vmsSqrt): "
            << (adam_sqrt_is_torchs() ? "yes" : "no") << "\n";
}

// Timing for the record: build/tests/stx_tests --gtest_also_run_disabled_tests
// --gtest_filter='OptimizerBench.*' (set OMP_NUM_THREADS).
TEST(OptimizerBench, DISABLED_Adam10M) {
  NamedTensors params;
  for (int i = 0; i < 10; ++i)
    params.emplace_back("w" + std::to_string(i), torch::randn({1000, 1000}).requires_grad_(true));
  for (auto& [_, p] : params) p.mutable_grad() = torch::randn_like(p);
  Optimizer opt(params, TrainConfig{});
  opt.step(1e-3);
  const int n = 20;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) opt.step(1e-3);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / n;
  std::cout << "[bench] adam (weight_decay " << TrainConfig{}.weight_decay << "), 10M parameters: " << ms
            << " ms/step\n";
}

}  // namespace
}  // namespace stx
