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
  auto lprobs = torch::log_softmax(logits.reshape({-1, V}), -1);
  auto y = target.reshape({-1});
  if (logits.is_cuda()) {  // masked sums: no copy of the [tokens × V] log-probabilities (index_select below)
    auto keep = (pad_id >= 0 ? y.ne(pad_id) : torch::ones_like(y, torch::kBool)).to(lprobs.scalar_type());
    LossSums out;
    out.tokens = keep.sum().item<int64_t>();
    auto nll = -(lprobs.gather(1, y.unsqueeze(1)).squeeze(1) * keep).sum();
    out.nll = nll.detach();
    if (epsilon == 0) {
      out.loss = nll;
    } else {
      const double eps_i = epsilon / static_cast<double>(V - 1);
      out.loss = (1.0 - epsilon - eps_i) * nll + eps_i * -(lprobs.sum(-1) * keep).sum();
    }
    return out;
  }
  torch::Tensor keep;
  if (pad_id >= 0) {
    keep = y.ne(pad_id);
    auto idx = keep.nonzero().squeeze(1);
    lprobs = lprobs.index_select(0, idx);
    y = y.index_select(0, idx);
  }
  LossSums out;
  out.tokens = y.size(0);
  auto nll = -lprobs.gather(1, y.unsqueeze(1)).sum();
  out.nll = nll.detach();
  if (epsilon == 0) {
    out.loss = nll;
  } else {
    const double eps_i = epsilon / static_cast<double>(V - 1);
    auto smooth = -lprobs.sum();
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
