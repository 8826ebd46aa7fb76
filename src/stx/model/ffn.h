// stx/model/ffn.h — position-wise feed-forward network: fc2(act(fc1(x))), act = ReLU or GELU;
// with a mid norm fc2(N(act(fc1(x)))) over d_ff: Sub-LN's own `ffn_layernorm` (torchscale) or
// NormFormer's, which fairseq keeps in the layer (layer.h) and passes in.
// fc2 is W^{2,l} of Xiong et al. (2020), whose gradient norm Xiong et al.'s Theorem 1 bounds.
#pragma once
#include <torch/torch.h>

#include "stx/config/config.h"
#include "stx/kernels/fused_features.h"
#include "stx/kernels/fused_sublayer.h"
#include "stx/model/linear.h"
#include "stx/model/norm.h"

namespace stx {

class FFNImpl : public torch::nn::Module {
 public:
  // d_model → d_ff → d_model, model.activation, model.bias, model.sigma_reparam; mid_norm:
  // Sub-LN's ffn_layernorm (model.norm over d_ff).
  explicit FFNImpl(const ModelConfig& m, bool mid_norm = false);
  // mid: a norm over d_ff owned elsewhere (NormFormer), used instead of ffn_layernorm.
  torch::Tensor forward(const torch::Tensor& x, Norm* mid = nullptr);

  // The init rule (model/init.h): Xavier on fc1 and fc2 with gain `beta` (DeepNet's β, T-Fixup's
  // and Sub-LN's factors; 1 otherwise).
  void reset_weights(double beta);

  // The fused path (kernels/fused_sublayer.h): what this branch asks of it with `mid` as for
  // forward(), and the branch as the fused node takes it.
  Features fused_features(const Norm* mid = nullptr) const;
  FFNBranch fused_branch(const Norm* mid = nullptr);

  Linear fc1{nullptr}, fc2{nullptr};
  Norm ffn_layernorm{nullptr};  // Sub-LN only

 private:
  const ModelConfig cfg_;  // the options the component reads (a new one needs no new member)
};
TORCH_MODULE(FFN);

}  // namespace stx
