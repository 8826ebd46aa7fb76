// stx/model/admin_pass.h — Admin's profiling pass over a whole model (Liu et al. 2020, §4.3;
// the per-stack state and the recurrence for ω are in admin.h). stx runs the pass in eval mode
// (no dropout) and without gradient.
#pragma once
#include <torch/torch.h>

#include <vector>

#include "stx/model/admin.h"
#include "stx/model/transformer.h"

namespace stx {

// Sets every ω of an Admin model (model.scheme: admin) by the pass on src/tgt (as for
// TransformerImpl::forward: src for encoder-only, tgt for decoder-only, both for
// encoder-decoder); returns the records of every stack in order. The model's mode is restored.
std::vector<AdminRecord> admin_profile(TransformerImpl& model, const torch::Tensor& src, const torch::Tensor& tgt);
// The pass on a batch of `batch` × `len` tokens drawn uniformly from the vocabulary (the pad
// token excluded) with the current default generator: what initialize() does.
std::vector<AdminRecord> admin_profile_random(TransformerImpl& model, int64_t batch, int64_t len);

}  // namespace stx
