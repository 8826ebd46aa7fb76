// stx/train/train_step.cpp — see train_step.h.
#include "stx/train/train_step.h"

#include "stx/core/cpu_cache.h"
#include "stx/core/device.h"
#include "stx/kernels/direct_grads.h"
#include "stx/probe/diagnostics.h"

namespace stx {

void TrainStep::begin() {
  end_cpu_cache_step();  // the previous step's end: blocks it did not need go back to malloc
  model_.train();
  opt_.zero_grad();
}

LossSums TrainStep::forward(const Batch& b) {
  auto on = [&](const torch::Tensor& x) { return x.defined() ? x.to(device_) : x; };
  AutocastScope autocast(device_);  // bf16 on CUDA
  DirectGradsScope direct(direct_grads_);
  auto logits = model_.forward(on(b.src), on(b.tgt_in));
  auto sums = label_smoothed_loss(logits, on(b.tgt_out), cfg_.train.label_smoothing, cfg_.model.pad_id);
  if (cfg_.train.z_loss > 0)
    sums.loss = sums.loss + cfg_.train.z_loss * z_loss_sum(logits, on(b.tgt_out), cfg_.model.pad_id);
  return sums;
}

double TrainStep::grad_norm() {
  const auto flat = opt_.flat_grad();  // every gradient in one tensor (optimizer.h), if so
  return flat.defined() ? flat.norm().item<double>() : probe::global_grad_norm(model_);
}

void TrainStep::apply(double gnorm, double lr) {
  const double clip = cfg_.train.clip_norm;
  if (clip > 0 && gnorm > clip) {
    const double c = clip / (gnorm + 1e-6);
    torch::NoGradGuard ng;
    if (auto flat = opt_.flat_grad(); flat.defined()) {
      flat.mul_(c);
    } else {
      for (auto& p : model_.parameters())
        if (p.grad().defined()) p.grad().mul_(c);
    }
  }
  opt_.step(lr);
}

}  // namespace stx
