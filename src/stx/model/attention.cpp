#include "stx/model/attention.h"

#include <cmath>

#include "stx/kernels/attention_core.h"
#include "stx/kernels/dropout.h"
#include "stx/kernels/kernels.h"

namespace stx {

AttentionImpl::AttentionImpl(const ModelConfig& m, bool inner_norm)
    : cfg_(m), heads_(m.n_heads), d_head_(m.d_model / m.n_heads) {
  const auto d = m.d_model;
  const auto o = LinearOptions::of(m);
  q_proj = register_module("q_proj", Linear(d, d, o));
  k_proj = register_module("k_proj", Linear(d, d, o));
  v_proj = register_module("v_proj", Linear(d, d, o));
  out_proj = register_module("out_proj", Linear(d, d, o));
  if (m.qk_norm) {
    q_norm = register_module("q_norm", Norm(NormKind::LayerNorm, d_head_, m.norm_eps));
    k_norm = register_module("k_norm", Norm(NormKind::LayerNorm, d_head_, m.norm_eps));
  }
  if (inner_norm) inner_attn_ln = register_module("inner_attn_ln", Norm(m.norm, d, m.norm_eps, m.dyt_alpha));
}

void AttentionImpl::reset_weights(double beta) {
  q_proj->reset_xavier(1.0);
  k_proj->reset_xavier(1.0);
  if (cfg_.qk_init == QKInit::Zero) {
    torch::NoGradGuard no_grad;
    q_proj->weight.zero_();
    k_proj->weight.zero_();
  }
  v_proj->reset_xavier(beta);
  out_proj->reset_xavier(beta);
}

Features AttentionImpl::fused_features(bool training) const {
  return Features{}
      .add(Feature::InnerNorm, static_cast<bool>(inner_attn_ln))
      .add(Feature::QKNorm, static_cast<bool>(q_norm))
      .add(Feature::Softcap, cfg_.attn_softcap > 0)
      .add(Feature::AttentionDropout, training && cfg_.attention_dropout > 0);
}

AttentionBranch AttentionImpl::fused_branch(bool causal, bool training) {
  AttentionBranch g;
  g.heads = heads_, g.causal = causal, g.dropout = training ? cfg_.attention_dropout : 0.0,
  g.softcap = cfg_.attn_softcap;
  g.wq = q_proj->step_weight(), g.wk = k_proj->step_weight(), g.wv = v_proj->step_weight();
  g.bq = q_proj->bias, g.bk = k_proj->bias, g.bv = v_proj->bias;
  g.wo = out_proj->step_weight(), g.bo = out_proj->bias;
  g.inner = fused_weights(inner_attn_ln), g.q_norm = fused_weights(q_norm), g.k_norm = fused_weights(k_norm);
  return g;
}

torch::Tensor AttentionImpl::project_out(const torch::Tensor& h) {
  return out_proj->forward(inner_attn_ln ? inner_attn_ln->forward(h) : h);
}

torch::Tensor AttentionImpl::attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                    const torch::Tensor& mask, const TapSite& tap) {
  auto scores = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(d_head_)));
  if (cfg_.attn_softcap > 0)
    scores = torch::tanh(scores / cfg_.attn_softcap) * cfg_.attn_softcap;  // Gemma 2 soft-capping
  tap("scores", scores);
  if (mask.defined()) scores = scores.masked_fill(mask, -1e9);
  auto probs = torch::softmax(scores, -1);
  tap("probs", probs);
  if (cfg_.attention_dropout > 0 && is_training())
    probs = torch::dropout(probs, cfg_.attention_dropout, true);  // as the fused core
  const int64_t B = q.size(0), Tq = q.size(2);
  auto out = torch::matmul(probs, v).transpose(1, 2).reshape({B, Tq, heads_ * d_head_});
  return project_out(out);
}

namespace {
// [B, T, d] → [B, H, T, d_h]
torch::Tensor split_heads(const torch::Tensor& t, int64_t heads, int64_t d_head) {
  return t.view({t.size(0), t.size(1), heads, d_head}).transpose(1, 2);
}
// Query i (absolute position offset + i) must not see keys after it: [Tq, Tk] bool.
torch::Tensor future_mask(int64_t Tq, int64_t Tk, int64_t offset, const torch::Device& dev) {
  return torch::ones({Tq, Tk}, torch::dtype(torch::kBool).device(dev)).triu(offset + 1);
}
}  // namespace

