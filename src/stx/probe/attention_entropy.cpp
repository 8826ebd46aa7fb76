// stx/probe/attention_entropy.cpp — Ent(A) and Theorem 3.1 of Zhai et al. (2023); see the header.
#include "stx/probe/attention_entropy.h"

#include <cmath>
#include <stdexcept>

namespace stx::probe {

torch::Tensor row_entropy(const torch::Tensor& A) {
  // −Σ_j A_ij log A_ij with the convention 0·log 0 = 0 (the log of a zero entry is never used).
  auto safe_log = torch::where(A > 0, A, torch::ones_like(A)).log();
  return -(A * safe_log).sum(-1);
}

torch::Tensor row_entropy_from_logits(const torch::Tensor& logits) {
  // log p = log_softmax(a) is finite even where p underflows to 0, so p·log p is 0 there.
  auto lp = torch::log_softmax(logits, -1);
  return -(lp.exp() * lp).sum(-1);
}

double attention_entropy(const torch::Tensor& A) { return row_entropy(A.detach()).mean().item<double>(); }

double entropy_lower_bound(double sigma, int64_t T) {
  if (T < 2) throw std::invalid_argument("entropy_lower_bound: needs T >= 2 keys");
  if (sigma < 0) throw std::invalid_argument("entropy_lower_bound: needs sigma >= 0");
  const double t = static_cast<double>(T);
  const double beta = std::exp(-sigma * std::sqrt(t / (t - 1)));  // β = e^{−𝛔√(T/(T−1))}
  const double z = (t - 1) * beta;                                // (T−1)β
  return std::log1p(z) + sigma * std::sqrt(t * (t - 1)) * beta / (1 + z);
}

torch::Tensor extremal_logits(double sigma, int64_t T) {
  if (T < 2) throw std::invalid_argument("extremal_logits: needs T >= 2 keys");
  const double t = static_cast<double>(T);
  // a₁ = 𝛔√((T−1)/T), a_j = −𝛔/√(T(T−1)): Σ a = 0, Σ a² = 𝛔²(T−1)/T + 𝛔²/T = 𝛔².
  auto a = torch::full({T}, -sigma / std::sqrt(t * (t - 1)), torch::kFloat64);
  a[0] = sigma * std::sqrt((t - 1) / t);
  return a;
}

}  // namespace stx::probe
