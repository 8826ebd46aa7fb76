// stx/model/residual.h — how a sub-layer G joins the residual stream, per scheme:
//   post, post-init:  x ← N(x + G(x))            (Post-LN, Vaswani et al.; Xiong et al. eq. 1)
//   deepnorm:         x ← N(α·x + G(x))          (DeepNet eq. 4, Wang et al. 2022)
//   pre:              x ← x + G(N(x))            (Pre-LN, Xiong et al.)
// Dropout is applied to G's output in training. Three tap points per sub-layer, named by the
// caller in Xiong et al.'s (2020, appendix) notation (post1..3 / pre1..3, post4..5 + output, …), and the norm input.
#pragma once
#include <torch/torch.h>

#include <array>
#include <functional>
#include <string>

#include "stx/config/config.h"
#include "stx/model/norm.h"
#include "stx/model/taps.h"

namespace stx {

struct ResidualSpec {
  Scheme scheme;
  double alpha;    // 1 except DeepNorm
  double dropout;  // on G's output, training only
};

// `points`: tap names of the three intermediate points in order of computation;
// `norm_name`: the norm's parameter prefix, its input is tapped as "{norm_name}.input".
torch::Tensor residual(const ResidualSpec& spec, bool training, Norm& norm, const std::string& norm_name,
                       const std::function<torch::Tensor(const torch::Tensor&)>& G, const torch::Tensor& x,
                       const std::array<const char*, 3>& points, const TapSite& tap);

}  // namespace stx
