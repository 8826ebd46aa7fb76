// stx/theory/entropy_bound_rows.h — the logit rows of the entropy-bound experiment's checks (1)
// and (2) (entropy_bound.cpp; Zhai et al. 2023, Theorem 3.1): random rows of four families in the
// ball ‖a‖ ≤ 𝛔, and the lowest entropy a projected gradient descent on the sphere ‖a‖ = 𝛔 finds.
// Both draw from torch's default generator (the caller seeds it).
#pragma once
#include <torch/torch.h>

#include <cstdint>

namespace stx::theory::entropy_bound {

// (1) n rows of each family, [4n, T] float64.
torch::Tensor random_rows(int64_t n, int64_t T, double sig);
// (2) min over `starts` descents of `iters` steps of Ent(softmax(a)), ‖a‖ = sig.
double adversarial_min(int64_t T, double sig, int64_t starts, int64_t iters);

}  // namespace stx::theory::entropy_bound