// softmax(q kᵀ/√d_h + mask) v through LibTorch's scaled_dot_product_attention, whose boolean
// mask is the opposite of stx's (true = may attend). Causal is its is_causal flag (the flash
// kernel), also with key padding (below); non-causal attention with key padding takes the mask.
torch::Tensor AttentionImpl::attend_sdpa(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                         const torch::Tensor& key_pad, bool causal) {
  const int64_t B = q.size(0), Tq = q.size(2), Tk = k.size(2);
  std::optional<torch::Tensor> allowed;
  bool is_causal = causal;
  // Causal self-attention needs no key-padding mask: stx's batches pad on the right
  // (data/batcher.cpp), so a padded key j follows every real query i < j and the causal mask hides
  // it already. Only padded queries (which no loss or probe reads) see different keys. Without an
  // explicit mask SDPA may take its flash kernel.
  if (key_pad.defined() && !causal) {
    allowed = key_pad.view({B, 1, 1, Tk}).logical_not();
  }
  const double p = is_training() ? cfg_.attention_dropout : 0.0;
  auto out = at::scaled_dot_product_attention(q, k, v, allowed, p, is_causal);
  return project_out(out.transpose(1, 2).reshape({B, Tq, heads_ * d_head_}));
}

torch::Tensor AttentionImpl::heads(const torch::Tensor& t, Norm& norm) {
  auto h = split_heads(t, heads_, d_head_);
  return norm ? norm->forward(h) : h;
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& memory, const torch::Tensor& key_pad,
                                     bool causal, const TapSite& tap) {
  const int64_t B = x.size(0), Tq = x.size(1), Tk = memory.size(1);
  tap("queries_in", x);  // the probe's Theorem 3.1 bound (stx/probe/logit_bound.h)
  if (!memory.is_same(x)) tap("keys_in", memory);
  const bool self = memory.is_same(x);
  const bool want_probs = tap.taps && tap.taps->wants(tap.prefix + "probs");
  // The fused core has no QK-LayerNorm and does not expose the scores (it soft-caps them).
  const bool plain = !q_norm && !(tap.taps && tap.taps->wants(tap.prefix + "scores"));
  const AttentionCore core = attention_core_choice();
  const bool sdpa = core == AttentionCore::Sdpa || (core == AttentionCore::Auto && x.is_cuda());
  if (sdpa && cfg_.attn_softcap == 0 && !want_probs && !(tap.taps && tap.taps->wants(tap.prefix + "scores")))
    return attend_sdpa(heads(q_proj->forward(x), q_norm), heads(k_proj->forward(memory), k_norm),
                       split_heads(v_proj->forward(memory), heads_, d_head_), key_pad, causal);
  if (plain && kernels() == Kernels::Fused && attention_core_available(x) && !(want_probs && tap.taps->with_grad())) {
    const double p = is_training() ? cfg_.attention_dropout : 0.0;
    torch::Tensor probs, out;
    if (self) {  // one product for q, k, v: x [W_q; W_k; W_v]ᵀ
      auto w = torch::cat({q_proj->step_weight(), k_proj->step_weight(), v_proj->step_weight()});
      auto b = q_proj->bias.defined() ? torch::cat({q_proj->bias, k_proj->bias, v_proj->bias}) : torch::Tensor();
      auto qkv = torch::nn::functional::linear(x.reshape({-1, x.size(-1)}), w, b).view({x.size(0), x.size(1), -1});
      out = attention_core_packed(qkv, key_pad, heads_, causal, p, want_probs ? &probs : nullptr, cfg_.attn_softcap);
    } else {
      out = attention_core(q_proj->forward(x), k_proj->forward(memory), v_proj->forward(memory), key_pad, heads_,
                           causal, p, want_probs ? &probs : nullptr, cfg_.attn_softcap);
    }
    if (want_probs) tap("probs", probs);
    return project_out(out);
  }
  auto q = heads(q_proj->forward(x), q_norm);
  auto k = heads(k_proj->forward(memory), k_norm);
  auto v = split_heads(v_proj->forward(memory), heads_, d_head_);
  torch::Tensor mask;
  if (key_pad.defined()) mask = key_pad.view({B, 1, 1, Tk});
  if (causal) {
    auto future = future_mask(Tq, Tk, 0, x.device());
    mask = mask.defined() ? mask.logical_or(future) : future;
  }
  return attend(q, k, v, mask, tap);
}

torch::Tensor AttentionImpl::forward_step(const torch::Tensor& x, const torch::Tensor& memory,
                                          const torch::Tensor& key_pad, torch::Tensor& k, torch::Tensor& v) {
  const int64_t B = x.size(0), t = x.size(1);
  auto q = heads(q_proj->forward(x), q_norm);
  torch::Tensor mask;
  if (!memory.defined()) {  // self-attention: append the new positions' keys and values
    auto k_new = heads(k_proj->forward(x), k_norm);
    auto v_new = split_heads(v_proj->forward(x), heads_, d_head_);
    const int64_t L = k.defined() ? k.size(2) : 0;
    k = L ? torch::cat({k, k_new}, 2) : k_new;
    v = L ? torch::cat({v, v_new}, 2) : v_new;
    if (t > 1) mask = future_mask(t, L + t, L, x.device());
  } else {
    if (!k.defined()) {
      k = heads(k_proj->forward(memory), k_norm);
      v = split_heads(v_proj->forward(memory), heads_, d_head_);
    }
    if (key_pad.defined()) mask = key_pad.view({B, 1, 1, k.size(2)});
  }
  return attend(q, k, v, mask, {});
}

}  // namespace stx
