#include "stx/model/layer.h"

namespace stx {

LayerImpl::LayerImpl(const ModelConfig& cfg, bool causal, bool cross, double alpha)
    : spec_{cfg.scheme, alpha, cfg.dropout}, causal_(causal) {
  const auto d = cfg.d_model;
  self_attn = register_module("self_attn", Attention(cfg));
  self_attn_layer_norm = register_module("self_attn_layer_norm", Norm(cfg.norm, d, cfg.norm_eps));
  if (cross) {
    encoder_attn = register_module("encoder_attn", Attention(cfg));
    encoder_attn_layer_norm = register_module("encoder_attn_layer_norm", Norm(cfg.norm, d, cfg.norm_eps));
  }
  ffn = register_module("ffn", FFN(cfg));
  final_layer_norm = register_module("final_layer_norm", Norm(cfg.norm, d, cfg.norm_eps));
}

torch::Tensor LayerImpl::forward(const torch::Tensor& x0, const torch::Tensor& self_pad, const torch::Tensor& memory,
                                 const torch::Tensor& memory_pad, const TapSite& tap) {
  const bool pre = spec_.scheme == Scheme::Pre;
  tap("input", x0);
  auto x = residual(
      spec_, is_training(), self_attn_layer_norm, "self_attn_layer_norm",
      [&](const torch::Tensor& h) { return self_attn->forward(h, h, self_pad, causal_, tap.sub("self_attn")); }, x0,
      pre ? std::array<const char*, 3>{"pre1", "pre2", "pre3"} : std::array<const char*, 3>{"post1", "post2", "post3"},
      tap);
  if (encoder_attn) {
    x = residual(
        spec_, is_training(), encoder_attn_layer_norm, "encoder_attn_layer_norm",
        [&](const torch::Tensor& h) {
          return encoder_attn->forward(h, memory, memory_pad, false, tap.sub("encoder_attn"));
        },
        x, {"cross1", "cross2", "cross3"}, tap);
  }
  return residual(
      spec_, is_training(), final_layer_norm, "final_layer_norm",
      [&](const torch::Tensor& h) { return ffn->forward(h); }, x,
      pre ? std::array<const char*, 3>{"pre4", "pre5", "output"}
          : std::array<const char*, 3>{"post4", "post5", "output"},
      tap);
}

torch::Tensor LayerImpl::forward_step(const torch::Tensor& x0, const torch::Tensor& memory,
                                      const torch::Tensor& memory_pad, LayerCache& c) {
  const std::array<const char*, 3> none{"", "", ""};  // no taps while decoding
  auto x = residual(spec_, false, self_attn_layer_norm, "",
                    [&](const torch::Tensor& h) { return self_attn->forward_step(h, {}, {}, c.self_k, c.self_v); }, x0,
                    none, {});
  if (encoder_attn) {
    x = residual(
        spec_, false, encoder_attn_layer_norm, "",
        [&](const torch::Tensor& h) { return encoder_attn->forward_step(h, memory, memory_pad, c.cross_k, c.cross_v); },
        x, none, {});
  }
  return residual(spec_, false, final_layer_norm, "", [&](const torch::Tensor& h) { return ffn->forward(h); }, x, none,
                  {});
}

}  // namespace stx
