// stx/theory/entropy_bound_rows.cpp — see entropy_bound_rows.h.
#include "stx/theory/entropy_bound_rows.h"

#include <cmath>
#include <vector>

#include "stx/probe/attention_entropy.h"

namespace stx::theory::entropy_bound {
namespace {

using probe::row_entropy_from_logits;
const auto kF64 = torch::kFloat64;

// Scales each row of z [n, T] to norm `norm` [n, 1].
torch::Tensor with_norm(const torch::Tensor& z, const torch::Tensor& norm) {
  return z * (norm / z.norm(2, -1, true).clamp_min(1e-300));
}

}  // namespace

// (1) Random logit rows with ‖a‖ ≤ sig, n of each family: Gaussian directions at a uniform radius;
// directions with a large common shift (norm wasted on the mean); sparse k-hot rows of random sign;
// the extremal row (randomly permuted) plus noise of relative size 1e-8…1e-1, pulled back into the ball.
torch::Tensor random_rows(int64_t n, int64_t T, double sig) {
  auto radius = [&] { return torch::rand({n, 1}, kF64) * sig; };
  auto gauss = with_norm(torch::randn({n, T}, kF64), radius());
  auto shifted =
      with_norm(torch::randn({n, T}, kF64) + torch::rand({n, 1}, kF64) * 6 - 3, torch::full({n, 1}, sig, kF64));
  auto k = torch::randint(1, T, {n, 1}, torch::kInt64);
  auto hot = (torch::rand({n, T}, kF64).argsort(int64_t{-1}, false) < k).to(kF64) *
             (torch::randint(0, 2, {n, 1}, kF64) * 2 - 1);
  hot = with_norm(hot, torch::full({n, 1}, sig, kF64));
  auto ext =
      probe::extremal_logits(sig, T).expand({n, T}).gather(1, torch::rand({n, T}, kF64).argsort(int64_t{-1}, false));
  auto eps = torch::pow(10.0, torch::rand({n, 1}, kF64) * 7 - 8);
  auto near = ext + eps * sig * torch::randn({n, T}, kF64) / std::sqrt(static_cast<double>(T));
  near = with_norm(near, torch::minimum(near.norm(2, -1, true), torch::full({n, 1}, sig, kF64)));
  return torch::cat(std::vector<torch::Tensor>{gauss, shifted, hot, near}, 0);
}

// (2) Minimizes Ent(softmax(a)) over ‖a‖ = sig by Riemannian gradient descent from `starts` Gaussian
// starts; softmax ignores the mean, so rows are kept zero-mean (the least-norm representative, which
// only enlarges the feasible set's reach). ∂Ent/∂a_k = −p_k (log p_k + Ent). Step in the normalized
// tangent direction, per start: ×1.5 after a decrease, ×0.5 (and reject) otherwise.
double adversarial_min(int64_t T, double sig, int64_t starts, int64_t iters) {
  auto project = [&](torch::Tensor z) {
    z = z - z.mean(-1, true);
    return with_norm(z, torch::full({z.size(0), 1}, sig, kF64));
  };
  auto z = project(torch::randn({starts, T}, kF64));
  auto h = row_entropy_from_logits(z);
  auto eta = torch::full({starts, 1}, 0.3, kF64);
  for (int64_t it = 0; it < iters; ++it) {
    auto lp = torch::log_softmax(z, -1);
    auto p = lp.exp();
    auto g = -p * (lp - (p * lp).sum(-1, true));
    g = g - g.mean(-1, true);
    g = g - (g * z).sum(-1, true) * z / (sig * sig);  // tangent to the sphere
    auto zn = project(z - eta * sig * g / g.norm(2, -1, true).clamp_min(1e-300));
    auto hn = row_entropy_from_logits(zn);
    auto acc = hn < h;
    z = torch::where(acc.unsqueeze(-1), zn, z);
    h = torch::where(acc, hn, h);
    eta = torch::where(acc.unsqueeze(-1), (eta * 1.5).clamp_max(1.0), eta * 0.5);
  }
  return h.min().item<double>();
}

}  // namespace stx::theory::entropy_bound
