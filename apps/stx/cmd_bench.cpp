// stx bench — speed of one full training step (forward, backward, optimizer) for a config:
// tokens/s, achieved GFLOP/s from the step's FLOP count, that rate as a fraction of the sgemm
// rate measured here on the step's own shapes, and memory (src/stx/bench/, bench/README.md).
#include <fstream>
#include <iostream>
#include <memory>

#include <torch/torch.h>

#include "command.h"
#include "stx/bench/step_bench.h"
#include "stx/config/config_io.h"
#include "stx/core/atomic_file.h"
#include "stx/core/error.h"
#include "stx/kernels/kernels.h"

namespace stx::cli {

void register_bench(Registry& reg) {
  struct Opts {
    ConfigOptions cfg;
    int64_t batch = 0, seq = 0, steps = 20, warmup = 3;
    int threads = 0;
    std::string json;
    bool quiet = false;
    std::string kernels = "fused", attention = "auto", allocator = "cache", head_products = "band", grads = "direct";
    std::string profile;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = reg.app.add_subcommand(
      "bench", "time full training steps on random tokens: tokens/s, GFLOP/s vs the sgemm rate, peak memory");
  o->cfg.add_to(sub, /*config_required=*/true);
  // Ranges are checked after parsing, so that a bad value gets stx's one-line InputError.
  sub->add_option("--batch", o->batch, "sequences per step (default: train.max_tokens / seq)");
  sub->add_option("--seq", o->seq, "tokens per sequence (default: model.max_len)");
  sub->add_option("--steps", o->steps, "timed steps (default 20)");
  sub->add_option("--warmup", o->warmup, "untimed steps first (default 3)");
  sub->add_option("--threads", o->threads,
                  "intra-op threads (default: STX_THREADS, else 1 for small products (tokens·d_model² < 2^24), else "
                  "physical cores)");
  sub->add_option(
      "--kernels", o->kernels,
      "fused (default: stx's kernels, each self-attention and FFN sub-layer one fused node where the scheme allows), "
      "composed (stx's kernels, sub-layers composed of modules) or reference (LibTorch ops), to measure the "
      "difference");
  sub->add_option("--allocator", o->allocator,
                  "cache (default: stx's caching CPU allocator, core/cpu_cache.h) or system (LibTorch's), to measure "
                  "the difference");
  sub->add_option(
      "--attention", o->attention,
      "auto (default: LibTorch's scaled_dot_product_attention on cuda, stx's core on the CPU), sdpa or stx");
  sub->add_option("--head-products", o->head_products,
                  "band (default: stx's own per-head product kernel, causal band only, kernels/band_gemm.h) or blas "
                  "(one dense BLAS call per product), to measure the difference");
  sub->add_option("--grads", o->grads,
                  "direct (default: the fused sub-layers add their weight gradients into .grad(), "
                  "kernels/direct_grads.h) or autograd (through one AccumulateGrad node per parameter), to measure the "
                  "difference");
  sub->add_option("--profile", o->profile,
                  "after the timed steps, profile 5 more with LibTorch's profiler into a Chrome trace FILE "
                  "(bench/profile_table.py FILE: time per op)");
  sub->add_option("--json", o->json, "also write the report as JSON to FILE");
  sub->add_flag("--quiet", o->quiet, "no progress lines on stderr");
  reg.add(sub, [o, sub] {
    auto at_least = [&](const char* flag, int64_t v, int64_t lo) {
      if (sub->count(flag) && v < lo)
        throw InputError(std::string(flag) + " " + std::to_string(v) + " is not allowed (must be ≥ " +
                         std::to_string(lo) + ")");
    };
    at_least("--batch", o->batch, 1), at_least("--seq", o->seq, 1), at_least("--steps", o->steps, 1);
    at_least("--warmup", o->warmup, 0), at_least("--threads", o->threads, 1);
    if (o->kernels != "fused" && o->kernels != "composed" && o->kernels != "reference")
      throw InputError("--kernels " + o->kernels + " is not allowed (fused, composed or reference)");
    if (o->allocator != "cache" && o->allocator != "system")
      throw InputError("--allocator " + o->allocator + " is not allowed (cache or system)");
    if (o->attention != "auto" && o->attention != "sdpa" && o->attention != "stx")
      throw InputError("--attention " + o->attention + " is not allowed (auto, sdpa or stx)");
    if (o->head_products != "band" && o->head_products != "blas")
      throw InputError("--head-products " + o->head_products + " is not allowed (band or blas)");
    set_head_products(o->head_products == "blas" ? HeadProducts::Blas : HeadProducts::Band);
    if (o->grads != "direct" && o->grads != "autograd")
      throw InputError("--grads " + o->grads + " is not allowed (direct or autograd)");
    set_attention_core(o->attention == "sdpa"  ? AttentionCore::Sdpa
                       : o->attention == "stx" ? AttentionCore::Stx
                                               : AttentionCore::Auto);
    bench::StepBenchOptions b;
    b.reference_kernels = o->kernels == "reference";
    b.composed_layers = o->kernels == "composed";
    b.system_allocator = o->allocator == "system";
    b.autograd_grads = o->grads == "autograd";
    b.profile = o->profile;
    b.config = resolve_config(o->cfg.config, o->cfg.overrides);
    auto slash = o->cfg.config.find_last_of('/');
    b.name = o->cfg.config.substr(slash == std::string::npos ? 0 : slash + 1);
    if (auto dot = b.name.rfind(".yaml"); dot != std::string::npos) b.name.resize(dot);
    b.batch = o->batch, b.seq = o->seq, b.steps = o->steps, b.warmup = o->warmup;
    b.progress = !o->quiet;
    b.threads = o->threads;
    const auto r = bench::run_step_bench(b);
    std::cout << r.to_text() << std::flush;
    if (!o->json.empty()) write_text_atomically(o->json, r.to_json().dump(2) + "\n");
    return 0;
  });
}

}  // namespace stx::cli
