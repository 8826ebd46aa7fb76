// stx/train/optimizer.h — the optimizers of train.optimizer, written out so that their state is
// explicit, named and saved in checkpoints (exact resume):
//   adam  (Kingma & Ba 2015; weight_decay as L2 added to the gradient, as torch.optim.Adam)
//   adamw (Loshchilov & Hutter 2019; decoupled: p ← p − lr·wd·p before the Adam step, as torch.optim.AdamW)
//   sgd   (momentum μ, L2 weight decay, as torch.optim.SGD with dampening 0, no Nesterov)
// Every update matches torch.optim's float32 arithmetic on the same gradients (tests/ref).
#pragma once
#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "stx/model/config.h"

namespace stx {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

class Optimizer {
 public:
  // `params`: the trainable parameters under their model names (TransformerImpl::state() minus
  // buffers). Reads optimizer, betas, eps, weight_decay, momentum from `t`.
  Optimizer(NamedTensors params, const TrainConfig& t);

  // One update with learning rate `lr` from each parameter's .grad() (a parameter without a
  // gradient is skipped and its state left as is). The step count t of Adam's bias correction
  // is the number of step() calls, shared by all parameters (torch keeps one per parameter; the
  // two agree whenever every parameter has a gradient at every step).
  void step(double lr);
  void zero_grad();  // sets every .grad() to zero (keeps the tensors)
  int64_t steps() const { return steps_; }

  // State as named tensors: "optim.step" (int64 scalar) and, per parameter p,
  // "optim.exp_avg.<p>", "optim.exp_avg_sq.<p>" (adam/adamw) or "optim.momentum.<p>" (sgd).
  // The tensors are copies (later steps do not change them).
  NamedTensors state() const;
  // Restores state(); InputError (naming `what` and the tensor) on a missing, unexpected or
  // misshapen tensor.
  void load_state(const NamedTensors& state, const std::string& what);

 private:
  NamedTensors params_;
  TrainConfig t_;
  int64_t steps_ = 0;
  std::vector<torch::Tensor> m_, v_;  // first/second moments, or the momentum buffer in m_
  // Implementation detail: preallocated per-parameter scratch views (shared flat buffers) for
  // the L2-decayed gradient and Adam's denominator, so that step() allocates no tensor data.
  enum class Kind { Adam, AdamW, SGD } kind_ = Kind::Adam;
  std::vector<torch::Tensor> decayed_, denom_;
};

}  // namespace stx
