// stx/bench/step_bench.h — the timed training-step loop of `stx bench`: the trainer's own step
// (train/train_step.h: the same Transformer, initialize, Optimizer and loss) on random tokens,
// W untimed then N timed steps of zero_grad → forward → loss/tokens → backward → ‖g‖, clipping
// and the optimizer step ("optimizer" in the phase times); then the step's FLOP count (flops.h)
// and the sgemm rate on its shapes (sgemm_rate.h).
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "stx/bench/sgemm_rate.h"
#include "stx/config/config.h"

namespace stx::bench {

constexpr int kProfiledSteps = 5;

struct StepBenchOptions {
  Config config;
  std::string name;                // shown in the report (the config file's name)
  int64_t batch = 0;               // ≤ 0: train.max_tokens / seq (at least 1)
  int64_t seq = 0;                 // ≤ 0: model.max_len
  int64_t steps = 20;              // timed
  int64_t warmup = 3;              // untimed
  bool progress = true;            // a line on stderr every ~2 s of stepping
  bool sgemm = true;               // measure the sgemm rate
  int threads = 0;                 // ≤ 0: STX_THREADS if set, else default_threads (core/runtime.h)
  std::string profile;             // non-empty: a Chrome trace of kProfiledSteps more steps (LibTorch's profiler)
  bool reference_kernels = false;  // LibTorch ops instead of stx's fused kernels (kernels/kernels.h)
  bool composed_layers = false;    // stx's kernels, but layers composed of modules (no fused sub-layers)
  bool system_allocator = false;   // LibTorch's CPU allocator instead of stx's cache (core/cpu_cache.h)
  bool autograd_grads = false;     // weight gradients through AccumulateGrad, not into .grad() (kernels/direct_grads.h)
};

struct StepBenchResult {
  std::string name, device, scheme, arch;
  std::string kernels = "fused";       // "fused", "composed" or "reference" (kernels/kernels.h)
  std::string allocator = "cache";     // "cache" (core/cpu_cache.h) or "system" (LibTorch's)
  std::string head_products = "band";  // the attention core's per-head products: "band" or "blas" (kernels.h)
  std::string grads = "direct";        // "direct" (kernels/direct_grads.h) or "autograd"
  std::string layer_path = "fused";    // the path the layers took (model/layer.h): "fused" or "composed"
  std::string layer_path_why;          // the capability gate's reason (kernels/fused_features.h)
  double cache_hit_rate = 0;           // the cache's hits / requests over the timed steps (0 for "system")
  int64_t cache_returned = 0;          // blocks it gave back to malloc in the timed steps (end_cpu_cache_step)
  bool checkpoint_activations = false;
  int64_t batch = 0, seq = 0, tokens_per_step = 0, steps = 0, warmup = 0, layers = 0, d_model = 0, threads = 0;
  int64_t parameters = 0;
  double ms_median = 0, ms_mean = 0, ms_min = 0;
  double cpu_ms = 0;  // process CPU time (all threads, user + system) per timed step: steadier than
                      // wall time on a busy machine, and close to it when running on one thread
  double ms_forward = 0, ms_backward = 0, ms_optimizer = 0;  // mean per timed step (forward includes the loss)
  double tokens_per_s = 0;                                   // tokens_per_step / mean step time
  double flops_per_step = 0, gflops = 0;                     // achieved: flops_per_step / mean step time
  double sgemm_gflops = 0, sgemm_fraction = 0;               // fraction = gflops / sgemm_gflops
  double gemm_ms = 0;                                        // the step's products alone at the sgemm rate
  double best_gemm_ms = 0;  // the same, each shape at the faster of the BLAS and stx's band kernel (sgemm_rate.h)
  double rss_before_mb = 0, rss_model_mb = 0, peak_rss_mb = 0;
  double final_loss = 0;
  SgemmRate sgemm;

  nlohmann::json to_json() const;
  std::string to_text() const;  // the human-readable report, one "key: value" a line
};

// InputError for a bad shape (batch/seq ≤ 0 after defaults, seq > model.max_len, steps < 1,
// warmup < 0) before any model is built.
StepBenchResult run_step_bench(const StepBenchOptions& o);

// Current and peak resident set size of this process, MB (/proc/self/statm; getrusage).
double current_rss_mb();
double peak_rss_mb();

}  // namespace stx::bench
