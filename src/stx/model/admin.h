// stx/model/admin.h — Admin's profiling pass (Liu et al. 2020, "Understanding the Difficulty of
// Training Transformers", §4.3): Post-LN sub-layers x_i = N(ω_i ⊙ x_{i−1} + f_i(x_{i−1})) with
// ω_i = sqrt(Σ_{j<i} Var[f_j(x_{j−1})]) (f_0: the embedding). As in the reference code
// (Transformer-Clinic, init_type adaptive-profiling) the sum is accumulated during one forward
// pass, sub-layer by sub-layer in each stack: ω_1 = 1, and after sub-layer i
//   ω_{i+1} = sqrt(Var[ω_i ⊙ x_{i−1}] + Var[f_i(x_{i−1})]),
// variances over every element of the batch; each ω_i is then a vector [d] filled with that value.
// stx runs the pass in eval mode (no dropout) and without gradient.
#pragma once
#include <torch/torch.h>

#include <string>
#include <vector>

namespace stx {

class TransformerImpl;

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

// Sets every ω of an Admin model (model.scheme: admin) by the pass on src/tgt (as for
// TransformerImpl::forward: src for encoder-only, tgt for decoder-only, both for
// encoder-decoder); returns the records of every stack in order. The model's mode is restored.
std::vector<AdminRecord> admin_profile(TransformerImpl& model, const torch::Tensor& src, const torch::Tensor& tgt);
// The pass on a batch of `batch` × `len` tokens drawn uniformly from the vocabulary (the pad
// token excluded) with the current default generator: what initialize() does.
std::vector<AdminRecord> admin_profile_random(TransformerImpl& model, int64_t batch, int64_t len);

}  // namespace stx
