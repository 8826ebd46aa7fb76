#include "stx/kernels/cross_entropy.h"

#include "stx/kernels/kernels.h"

namespace stx {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class CrossEntropy : public torch::autograd::Function<CrossEntropy> {
 public:
  // Returns {loss, nll}; `keep` [N] is 1 at counted rows, 0 at padding.
  static variable_list forward(AutogradContext* ctx, torch::Tensor logits, torch::Tensor target, torch::Tensor keep,
                               double epsilon) {
    const int64_t V = logits.size(1);
    const double eps_i = epsilon / static_cast<double>(V - 1), c_nll = 1.0 - epsilon - eps_i;
    auto l = logits.contiguous();
    auto m = l.amax(1, /*keepdim=*/true);
    auto e = (l - m).exp_();
    auto s = e.sum(1);
    auto lse = m.squeeze(1) + s.log();
    auto nll_rows = (lse - l.gather(1, target.unsqueeze(1)).squeeze(1)) * keep;
    auto nll = nll_rows.sum();
    auto loss = epsilon == 0 ? nll.clone() : c_nll * nll + eps_i * ((V * lse - l.sum(1)) * keep).sum();
    ctx->saved_data["e"] = e;
    ctx->saved_data["s"] = s;
    ctx->save_for_backward({target, keep});
    ctx->saved_data["epsilon"] = epsilon;
    ctx->mark_non_differentiable({nll});
    return {loss, nll};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const auto saved = ctx->get_saved_variables();
    const auto &target = saved[0], &keep = saved[1];
    const auto e = ctx->saved_data["e"].toTensor(), s = ctx->saved_data["s"].toTensor();
    const int64_t V = e.size(1);
    const double epsilon = ctx->saved_data["epsilon"].toDouble();
    const double eps_i = epsilon / static_cast<double>(V - 1), c_nll = 1.0 - epsilon - eps_i;
    const auto g = grad[0];  // scalar
    auto kg = keep * g;      // [N]: 0 at padding
    // ∂/∂l = (c_nll + ε_i·V)·e/s − ε_i, one pass; then −c_nll at each target.
    auto a = (kg * (c_nll + eps_i * V) / s).unsqueeze(1);
    auto dl = e * a;
    if (eps_i != 0) dl.sub_((eps_i * kg).unsqueeze(1));
    dl.scatter_add_(1, target.unsqueeze(1), (-c_nll * kg).unsqueeze(1));
    return {dl, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

bool fused_cross_entropy_available(const torch::Tensor& logits) {
  return kernels() == Kernels::Fused && logits.device().is_cpu() &&
         (logits.scalar_type() == torch::kFloat || logits.scalar_type() == torch::kDouble);
}

CrossEntropySums fused_cross_entropy(const torch::Tensor& logits, const torch::Tensor& target, double epsilon,
                                     int64_t pad_id) {
  auto y = target.reshape({-1});
  auto keep = pad_id >= 0 ? y.ne(pad_id) : torch::ones_like(y, torch::kBool);
  const auto tokens = keep.sum().item<int64_t>();
  // Padding rows: any valid class index (their weight is 0).
  if (pad_id >= 0) y = y.masked_fill(~keep, 0);
  auto r = CrossEntropy::apply(logits, y, keep.to(logits.scalar_type()), epsilon);
  return {r[0], r[1], tokens};
}

}  // namespace stx
