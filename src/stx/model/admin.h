// stx/model/admin.h — Admin's profiling pass (Liu et al. 2020, "Understanding the Difficulty of
// Training Transformers", §4.3): Post-LN sub-layers x_i = N(ω_i ⊙ x_{i−1} + f_i(x_{i−1})) with
// ω_i = sqrt(Σ_{j<i} Var[f_j(x_{j−1})]) (f_0: the embedding). As in the reference code
// (Transformer-Clinic, init_type adaptive-profiling) the sum is accumulated during one forward
// pass, sub-layer by sub-layer in each stack: ω_1 = 1, and after sub-layer i
//   ω_{i+1} = sqrt(Var[ω_i ⊙ x_{i−1}] + Var[f_i(x_{i−1})]),
// variances over every element of the batch; each ω_i is then a vector [d] filled with that value.
// This file holds one stack's running state, which the residual join updates (residual.h); the
// pass over a whole model is admin_pass.h.
#pragma once
#include <torch/torch.h>

#include <string>
#include <vector>

namespace stx {

struct AdminRecord {
  std::string name;  // the ω parameter, e.g. "decoder.layers.3.fc_ratio_change"
  double omega = 1.0, var_skip = 0.0, var_branch = 0.0;
};

// The running state of one stack's pass.
struct AdminProfile {
  std::string stack;   // "encoder" or "decoder"
  double omega = 1.0;  // ω for the next sub-layer
  std::vector<AdminRecord> records;
  // Sub-layer `name` used ω = `omega`; its skip input ω ⊙ x and branch output f(x) were these.
  void add(const std::string& name, const torch::Tensor& skip, const torch::Tensor& branch);
};

}  // namespace stx
