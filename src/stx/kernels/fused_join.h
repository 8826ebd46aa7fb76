// stx/kernels/fused_join.h — the residual join around a fused sub-layer's G (fused_sublayer.h),
// forward and backward by hand, for every scheme whose join is one of (model/residual.h):
//   Pre-LN style:   h = s · N(x),  y = ω ⊙ x + drop(c · γ ⊙ N_out(κ ⊙ G(h)))
//                   pre, ln-scaling (s), depth-scaled (c), rezero (γ = α_l, no N), layerscale
//                   (γ = λ_l ∈ ℝ^d), peri-ln (N_out), Mix-LN's upper layers, normformer (κ ∈ ℝ^h
//                   the head scales and N_out attn_ln on the attention; ω w_resid on the FFN)
//   Post-LN style:  h = x,         y = N(α · ω ⊙ x + drop(G(h)))
//                   post, post-init, deepnorm (α), admin (ω ∈ ℝ^d), Mix-LN's lower layers;
//                   with norm: none (σReparam without norms) N is the identity
// N and N_out are LayerNorm, RMSNorm or Dynamic Tanh (or absent: identity); γ, ω, κ absent: 1; κ scales each
// head's d/h columns. Backward, with dy the gradient of y and t = c · drop(dy) that of γ ⊙ N_out:
//   Pre:  dγ = Σ t ⊙ N_out(κ ⊙ G) (over rows; and over columns when γ is a scalar), u = N_out'(γ ⊙ t),
//         dκ = Σ u ⊙ G (per head), dG = κ ⊙ u, dω = Σ dy ⊙ x, dx = ω ⊙ dy + N'(s · dh)
//   Post: ds = N'(dy), dG = drop(ds), dω = Σ α · ds ⊙ x, dx = ω ⊙ α · ds + dh
// N'(·) is norm_rows.h's backward, which also gives the norm's weight and bias gradients.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace stx {

// The join's constants (model/residual.h's ResidualSpec and the norm's).
struct FusedJoin {
  bool pre = false;           // Pre-LN style (else Post-LN style)
  bool normed = true;         // N (and N_out) present (else the identity: norm none)
  bool centered = true;       // LayerNorm (else RMSNorm; Dynamic Tanh: by its α)
  double eps = 1e-5;          // the norm's ε
  double alpha = 1.0;         // Post-LN style: DeepNorm's α
  double norm_scale = 1.0;    // Pre-LN style: s (LayerNorm Scaling)
  double branch_scale = 1.0;  // Pre-LN style: c (depth-scaled)
  double dropout = 0.0;       // on the branch's output; 0 outside training
};

// A norm's parameters (w undefined: no norm; a: Dynamic Tanh's α).
struct NormWeights {
  torch::Tensor w, b, a;
};

// The join's parameters; undefined where the scheme has none.
struct JoinWeights {
  torch::Tensor norm_w, norm_b, norm_a;  // N's weight and bias [d], Dynamic Tanh's α [1]
  torch::Tensor out_w, out_b, out_a;     // N_out's (Peri-LN; NormFormer's attn_ln), Pre-LN style
  torch::Tensor gain;                    // γ: ReZero's α_l [1] or LayerScale's λ_l [d] (Pre-LN style)
  torch::Tensor skip;                    // ω: Admin's [d] (Post-LN style), NormFormer's w_resid [d] (Pre-LN)
  torch::Tensor heads;                   // κ: NormFormer's head scales c_attn [h] (Pre-LN style)
  enum Index : size_t { kNormW, kNormB, kNormA, kOutW, kOutB, kOutA, kGain, kSkip, kHeads, kCount };
};

// Where a product's or a norm's parameter gradients go: `w` empty — new tensors returned to
// autograd; else added to the parameters' .grad() (direct_grads.h), W's rows in w.size() equal
// blocks (q, k, v), b's likewise (b empty: no bias).
struct GradsInto {
  std::vector<torch::Tensor> w, b;
};

// A LayerNorm (centered) or RMSNorm over the rows of x (norm_rows.h), or Dynamic Tanh where its α
// `a` is given: y = N(α·x + g) (g undefined: N(x)), with what its backward needs saved in xhat,
// rstd (the normalized rows and 1/σ; for Dynamic Tanh tanh(a·s) and s).
torch::Tensor norm_forward(const torch::Tensor& x, const torch::Tensor& g, double alpha, const torch::Tensor& w,
                           const torch::Tensor& b, const torch::Tensor& a, bool centered, double eps,
                           torch::Tensor& xhat, torch::Tensor& rstd);
// Its backward: ds from dy; dw = Σ dy·ŝ, db = Σ dy (when N has a bias), da (Dynamic Tanh) stored in
// `dw`, `db`, `da` or, direct (tw defined), added to the targets tw, tb, ta.
torch::Tensor norm_backward(const torch::Tensor& dy, const torch::Tensor& xhat, const torch::Tensor& rstd,
                            const torch::Tensor& w, bool has_b, const torch::Tensor& a, bool centered,
                            const torch::Tensor& tw, const torch::Tensor& tb, const torch::Tensor& ta,
                            torch::Tensor& dw, torch::Tensor& db, torch::Tensor& da);

class Join {
 public:
  Join() = default;
  Join(const FusedJoin& j, JoinWeights w) : j_(j), w_(std::move(w)) {}
  const FusedJoin& spec() const { return j_; }

  // Forward. before: G's input (Pre-LN style s·N(x), else x). after: y from x and G's output g
  // (changed in place: scaled, dropped).
  torch::Tensor before(const torch::Tensor& x);
  torch::Tensor after(const torch::Tensor& x, torch::Tensor& g);

  // Backward (the object itself holds what it needs: the weights, the norms' rows, the seed).
  // `into`: the weights' .grad() in JoinWeights order (direct_grads.h), or empty: then
  // the gradients are left in grads(). branch_backward: from dy, the gradient of G's output and
  // the start of dx; input_backward (Pre-LN style): adds G's input gradient dh to dx through N.
  void branch_backward(const torch::Tensor& dy, torch::Tensor& dg, torch::Tensor& dx,
                       const std::vector<torch::Tensor>& into);
  void input_backward(const torch::Tensor& dh, torch::Tensor& dx, const std::vector<torch::Tensor>& into);
  const JoinWeights& grads() const { return grads_; }

 private:
  FusedJoin j_;
  JoinWeights w_, grads_;
  uint64_t seed_ = 0;           // the branch dropout's
  torch::Tensor xhat_, rstd_;   // N's normalized rows and 1/σ
  torch::Tensor ohat_, orstd_;  // N_out's
  torch::Tensor v_;             // γ's input N_out(κ ⊙ G)
  torch::Tensor u_;             // κ's input G
  torch::Tensor x_;             // ω's input
};

}  // namespace stx
