// stx/model/ffn.h — position-wise feed-forward network: fc2(act(fc1(x))), act = ReLU or GELU.
// fc2 is the seed's W^{2,l}, whose gradient norm Xiong et al.'s Theorem 1 bounds.
#pragma once
#include <torch/torch.h>

#include "stx/config/config.h"
#include "stx/model/linear.h"

namespace stx {

class FFNImpl : public torch::nn::Module {
 public:
  FFNImpl(int64_t d, int64_t d_ff, Activation act, bool bias, bool sigma_reparam);
  torch::Tensor forward(const torch::Tensor& x);

  Linear fc1{nullptr}, fc2{nullptr};

 private:
  Activation act_;
};
TORCH_MODULE(FFN);

}  // namespace stx
