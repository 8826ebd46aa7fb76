// stx/train/loss.cpp — see loss.h.
#include "stx/train/loss.h"

#include "stx/kernels/cross_entropy.h"

namespace stx {

LossSums label_smoothed_loss(const torch::Tensor& logits, const torch::Tensor& target, double epsilon, int64_t pad_id) {
  const int64_t V = logits.size(-1);
  if (fused_cross_entropy_available(logits)) {
    auto r = fused_cross_entropy(logits.reshape({-1, V}), target, epsilon, pad_id);
    return {r.loss, r.nll, r.tokens};
  }
  // The reference path (LibTorch ops; every device but the fused CPU kernel's cases): masked
  // sums over all rows, no copy of the kept rows of the [tokens × V] log-probabilities and no
  // host sync but the token count.
  auto lprobs = torch::log_softmax(logits.reshape({-1, V}), -1);
  auto y = target.reshape({-1});
  auto keep = pad_id >= 0 ? y.ne(pad_id) : torch::ones_like(y, torch::kBool);
  auto zero = torch::zeros({}, lprobs.options());
  LossSums out;
  out.tokens = keep.sum().item<int64_t>();
  auto nll = -torch::where(keep, lprobs.gather(1, y.unsqueeze(1)).squeeze(1), zero).sum();
  out.nll = nll.detach();
  if (epsilon == 0) {
    out.loss = nll;
  } else {
    // fairseq's label smoothing: ε/(V−1) on every other class, 1 − ε on the target.
    const double eps_i = epsilon / static_cast<double>(V - 1);
    auto smooth = -torch::where(keep, lprobs.sum(-1), zero).sum();
    out.loss = (1.0 - epsilon - eps_i) * nll + eps_i * smooth;
  }
  return out;
}

torch::Tensor z_loss_sum(const torch::Tensor& logits, const torch::Tensor& target, int64_t pad_id) {
  auto log_z = torch::logsumexp(logits.reshape({-1, logits.size(-1)}).to(torch::kFloat), -1);
  auto sq = log_z * log_z;
  if (pad_id >= 0) sq = sq * target.reshape({-1}).ne(pad_id).to(sq.scalar_type());
  return sq.sum();
}

}  // namespace stx
