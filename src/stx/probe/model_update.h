// stx/probe/model_update.h — the model update ‖ΔF‖ of DeepNet (Wang et al. 2022, §3, Fig. 4–5):
//   ‖ΔF‖ = ‖F(x, θ_t) − F(x, θ₀)‖ on a fixed probe batch x,
// with F = the final hidden state before the vocabulary projection (`model->hidden(src, tgt)`,
// eval mode: no dropout, no σReparam power iteration). The paper does not say which output or
// which norm; stx takes the L2 norm over the feature axis and averages it over the batch's
// tokens (padding excluded when model.pad_id ≥ 0), docs/reference.md#model-update.
//
// Usage: construct with the model and the probe batch right after initialization (it snapshots
// F(x, θ₀)), then call measure() after each optimizer step. The trainer reuses this class.
#pragma once
#include <torch/torch.h>

#include "stx/model/transformer.h"

namespace stx::probe {

class ModelUpdate {
 public:
  struct Sample {
    double from_start = 0;     // mean_t ‖F_t(θ_now) − F_t(θ₀)‖₂
    double from_previous = 0;  // mean_t ‖F_t(θ_now) − F_t(θ at the previous measure())‖₂
  };

  // Snapshots F(x, θ₀). src/tgt: the model's inputs (undefined where the architecture has no
  // such side). The model's training mode is restored after every evaluation.
  ModelUpdate(Transformer model, torch::Tensor src, torch::Tensor tgt);

  // ‖ΔF‖ for the model's current parameters (no gradient is recorded); `taps` (optional)
  // records the probe forward (the trainer reads LN inputs and attention from it).
  Sample measure(Taps* taps = nullptr);
  // Re-snapshot F(x, θ₀) at the current parameters.
  void reset();

  // F(x, θ) for the current parameters, [B, T, d] (eval mode, no grad).
  torch::Tensor hidden(Taps* taps = nullptr);
  const torch::Tensor& reference() const { return f0_; }
  const torch::Tensor& previous() const { return prev_; }
  // Restores the snapshots (a resumed run keeps measuring against its own θ₀).
  void set_reference(torch::Tensor f0, torch::Tensor previous);
  // Per-token weights of the average: [B, T] float, 1 on real tokens, 0 on padding.
  const torch::Tensor& token_mask() const { return mask_; }

  // mean over tokens (weighted by `mask`) of ‖a_t − b_t‖₂ — the ‖ΔF‖ formula.
  static double mean_token_distance(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& mask);

 private:
  Transformer model_;
  torch::Tensor src_, tgt_, mask_, f0_, prev_;
};

}  // namespace stx::probe
