// stx/kernels/direct_grads.h — weight gradients written straight into each parameter's .grad()
// by the fused nodes' backward, instead of returned to autograd and added there by one
// AccumulateGrad node per parameter (the idea of Megatron-LM's `gradient_accumulation_fusion`
// option, whose weight-gradient GEMM adds into the parameter's `main_grad`).
//
// At d64 × 24 a step had 16 parameters per layer, each with its AccumulateGrad node: the node,
// its dispatch and its separate add over the gradient (`add_` 1.4 % of the step alone). Here the
// weight-gradient products accumulate into .grad() with β = 1, and the bias and norm sums add to
// it as they are stored: the same sums, g + dW in the same rounding as AccumulateGrad's add_.
//
// Only while a DirectGradsScope is on (train/train_step.cpp, for its forward), and only for a
// node whose parameters are all leaves that require grad, with a dense .grad() of their dtype or
// none yet (then one is made, zero: the first step takes the path of every later one, and a
// resumed run repeats an uninterrupted one bit for bit), and whose input x requires grad (so
// that backward reaches the node). Such a node has no autograd edge to its parameters:
// hooks on them, torch::autograd::grad with respect to them and c10d's Reducer would not see
// those gradients, so the scope is off for data parallel and everywhere else.
#pragma once
#include <torch/torch.h>

#include <vector>

namespace stx {

class DirectGradsScope {
 public:
  explicit DirectGradsScope(bool on);
  ~DirectGradsScope();
  DirectGradsScope(const DirectGradsScope&) = delete;
  DirectGradsScope& operator=(const DirectGradsScope&) = delete;

 private:
  bool previous_;
};

bool direct_grads_on();

// The .grad() of each parameter (undefined where the parameter is undefined: absent; made, zero,
// where it had none), when the node with input x may write them directly; empty when it may not
// (the node then returns its gradients to autograd as before).
std::vector<torch::Tensor> direct_grad_targets(const torch::Tensor& x, at::ArrayRef<torch::Tensor> params);

}  // namespace stx
