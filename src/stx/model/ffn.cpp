#include "stx/model/ffn.h"

namespace stx {

FFNImpl::FFNImpl(const ModelConfig& m) : act_(m.activation) {
  fc1 = register_module("fc1", Linear(m.d_model, m.d_ff, LinearOptions::of(m)));
  fc2 = register_module("fc2", Linear(m.d_ff, m.d_model, LinearOptions::of(m)));
}

torch::Tensor FFNImpl::forward(const torch::Tensor& x) {
  auto h = fc1->forward(x);
  h = act_ == Activation::ReLU ? torch::relu(h) : torch::gelu(h);
  return fc2->forward(h);
}

}  // namespace stx
