#include "stx/model/ffn.h"

namespace stx {

FFNImpl::FFNImpl(int64_t d, int64_t d_ff, Activation act, bool bias, bool sigma_reparam) : act_(act) {
  fc1 = register_module("fc1", Linear(d, d_ff, bias, sigma_reparam));
  fc2 = register_module("fc2", Linear(d_ff, d, bias, sigma_reparam));
}

torch::Tensor FFNImpl::forward(const torch::Tensor& x) {
  auto h = fc1->forward(x);
  h = act_ == Activation::ReLU ? torch::relu(h) : torch::gelu(h);
  return fc2->forward(h);
}

}  // namespace stx
