#include "stx/model/layer.h"

#include <cmath>

#include "stx/config/schemes.h"
#include "stx/kernels/fused_sublayer.h"
#include "stx/kernels/kernels.h"

namespace stx {

namespace {
const std::string kSelfNorm = "self_attn_layer_norm", kCrossNorm = "encoder_attn_layer_norm",
                  kFFNNorm = "final_layer_norm", kSelfOut = "self_attn_out_layer_norm",
                  kCrossOut = "encoder_attn_out_layer_norm", kFFNOut = "ffn_out_layer_norm";
}  // namespace

double layerscale_epsilon(const ModelConfig& cfg, int64_t L) {
  if (cfg.layerscale_init > 0) return cfg.layerscale_init;
  return L <= 18 ? 0.1 : L <= 24 ? 1e-5 : 1e-6;
}

LayerImpl::LayerImpl(const ModelConfig& cfg, bool causal, bool cross, double alpha, int64_t l, int64_t L)
    : causal_(causal), l_(l), heads_(cfg.n_heads) {
  const auto d = cfg.d_model;
  spec_.post_style = post_style_layer(cfg.scheme, cfg.mix_ln_ratio, l, L);
  spec_.alpha = alpha;
  spec_.dropout = cfg.dropout;
  if (cfg.scheme == Scheme::LNScaling) spec_.norm_scale = 1.0 / std::sqrt(static_cast<double>(l + 1));
  if (cfg.scheme == Scheme::DepthScaled) spec_.branch_scale = cfg.residual_scale / std::sqrt(static_cast<double>(L));
  auto norm = [&](const std::string& name) {
    return register_module(name, Norm(cfg.norm, d, cfg.norm_eps, cfg.dyt_alpha));
  };
  const bool peri = cfg.scheme == Scheme::PeriLN, subln = cfg.scheme == Scheme::SubLN;
  self_attn = register_module("self_attn", Attention(cfg, /*inner_norm=*/subln));
  self_attn_layer_norm = norm(kSelfNorm);
  if (peri) self_attn_out_layer_norm = norm(kSelfOut);
  if (cross) {
    encoder_attn = register_module("encoder_attn", Attention(cfg));
    encoder_attn_layer_norm = norm(kCrossNorm);
    if (peri) encoder_attn_out_layer_norm = norm(kCrossOut);
  }
  ffn = register_module("ffn", FFN(cfg, /*mid_norm=*/subln));
  final_layer_norm = norm(kFFNNorm);
  if (peri) ffn_out_layer_norm = norm(kFFNOut);
  if (cfg.scheme == Scheme::NormFormer) {  // fairseq: attn_ln, c_attn, ffn_layernorm, w_resid
    attn_ln = norm("attn_ln");
    c_attn = register_parameter("c_attn", torch::ones({cfg.n_heads}));
    ffn_layernorm = register_module("ffn_layernorm", Norm(cfg.norm, cfg.d_ff, cfg.norm_eps, cfg.dyt_alpha));
    w_resid = register_parameter("w_resid", torch::ones({d}));
  }
  if (cfg.scheme == Scheme::Admin) {  // ω per sub-layer, set by the profiling pass (admin.h)
    self_skip_name_ = causal ? "self_ratio_change" : "attention_ratio_change";
    cross_skip_name_ = "encoder_ratio_change";
    ffn_skip_name_ = "fc_ratio_change";
    self_attn_skip = register_parameter(self_skip_name_, torch::ones({d}));
    if (cross) encoder_attn_skip = register_parameter(cross_skip_name_, torch::ones({d}));
    ffn_skip = register_parameter(ffn_skip_name_, torch::ones({d}));
  }
  if (cfg.scheme == Scheme::ReZero) {  // one scalar per sub-layer (Bachlechner et al. 2020)
    self_attn_gain = register_parameter("self_attn_resweight", torch::zeros({1}));
    if (cross) encoder_attn_gain = register_parameter("encoder_attn_resweight", torch::zeros({1}));
    ffn_gain = register_parameter("ffn_resweight", torch::zeros({1}));
  } else if (cfg.scheme == Scheme::LayerScale) {  // diag(λ) per sub-layer (CaiT, Touvron et al. 2021)
    gain_init_ = layerscale_epsilon(cfg, L);
    self_attn_gain = register_parameter("gamma_1", torch::full({d}, gain_init_));
    if (cross) encoder_attn_gain = register_parameter("gamma_cross", torch::full({d}, gain_init_));
    ffn_gain = register_parameter("gamma_2", torch::full({d}, gain_init_));
  }
}

void LayerImpl::reset_gains() {
  torch::NoGradGuard no_grad;
  for (auto* g : {&self_attn_gain, &encoder_attn_gain, &ffn_gain})
    if (g->defined()) g->fill_(gain_init_);
  for (auto* g : {&self_attn_skip, &encoder_attn_skip, &ffn_skip, &c_attn, &w_resid})
    if (g->defined()) g->fill_(1.0);
}

torch::Tensor LayerImpl::self_attn_out(const torch::Tensor& a) {
  if (!c_attn.defined()) return a;
  // fairseq applies the head scales to out_proj's output split into h chunks (the paper writes
  // them on the heads before W^O; docs/reference.md#normformer).
  const auto B = a.size(0), T = a.size(1), d = a.size(2);
  auto scaled = (a.view({B, T, heads_, d / heads_}) * c_attn.view({heads_, 1})).view({B, T, d});
  return attn_ln->forward(scaled);
}

SubLayer LayerImpl::sub(Which w) {
  const std::string at = std::to_string(l_) + ".";
  switch (w) {
    case kSelf:
      return {self_attn_layer_norm,
              kSelfNorm,
              self_attn_out_layer_norm ? &self_attn_out_layer_norm : nullptr,
              &kSelfOut,
              self_attn_gain,
              self_attn_skip,
              admin_profile,
              at + self_skip_name_};
    case kCross:
      return {encoder_attn_layer_norm,
              kCrossNorm,
              encoder_attn_out_layer_norm ? &encoder_attn_out_layer_norm : nullptr,
              &kCrossOut,
              encoder_attn_gain,
              encoder_attn_skip,
              admin_profile,
              at + cross_skip_name_};
    case kFFN:
      return {final_layer_norm, kFFNNorm,           ffn_out_layer_norm ? &ffn_out_layer_norm : nullptr,
              &kFFNOut,         ffn_gain,           ffn_skip.defined() ? ffn_skip : w_resid,
              admin_profile,    at + ffn_skip_name_};
  }
  return {final_layer_norm, kFFNNorm};
}

// The one place a layer's path is chosen: each sub-layer asks for what its modules and this run
// need; fused only where every ask lies within its kernel's set (kernels/fused_features.h).
LayerImpl::Asks LayerImpl::asks(const torch::Tensor& x, const TapSite& tap) const {
  using F = Feature;
  const auto& a = *self_attn;
  Features run{self_attn_layer_norm->fused_feature()};
  run.add(F::MixedNorms, final_layer_norm->kind() != self_attn_layer_norm->kind());
  run.add(spec_.post_style ? F::PostJoin : F::PreJoin)
      .add(F::Alpha, spec_.alpha != 1.0)
      .add(F::NormScale, spec_.norm_scale != 1.0)
      .add(F::BranchScale, spec_.branch_scale != 1.0)
      .add(F::Bias, a.q_proj->bias.defined())
      .add(F::SigmaReparam, a.q_proj->reparam())
      .add(F::Dropout, is_training() && spec_.dropout > 0)
      .add(F::Taps, tap.taps != nullptr)
      .add(F::AdminProfile, admin_profile != nullptr)
      .add(x.device().is_cpu() ? F::CPU : F::OtherDevice)
      .add(x.scalar_type() == torch::kFloat    ? F::Float32
           : x.scalar_type() == torch::kDouble ? F::Float64
                                               : F::OtherType)
      .add(F::SdpaCore, attention_core_choice() == AttentionCore::Sdpa)
      .add(F::ReferenceKernels, kernels() == Kernels::Reference)
      .add(F::Composed, composed_);
  Asks r;
  r.self = (run | a.fused_features(is_training()))
               .add(F::Causal, causal_)
               .add(F::Gain, self_attn_gain.defined())
               .add(F::Skip, self_attn_skip.defined())
               .add(F::OutNorm, self_attn_out_layer_norm || attn_ln)
               .add(F::HeadScales, c_attn.defined());
  if (encoder_attn)
    r.cross = (run | encoder_attn->fused_features(is_training()))
                  .add(F::Gain, encoder_attn_gain.defined())
                  .add(F::Skip, encoder_attn_skip.defined())
                  .add(F::OutNorm, static_cast<bool>(encoder_attn_out_layer_norm));
  r.ffn = (run | ffn->fused_features(&ffn_layernorm))
              .add(F::Gain, ffn_gain.defined())
              .add(F::Skip, ffn_skip.defined() || w_resid.defined())
              .add(F::OutNorm, static_cast<bool>(ffn_out_layer_norm));
  return r;
}

namespace {
bool runs_fused(const LayerImpl::Asks& a, bool cross) {
  return a.self.within(fused_attention_implements()) && a.ffn.within(fused_ffn_implements()) &&
         (!cross || a.cross.within(fused_cross_attention_implements()));
}
}  // namespace

PathChoice LayerImpl::path_choice(const torch::Tensor& x, const TapSite& tap) const {
  const auto r = asks(x, tap);
  if (runs_fused(r, static_cast<bool>(encoder_attn)))
    return {LayerPath::Fused, "the fused kernels implement every feature the sub-layers ask"};
  if (fused_attention_implements().empty())
    return {LayerPath::Composed, "stx was built without BLAS: no fused kernels"};
  std::string missing;
  auto need = [&](const char* what, const Features& ask, const Features& set) {
    if (const auto out = ask.outside(set); !out.empty())
      missing += (missing.empty() ? "" : "; ") + std::string(what) + ": " + out;
  };
  need("attention", r.self, fused_attention_implements());
  if (encoder_attn) need("cross-attention", r.cross, fused_cross_attention_implements());
  need("ffn", r.ffn, fused_ffn_implements());
  return {LayerPath::Composed, "the fused kernels do not implement " + missing};
}

namespace {
FusedJoin join_of(const ResidualSpec& spec, const Norm& norm, bool training) {
  FusedJoin j;
  j.pre = !spec.post_style;
  j.normed = norm->kind() != NormKind::None;  // Dynamic Tanh: by the α the node is given
  j.centered = norm->kind() == NormKind::LayerNorm;
  j.eps = norm->eps();
  j.alpha = spec.alpha;
  j.norm_scale = spec.norm_scale;
  j.branch_scale = spec.branch_scale;
  j.dropout = training ? spec.dropout : 0.0;
  return j;
}
}  // namespace

namespace {
// A sub-layer's join weights: its norm N, its output norm N_out, gain, skip weight, head scales.
JoinWeights join_weights(const Norm& n, const Norm& out, const torch::Tensor& gain, const torch::Tensor& skip,
                         const torch::Tensor& heads = {}) {
  const auto a = fused_weights(n), b = fused_weights(out);
  return {a.w, a.b, a.a, b.w, b.b, b.a, gain, skip, heads};
}
}  // namespace

torch::Tensor LayerImpl::fused_self_attn(const Features& ask, const torch::Tensor& x, const torch::Tensor& self_pad) {
  const auto& out = self_attn_out_layer_norm ? self_attn_out_layer_norm : attn_ln;  // Peri-LN; NormFormer
  return fused_attention_sublayer(ask, x, self_pad, join_of(spec_, self_attn_layer_norm, is_training()),
                                  join_weights(self_attn_layer_norm, out, self_attn_gain, self_attn_skip, c_attn),
                                  self_attn->fused_branch(causal_, is_training()));
}

torch::Tensor LayerImpl::fused_cross_attn(const Features& ask, const torch::Tensor& x, const torch::Tensor& memory,
                                          const torch::Tensor& memory_pad) {
  return fused_cross_attention_sublayer(
      ask, x, memory, memory_pad, join_of(spec_, encoder_attn_layer_norm, is_training()),
      join_weights(encoder_attn_layer_norm, encoder_attn_out_layer_norm, encoder_attn_gain, encoder_attn_skip),
      encoder_attn->fused_branch(/*causal=*/false, is_training()));
}

torch::Tensor LayerImpl::fused_ffn(const Features& ask, const torch::Tensor& x) {
  return fused_ffn_sublayer(
      ask, x, join_of(spec_, final_layer_norm, is_training()),
      join_weights(final_layer_norm, ffn_out_layer_norm, ffn_gain, ffn_skip.defined() ? ffn_skip : w_resid),
      ffn->fused_branch(&ffn_layernorm));
}

torch::Tensor LayerImpl::cross_attn(const torch::Tensor& x, const torch::Tensor& memory,
                                    const torch::Tensor& memory_pad, const TapSite& tap) {
  return residual(
      spec_, is_training(), sub(kCross),
      [&](const torch::Tensor& h) {
        return encoder_attn->forward(h, memory, memory_pad, false, tap.sub("encoder_attn"));
      },
      x, {"cross1", "cross2", "cross3"}, tap);
}

torch::Tensor LayerImpl::forward(const torch::Tensor& x0, const torch::Tensor& self_pad, const torch::Tensor& memory,
                                 const torch::Tensor& memory_pad, const TapSite& tap) {
  if (const auto ask = asks(x0, tap); runs_fused(ask, static_cast<bool>(encoder_attn))) {
    auto x = fused_self_attn(ask.self, x0, self_pad);
    if (encoder_attn) x = fused_cross_attn(ask.cross, x, memory, memory_pad);
    return fused_ffn(ask.ffn, x);
  }
  const bool pre = !spec_.post_style;
  tap("input", x0);
  auto x = residual(
      spec_, is_training(), sub(kSelf),
      [&](const torch::Tensor& h) {
        return self_attn_out(self_attn->forward(h, h, self_pad, causal_, tap.sub("self_attn")));
      },
      x0,
      pre ? std::array<const char*, 3>{"pre1", "pre2", "pre3"} : std::array<const char*, 3>{"post1", "post2", "post3"},
      tap);
  if (encoder_attn) x = cross_attn(x, memory, memory_pad, tap);
  return residual(
      spec_, is_training(), sub(kFFN), [&](const torch::Tensor& h) { return ffn->forward(h, &ffn_layernorm); }, x,
      pre ? std::array<const char*, 3>{"pre4", "pre5", "output"}
          : std::array<const char*, 3>{"post4", "post5", "output"},
      tap);
}

torch::Tensor LayerImpl::forward_step(const torch::Tensor& x0, const torch::Tensor& memory,
                                      const torch::Tensor& memory_pad, LayerCache& c) {
  const std::array<const char*, 3> none{"", "", ""};  // no taps while decoding
  auto x = residual(
      spec_, false, sub(kSelf),
      [&](const torch::Tensor& h) { return self_attn_out(self_attn->forward_step(h, {}, {}, c.self_k, c.self_v)); }, x0,
      none, {});
  if (encoder_attn) {
    x = residual(
        spec_, false, sub(kCross),
        [&](const torch::Tensor& h) { return encoder_attn->forward_step(h, memory, memory_pad, c.cross_k, c.cross_v); },
        x, none, {});
  }
  return residual(spec_, false, sub(kFFN), [&](const torch::Tensor& h) { return ffn->forward(h, &ffn_layernorm); }, x,
                  none, {});
}

}  // namespace stx
