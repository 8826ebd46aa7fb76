// stx/train/train_step.h — the compute of one update, shared by `stx train` (train/trainer.cpp)
// and `stx bench` (bench/step_bench.cpp), so that the benchmark times the step that trains:
//   forward + label-smoothed loss of each batch (bf16 autocast on CUDA; Vaswani et al. 2017
//   §5.4, Szegedy et al. 2016; the fused sub-layers' weight gradients go straight into .grad():
//   kernels/direct_grads.h), backward of loss / Σ target tokens of the update (the caller's),
//   the global gradient norm ‖g‖₂, clipping to train.clip_norm (torch.nn.utils.clip_grad_norm_:
//   g ← g · c/(‖g‖ + 1e-6) when ‖g‖ > c), and the optimizer step at the given learning rate.
#pragma once
#include <torch/torch.h>

#include "stx/config/config.h"
#include "stx/data/batcher.h"
#include "stx/model/transformer.h"
#include "stx/train/loss.h"
#include "stx/train/optimizer.h"

namespace stx {

class TrainStep {
 public:
  TrainStep(TransformerImpl& model, Optimizer& opt, const Config& cfg, torch::Device device)
      : model_(model), opt_(opt), cfg_(cfg), device_(device) {}

  // Training mode and zeroed gradients: the start of an update.
  void begin();
  // The forward of one batch (moved to the device): its loss sums, with the graph.
  LossSums forward(const Batch& b);
  // Whether the fused sub-layers' weight gradients go straight into each .grad()
  // (kernels/direct_grads.h; on by default). Off for data parallel: c10d's Reducer takes each
  // gradient from its parameter's AccumulateGrad node.
  void set_direct_grads(bool on) { direct_grads_ = on; }
  // ‖g‖₂ over every gradient (one op on the optimizer's flat buffer when it has one).
  double grad_norm();
  // Clips when gnorm > train.clip_norm > 0, then the optimizer step at `lr`.
  void apply(double gnorm, double lr);

 private:
  TransformerImpl& model_;
  Optimizer& opt_;
  const Config& cfg_;
  torch::Device device_;
  bool direct_grads_ = true;
};

}  // namespace stx
