// stx/train/optimizer.h — the optimizers of train.optimizer, written out so that their state is
// explicit, named and saved in checkpoints (exact resume):
//   adam  (Kingma & Ba 2015; weight_decay as L2 added to the gradient, as torch.optim.Adam)
//   adamw (Loshchilov & Hutter 2019; decoupled: p ← p − lr·wd·p before the Adam step, as torch.optim.AdamW)
//   sgd   (momentum μ, L2 weight decay, as torch.optim.SGD with dampening 0, no Nesterov)
// Every update matches torch.optim's float32 arithmetic on the same gradients (tests/ref).
//
// Memory layout (the speed of the step; docs/performance.md): when every parameter shares one
// device and dtype, the constructor moves their data into one flat buffer (each parameter keeps
// its tensor, now a view of it), and the moments live in flat buffers of the same layout. Once
// every parameter has a gradient, zero_grad() points each .grad() at its slot of a flat gradient
// buffer (autograd then accumulates in place), and step() updates all parameters with the same
// element-wise kernels run over cache-sized chunks of the flat buffers (the whole buffer on a
// GPU) instead of ~7 kernels per parameter. Element for element the arithmetic is the
// per-parameter one.
#pragma once
#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "stx/config/config.h"

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
  // Sets every defined .grad() to zero. Keeps the tensors, except the first time every parameter
  // has a gradient: then each .grad() becomes (and stays) a view of the flat gradient buffer.
  void zero_grad();
  int64_t steps() const { return steps_; }
  // All gradients as one tensor while they live in the flat buffer (after the adopting
  // zero_grad(), as long as autograd has replaced none); undefined otherwise. For whole-model
  // reductions and scalings (norm, clipping) in one op instead of one per parameter.
  torch::Tensor flat_grad() const { return grads_flat() ? flat_g_ : torch::Tensor(); }

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
  // Preallocated scratch views for the L2-decayed gradient and Adam's denominator, so that
  // step() allocates no tensor data (per parameter, or per chunk on the flat path).
  using Kind = OptimizerKind;
  Kind kind_ = Kind::Adam;
  std::vector<torch::Tensor> decayed_, denom_;

  // The flat layout (engaged when all parameters share device and dtype): one buffer each for
  // the parameters, gradients and moments, in params_ order; slot i = [offset_[i], +numel).
  // flat_g_ is made by the zero_grad() that adopts the gradients (undefined until then).
  bool flat_ = false;
  torch::Tensor flat_p_, flat_g_, flat_m_, flat_v_;
  std::vector<int64_t> offset_;
  // The same buffers cut into chunks (64 Ki elements on the CPU, one on a GPU), and scratch of one chunk.
  struct Chunk {
    torch::Tensor p, g, m, v, decayed, denom;
  };
  std::vector<Chunk> chunks_;
  bool grads_flat() const;  // every .grad() is its slot's view (autograd has not replaced one)
  void update_one(const torch::Tensor& p, const torch::Tensor& g0, const torch::Tensor& m, const torch::Tensor& v,
                  torch::Tensor decayed, torch::Tensor denom, double lr, double step_size,
                  double bias_correction2_sqrt);
};

}  // namespace stx
