// stx/model/ffn.h — position-wise feed-forward network: fc2(act(fc1(x))), act = ReLU or GELU.
// fc2 is W^{2,l} of Xiong et al. (2020), whose gradient norm Xiong et al.'s Theorem 1 bounds.
#pragma once
#include <torch/torch.h>

#include "stx/config/config.h"
#include "stx/model/linear.h"

namespace stx {

class FFNImpl : public torch::nn::Module {
 public:
  // d_model → d_ff → d_model, model.activation, model.bias, model.sigma_reparam.
  explicit FFNImpl(const ModelConfig& m);
  torch::Tensor forward(const torch::Tensor& x);

  Linear fc1{nullptr}, fc2{nullptr};

 private:
  Activation act_;
};
TORCH_MODULE(FFN);

}  // namespace stx
