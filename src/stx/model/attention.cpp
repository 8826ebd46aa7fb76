#include "stx/model/attention.h"

#include <cmath>

namespace stx {

AttentionImpl::AttentionImpl(int64_t d, int64_t heads, bool bias, bool sigma_reparam, double attention_dropout)
    : heads_(heads), d_head_(d / heads), attention_dropout_(attention_dropout) {
  q_proj = register_module("q_proj", Linear(d, d, bias, sigma_reparam));
  k_proj = register_module("k_proj", Linear(d, d, bias, sigma_reparam));
  v_proj = register_module("v_proj", Linear(d, d, bias, sigma_reparam));
  out_proj = register_module("out_proj", Linear(d, d, bias, sigma_reparam));
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& memory, const torch::Tensor& key_pad,
                                     bool causal, const TapSite& tap) {
  const int64_t B = x.size(0), Tq = x.size(1), Tk = memory.size(1);
  auto split = [&](const torch::Tensor& t, int64_t T) {  // [B, T, d] → [B, H, T, d_h]
    return t.view({B, T, heads_, d_head_}).transpose(1, 2);
  };
  auto q = split(q_proj->forward(x), Tq);
  auto k = split(k_proj->forward(memory), Tk);
  auto v = split(v_proj->forward(memory), Tk);
  auto scores = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(d_head_)));
  torch::Tensor mask;
  if (key_pad.defined()) mask = key_pad.view({B, 1, 1, Tk});
  if (causal) {
    auto future = torch::ones({Tq, Tk}, torch::dtype(torch::kBool).device(x.device())).triu(1);
    mask = mask.defined() ? mask.logical_or(future) : future;
  }
  if (mask.defined()) scores = scores.masked_fill(mask, -1e9);
  auto probs = torch::softmax(scores, -1);
  tap("probs", probs);
  if (attention_dropout_ > 0 && is_training()) probs = torch::dropout(probs, attention_dropout_, true);
  auto out = torch::matmul(probs, v).transpose(1, 2).reshape({B, Tq, heads_ * d_head_});
  return out_proj->forward(out);
}

}  // namespace stx
