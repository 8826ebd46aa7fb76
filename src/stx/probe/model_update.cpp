// stx/probe/model_update.cpp — ‖ΔF‖ of DeepNet (Wang et al. 2022, Fig. 4–5); see the header.
#include "stx/probe/model_update.h"

#include "stx/core/error.h"

namespace stx::probe {

ModelUpdate::ModelUpdate(Transformer model, torch::Tensor src, torch::Tensor tgt)
    : model_(std::move(model)), src_(std::move(src)), tgt_(std::move(tgt)) {
  const auto& cfg = model_->config();
  // Tokens whose hidden state F is returned: the encoder's (encoder-only) or the decoder's.
  const torch::Tensor& out_tokens = cfg.has_decoder() ? tgt_ : src_;
  if (!out_tokens.defined()) throw InputError("ModelUpdate: the probe batch lacks the output side's tokens");
  mask_ = cfg.pad_id >= 0 ? out_tokens.ne(cfg.pad_id).to(torch::kFloat) : torch::ones(out_tokens.sizes());
  if (mask_.sum().item<double>() <= 0) throw InputError("ModelUpdate: the probe batch has no real tokens");
  reset();
}

torch::Tensor ModelUpdate::hidden(Taps* taps) {
  const bool was_training = model_->is_training();
  model_->eval();
  torch::Tensor h;
  {
    torch::NoGradGuard no_grad;
    h = model_->hidden(src_, tgt_, taps).detach().clone();
    if (taps && taps->wants("logits")) taps->record("logits", model_->project(h));  // log Z (diagnostics.h)
  }
  model_->train(was_training);
  return h;
}

void ModelUpdate::reset() {
  f0_ = hidden();
  prev_ = f0_;
}

double ModelUpdate::mean_token_distance(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& mask) {
  auto per_token = (a - b).to(torch::kDouble).norm(2, /*dim=*/-1);  // [B, T]
  auto m = mask.to(torch::kDouble);
  return (per_token * m).sum().item<double>() / m.sum().item<double>();
}

void ModelUpdate::set_reference(torch::Tensor f0, torch::Tensor previous) {
  if (!f0.sizes().equals(f0_.sizes()) || !previous.sizes().equals(f0_.sizes()))
    throw InputError("ModelUpdate: the saved probe snapshot does not match the probe batch");
  f0_ = std::move(f0);
  prev_ = std::move(previous);
}

ModelUpdate::Sample ModelUpdate::measure(Taps* taps) {
  auto f = hidden(taps);
  Sample s{mean_token_distance(f, f0_, mask_), mean_token_distance(f, prev_, mask_)};
  prev_ = f;
  return s;
}

}  // namespace stx::probe
