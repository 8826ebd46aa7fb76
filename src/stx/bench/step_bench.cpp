// stx/bench/step_bench.cpp — see step_bench.h.
#include "stx/bench/step_bench.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <time.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <numeric>

#include "stx/core/cpu_cache.h"
#include "stx/core/device.h"
#include "stx/core/error.h"
#include "stx/core/runtime.h"
#include "stx/kernels/kernels.h"
#include "stx/model/init.h"
#include "stx/model/transformer.h"
#include "stx/train/optimizer.h"
#include "stx/train/train_step.h"

namespace stx::bench {

using Clock = std::chrono::steady_clock;

double current_rss_mb() {
  std::ifstream in("/proc/self/statm");
  long pages = 0, resident = 0;
  in >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / 1e6;
}

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) * 1024.0 / 1e6;  // ru_maxrss is in KiB on Linux
}

namespace {

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Random tokens [B, T] in [0, V) that avoid the padding id (so every position counts).
torch::Tensor random_tokens(int64_t B, int64_t T, int64_t V, int64_t pad_id) {
  if (pad_id < 0) return torch::randint(0, V, {B, T}, torch::kLong);
  auto t = torch::randint(0, V - 1, {B, T}, torch::kLong);
  return t + t.ge(pad_id).to(torch::kLong);
}

// The batch of one step: (src, tgt_in, tgt_out) as the architecture needs them.
Batch make_batch(const ModelConfig& m, int64_t B, int64_t T, const torch::Device& dev) {
  using torch::indexing::Slice;
  Batch b;
  auto seq = random_tokens(B, T + 1, m.vocab_size, m.pad_id).to(dev);
  auto in = seq.index({Slice(), Slice(0, T)}), out = seq.index({Slice(), Slice(1, T + 1)});
  if (m.arch == Arch::Decoder) b.tgt_in = in;
  else if (m.arch == Arch::Encoder) b.src = in;
  else b.src = random_tokens(B, T, m.vocab_size, m.pad_id).to(dev), b.tgt_in = in;
  b.tgt_out = out;
  return b;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

StepBenchResult run_step_bench(const StepBenchOptions& o) {
  const auto& cfg = o.config;
  const auto& m = cfg.model;
  StepBenchResult r;
  r.name = o.name, r.arch = to_string(m.arch), r.scheme = to_string(m.scheme);
  r.seq = o.seq > 0 ? o.seq : m.max_len;
  r.batch = o.batch > 0 ? o.batch : std::max<int64_t>(1, cfg.train.max_tokens / r.seq);
  if (r.seq > m.max_len)
    throw InputError(
        fmt::format("--seq {} exceeds model.max_len = {} (allowed: 1..{}; or raise model.max_len with --set)", r.seq,
                    m.max_len, m.max_len));
  if (o.steps < 1) throw InputError(fmt::format("--steps {} is not allowed (must be ≥ 1)", o.steps));
  if (o.warmup < 0) throw InputError(fmt::format("--warmup {} is not allowed (must be ≥ 0)", o.warmup));
  if (m.vocab_size < 2)
    throw InputError("model.vocab_size must be ≥ 2 for stx bench (random tokens avoid the padding id)");
  r.steps = o.steps, r.warmup = o.warmup;
  r.tokens_per_step = r.batch * r.seq;
  r.layers = (m.has_encoder() ? m.encoder_layers : 0) + (m.has_decoder() ? m.decoder_layers : 0);
  r.d_model = m.d_model;
  if (o.threads > 0) set_threads(o.threads);
  else use_default_threads(m.d_model, r.tokens_per_step);
  r.threads = at::get_num_threads();
  set_kernels(o.reference_kernels ? Kernels::Reference : Kernels::Fused);
  r.kernels = o.reference_kernels ? "reference" : o.composed_layers ? "composed" : "fused";
  set_cpu_cache_enabled(!o.system_allocator);
  r.allocator = cpu_cache_enabled() ? "cache" : "system";
  r.head_products = head_products() == HeadProducts::Band ? "band" : "blas";
  const auto device = resolve_device(to_string(cfg.train.device));
  r.device = device.str();
  r.rss_before_mb = current_rss_mb();

  // The trainer's set-up (trainer.cpp): seeded init, then an independent dropout stream.
  const auto seed = cfg.train.seed;
  torch::manual_seed(seed);
  Transformer model(m);
  initialize(*model, static_cast<uint64_t>(seed));
  model->to(device);
  model->set_checkpoint_activations(cfg.train.checkpoint_activations);
  model->set_layer_path(o.composed_layers ? LayerPath::Composed : LayerPath::Fused);
  {
    const auto c = model->layer_path(torch::empty({0}, model->parameters().front().options()));
    r.layer_path = c.path == LayerPath::Fused ? "fused" : "composed", r.layer_path_why = c.why;
  }
  r.checkpoint_activations = cfg.train.checkpoint_activations;
  model->train();
  torch::manual_seed(seed + 1);
  NamedTensors params;
  for (auto& p : model->named_parameters(true)) params.emplace_back(p.key(), p.value());
  for (auto& p : params) r.parameters += p.second.numel();
  Optimizer opt(params, cfg.train);
  TrainStep step(*model, opt, cfg, device);  // the trainer's step (train/train_step.h)
  step.set_direct_grads(!o.autograd_grads);
  r.grads = o.autograd_grads ? "autograd" : "direct";
  const auto batch = make_batch(m, r.batch, r.seq, device);
  r.rss_model_mb = current_rss_mb();

  auto forward_loss = [&] {
    auto ls = step.forward(batch);
    return ls.loss / static_cast<double>(ls.tokens);
  };
  // One step; the phase times are only read (with a device sync) when `timed`.
  std::vector<double> step_s;
  double fwd_s = 0, bwd_s = 0, opt_s = 0, cpu_s = 0;
  torch::Tensor last_loss;
  auto last_line = Clock::now();
  const int64_t total = o.warmup + o.steps;
  if (o.progress && r.layers >= 200)
    std::cerr << fmt::format("bench: {} layers, {} parameters; {} warm-up + {} timed steps\n", r.layers, r.parameters,
                             o.warmup, o.steps);
  CpuCacheStats cache_at_warm;
  for (int64_t i = 0; i < total; ++i) {
    const bool timed = i >= o.warmup;
    if (i == o.warmup) cache_at_warm = cpu_cache_stats();
    synchronize(device);
    const auto t0 = Clock::now();
    const double c0 = cpu_seconds();
    step.begin();
    auto loss = forward_loss();
    if (timed) synchronize(device);
    const auto t1 = Clock::now();
    loss.backward();
    if (timed) synchronize(device);
    const auto t2 = Clock::now();
    step.apply(step.grad_norm(), cfg.train.lr);
    synchronize(device);
    const auto t3 = Clock::now();
    const double c3 = cpu_seconds();
    last_loss = loss.detach();
    if (timed) {
      cpu_s += c3 - c0;
      step_s.push_back(std::chrono::duration<double>(t3 - t0).count());
      fwd_s += std::chrono::duration<double>(t1 - t0).count();
      bwd_s += std::chrono::duration<double>(t2 - t1).count();
      opt_s += std::chrono::duration<double>(t3 - t2).count();
    }
    if (o.progress && seconds_since(last_line) >= 2.0) {
      std::cerr << fmt::format("bench: {} step {}/{}  {:.0f} ms\n", timed ? "timed" : "warm-up",
                               timed ? i - o.warmup + 1 : i + 1, timed ? o.steps : o.warmup,
                               1e3 * std::chrono::duration<double>(t3 - t0).count());
      last_line = Clock::now();
    }
  }
  r.peak_rss_mb = peak_rss_mb();
  if (r.allocator == "cache") {
    const auto c = cpu_cache_stats();
    const auto hits = c.hits - cache_at_warm.hits, requests = hits + c.misses - cache_at_warm.misses;
    r.cache_hit_rate = requests > 0 ? static_cast<double>(hits) / static_cast<double>(requests) : 0;
    r.cache_returned = c.returned - cache_at_warm.returned;
  }
  r.final_loss = last_loss.item<double>();
  if (!o.profile.empty()) {  // LibTorch's profiler over a few more steps: every op, forward and backward
    torch::autograd::profiler::RecordProfile trace(o.profile);
    for (int i = 0; i < kProfiledSteps; ++i) {
      step.begin();
      forward_loss().backward();
      step.apply(step.grad_norm(), cfg.train.lr);
    }
  }

  const double n = static_cast<double>(step_s.size());
  const double mean_s = std::accumulate(step_s.begin(), step_s.end(), 0.0) / n;
  r.ms_mean = 1e3 * mean_s;
  r.ms_median = 1e3 * median(step_s);
  r.ms_min = 1e3 * *std::min_element(step_s.begin(), step_s.end());
  r.cpu_ms = 1e3 * cpu_s / n;
  r.ms_forward = 1e3 * fwd_s / n, r.ms_backward = 1e3 * bwd_s / n, r.ms_optimizer = 1e3 * opt_s / n;
  r.tokens_per_s = static_cast<double>(r.tokens_per_step) / mean_s;

  const auto gemms = step_gemms(m, r.batch, r.seq);
  r.flops_per_step = total_flops(gemms);
  r.gflops = r.flops_per_step / mean_s / 1e9;
  if (o.sgemm) {
    r.sgemm = measure_sgemm_rate(gemms, device, device.is_cuda() ? torch::kBFloat16 : torch::kFloat32);
    r.sgemm_gflops = r.sgemm.gflops;
    r.sgemm_fraction = r.sgemm_gflops > 0 ? r.gflops / r.sgemm_gflops : 0;
    r.gemm_ms = 1e3 * r.sgemm.step_seconds;
    r.best_gemm_ms = 1e3 * r.sgemm.best_step_seconds;
  }
  return r;
}

nlohmann::json StepBenchResult::to_json() const {
  nlohmann::json shapes = nlohmann::json::array();
  for (const auto& t : sgemm.shapes)
    shapes.push_back({{"what", t.gemm.what},
                      {"batch", t.gemm.batch},
                      {"m", t.gemm.m},
                      {"n", t.gemm.n},
                      {"k", t.gemm.k},
                      {"trans_a", t.gemm.trans_a},
                      {"trans_b", t.gemm.trans_b},
                      {"count", t.gemm.count},
                      {"ms", 1e3 * t.seconds},
                      {"band_ms", 1e3 * t.band_seconds},
                      {"gflops", t.gflops()}});
  return {{"config", name},
          {"arch", arch},
          {"scheme", scheme},
          {"layers", layers},
          {"d_model", d_model},
          {"device", device},
          {"threads", threads},
          {"kernels", kernels},
          {"allocator", allocator},
          {"head_products", head_products},
          {"grads", grads},
          {"layer_path", layer_path},
          {"layer_path_why", layer_path_why},
          {"cache_hit_rate", cache_hit_rate},
          {"cache_blocks_returned", cache_returned},
          {"batch", batch},
          {"seq", seq},
          {"tokens_per_step", tokens_per_step},
          {"parameters", parameters},
          {"warmup", warmup},
          {"steps", steps},
          {"ms_per_step_median", ms_median},
          {"ms_per_step_mean", ms_mean},
          {"ms_per_step_min", ms_min},
          {"cpu_ms_per_step", cpu_ms},
          {"ms_forward", ms_forward},
          {"ms_backward", ms_backward},
          {"ms_optimizer", ms_optimizer},
          {"tokens_per_s", tokens_per_s},
          {"flops_per_step", flops_per_step},
          {"gflops", gflops},
          {"sgemm_gflops", sgemm_gflops},
          {"sgemm_fraction", sgemm_fraction},
          {"gemm_ms_per_step", gemm_ms},
          {"best_gemm_ms_per_step", best_gemm_ms},
          {"rss_before_mb", rss_before_mb},
          {"rss_model_mb", rss_model_mb},
          {"peak_rss_mb", peak_rss_mb},
          {"checkpoint_activations", checkpoint_activations},
          {"final_loss", final_loss},
          {"sgemm_shapes", shapes}};
}

std::string StepBenchResult::to_text() const {
  std::string s;
  s += fmt::format("config: {} ({}, {}, {} layers, d_model {})\n", name, arch, scheme, layers, d_model);
  s += fmt::format("shape: {} x {} = {} tokens/step\n", batch, seq, tokens_per_step);
  s += fmt::format("parameters: {}\n", parameters);
  s += fmt::format(
      "device: {}  threads: {}  activation checkpointing: {}  kernels: {}  allocator: {}  head products: {}  "
      "grads: {}\n",
      device, threads, checkpoint_activations ? "on" : "off", kernels, allocator, head_products, grads);
  s += fmt::format("layers: {} ({})\n", layer_path, layer_path_why);
  if (allocator == "cache")
    s += fmt::format("allocator cache: {:.2f} % of the timed steps' requests served from it, {} blocks returned\n",
                     100 * cache_hit_rate, cache_returned);
  s += fmt::format("steps: {} timed after {} warm-up\n", steps, warmup);
  s += fmt::format("ms/step: median {:.2f}  mean {:.2f}  min {:.2f}\n", ms_median, ms_mean, ms_min);
  s += fmt::format("CPU ms/step: {:.2f} (all threads)\n", cpu_ms);
  s += fmt::format("phases ms: forward+loss {:.2f}  backward {:.2f}  optimizer {:.2f}\n", ms_forward, ms_backward,
                   ms_optimizer);
  s += fmt::format("tokens/s: {:.1f}\n", tokens_per_s);
  s += fmt::format("FLOP/step: {:.4g} (matrix products, flops.h)\n", flops_per_step);
  s += fmt::format("GFLOP/s: {:.2f}\n", gflops);
  if (sgemm_gflops > 0) {
    s += fmt::format("sgemm GFLOP/s: {:.2f} (same shapes; the products alone take {:.2f} ms/step)\n", sgemm_gflops,
                     gemm_ms);
    s += fmt::format("sgemm fraction: {:.3f}\n", sgemm_fraction);
    if (best_gemm_ms > 0 && best_gemm_ms < gemm_ms)
      s += fmt::format("products at the faster of the BLAS and stx's band kernel, shape by shape: {:.2f} ms/step\n",
                       best_gemm_ms);
    if (best_gemm_ms > 0)
      s += fmt::format("step / products: {:.2f} (median step over the products at the faster kernel)\n",
                       ms_median / best_gemm_ms);
  }
  s += fmt::format("RSS MB: {:.0f} before the model, {:.0f} after, {:.0f} peak\n", rss_before_mb, rss_model_mb,
                   peak_rss_mb);
  s += fmt::format("final loss: {:.4f}\n", final_loss);
  return s;
}

}  // namespace stx::bench
