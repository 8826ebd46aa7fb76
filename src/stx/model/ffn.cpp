#include "stx/model/ffn.h"

namespace stx {

FFNImpl::FFNImpl(const ModelConfig& m, bool mid_norm) : act_(m.activation) {
  fc1 = register_module("fc1", Linear(m.d_model, m.d_ff, LinearOptions::of(m)));
  fc2 = register_module("fc2", Linear(m.d_ff, m.d_model, LinearOptions::of(m)));
  if (mid_norm) ffn_layernorm = register_module("ffn_layernorm", Norm(m.norm, m.d_ff, m.norm_eps, m.dyt_alpha));
}

torch::Tensor FFNImpl::forward(const torch::Tensor& x, Norm* mid) {
  auto h = fc1->forward(x);
  h = act_ == Activation::ReLU ? torch::relu(h) : torch::gelu(h);
  if (mid && *mid) h = (*mid)->forward(h);
  else if (ffn_layernorm) h = ffn_layernorm->forward(h);
  return fc2->forward(h);
}

}  // namespace stx
