#include "stx/model/ffn.h"

namespace stx {

FFNImpl::FFNImpl(const ModelConfig& m, bool mid_norm) : cfg_(m) {
  fc1 = register_module("fc1", Linear(m.d_model, m.d_ff, LinearOptions::of(m)));
  fc2 = register_module("fc2", Linear(m.d_ff, m.d_model, LinearOptions::of(m)));
  if (mid_norm) ffn_layernorm = register_module("ffn_layernorm", Norm(m.norm, m.d_ff, m.norm_eps, m.dyt_alpha));
}

void FFNImpl::reset_weights(double beta) {
  fc1->reset_xavier(beta);
  fc2->reset_xavier(beta);
}

Features FFNImpl::fused_features(const Norm* mid) const {
  using F = Feature;
  return Features{}
      .add(cfg_.activation == Activation::ReLU   ? F::ReLU
           : cfg_.activation == Activation::GELU ? F::GELU
                                                 : F::OtherActivation)
      .add(F::InnerNorm, (mid && *mid) || ffn_layernorm);
}

FFNBranch FFNImpl::fused_branch(const Norm* mid) {
  FFNBranch g;
  g.gelu = cfg_.activation == Activation::GELU;
  g.w1 = fc1->step_weight(), g.b1 = fc1->bias, g.w2 = fc2->step_weight(), g.b2 = fc2->bias;
  g.mid = fused_weights(mid && *mid ? *mid : ffn_layernorm);  // NormFormer's; Sub-LN's
  return g;
}

torch::Tensor FFNImpl::forward(const torch::Tensor& x, Norm* mid) {
  auto h = fc1->forward(x);
  h = cfg_.activation == Activation::ReLU ? torch::relu(h) : torch::gelu(h);
  if (mid && *mid) h = (*mid)->forward(h);
  else if (ffn_layernorm) h = ffn_layernorm->forward(h);
  return fc2->forward(h);
}

}  // namespace stx
