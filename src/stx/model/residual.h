// stx/model/residual.h — how a sub-layer G joins the residual stream:
//   Post-LN style:  x ← N(α·ω ⊙ x + G(x))  post, post-init (α = 1; Xiong et al. eq. 1), deepnorm
//                                          (DeepNet eq. 4, Wang et al. 2022), Mix-LN's lower layers,
//                                          admin (ω ∈ ℝ^d profiled, admin.h; Liu et al. 2020)
//   Pre-LN style:   x ← w ⊙ x + B(x),  B(x) = c · g ⊙ N_out(G(s · N(x)))
//     pre:          c = g = s = 1, no N_out                                  (Xiong et al.)
//     rezero:       g = α_l (scalar, init 0), N = identity                    (Bachlechner et al. 2020)
//     layerscale:   g = λ_l ∈ ℝ^d (init ε)                                     (Touvron et al. 2021, CaiT)
//     peri-ln:      N_out a second norm on the branch's output                (Kim et al. 2025)
//     ln-scaling:   s = 1/√l, l the 1-based layer index                        (Sun et al. 2025)
//     depth-scaled: c = a/√L, L the stack's depth                              (Yang et al. 2023)
//     normformer:   w = w_resid ∈ ℝ^d on the FFN sub-layer (init 1); its other changes are inside G
//                   (layer.h)                                                  (Shleifer et al. 2021)
//     pre, sub-ln:  w = 1 (Sub-LN's norms are inside G: attention.h, ffn.h)
// Dropout is applied to the branch's output (G's, for Post-LN style) in training. Three tap
// points per sub-layer, named by the caller in Xiong et al.'s (2020, appendix) notation
// (post1..3 / pre1..3, post4..5 + output, …), and each norm's input.
#pragma once
#include <torch/torch.h>

#include <array>
#include <functional>
#include <string>

#include "stx/config/config.h"
#include "stx/model/admin.h"
#include "stx/model/norm.h"
#include "stx/model/taps.h"

namespace stx {

struct ResidualSpec {
  bool post_style = true;
  double alpha = 1.0;         // DeepNorm's α (Post-LN style)
  double norm_scale = 1.0;    // s: LayerNorm Scaling's 1/√l
  double branch_scale = 1.0;  // c: depth-scaled a/√L
  double dropout = 0.0;       // on the branch's output, training only
};

// One sub-layer's own modules. `norm_name` / `out_norm_name` are the parameter prefixes; their
// inputs are tapped as "{name}.input".
struct SubLayer {
  Norm& norm;
  const std::string& norm_name;
  Norm* out_norm = nullptr;  // Peri-LN's output norm
  const std::string* out_norm_name = nullptr;
  torch::Tensor gain;  // ReZero's α_l or LayerScale's λ_l (undefined: none)
  torch::Tensor skip;  // Admin's ω_i or NormFormer's w_resid on the skip path (undefined: 1)
  // Admin's profiling pass (admin.h): sets `skip` to the running ω and records this sub-layer
  // under `skip_name`.
  AdminProfile* profile = nullptr;
  std::string skip_name;
};

// `points`: tap names of the three intermediate points in order of computation.
torch::Tensor residual(const ResidualSpec& spec, bool training, const SubLayer& sub,
                       const std::function<torch::Tensor(const torch::Tensor&)>& G, const torch::Tensor& x,
                       const std::array<const char*, 3>& points, const TapSite& tap);

}  // namespace stx
