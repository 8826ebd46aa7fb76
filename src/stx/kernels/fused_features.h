// stx/kernels/fused_features.h — the capability gate of the fused path. A residual sub-layer
// asks for a set of features: what its config and its run need (the join, the norm, the
// branch's options, watched intermediate points, the device…). Each fused kernel declares the
// set it implements (fused_sublayer.h). A layer runs fused only where every sub-layer's ask lies
// inside its kernel's set (model/layer.cpp: the one place the path is chosen), and a fused kernel
// refuses an ask outside its set. A feature the model gains is therefore composed-only until a
// kernel declares it: a component asks for it by name (Features::add_named) until then, and by a
// Feature value once a kernel implements it.
#pragma once
#include <bitset>
#include <initializer_list>
#include <string>
#include <vector>

namespace stx {

enum class Feature : int {
  // The join (fused_join.h).
  PostJoin,     // x ← N(α·ω ⊙ x + G(x))                                 (Xiong et al. eq. 1)
  PreJoin,      // x ← x + c·γ ⊙ N_out(G(s·N(x)))                         (Xiong et al. eq. 2)
  Alpha,        // DeepNorm's α ≠ 1                                        (Wang et al. 2022, eq. 4)
  NormScale,    // s = 1/√(l+1), LayerNorm Scaling
  BranchScale,  // c = a/√L, depth-scaled residuals
  Gain,         // γ: ReZero's α_l, LayerScale's λ_l
  Skip,         // ω: Admin's skip weights, NormFormer's w_resid
  OutNorm,      // N_out on the branch's output: Peri-LN, NormFormer's attn_ln
  HeadScales,   // NormFormer's c_attn
  // The norm N, one kind for the whole layer.
  LayerNorm,
  RMSNorm,
  DynamicTanh,
  NoNorm,
  MixedNorms,  // norms of different kinds in one layer
  // Inside the branch G.
  InnerNorm,  // Sub-LN's inner_attn_ln / ffn_layernorm, NormFormer's ffn_layernorm
  QKNorm,     // QK-LayerNorm over each head's q and k
  Softcap,    // scores z ← c·tanh(z/c) (Gemma 2)
  Causal,
  Bias,
  SigmaReparam,  // W/σ(W) as the product's weight (Zhai et al. 2023)
  ReLU,
  GELU,
  OtherActivation,
  Dropout,           // on the branch's output
  AttentionDropout,  // on the attention probabilities
  // The run.
  Taps,          // intermediate points watched (model/taps.h)
  AdminProfile,  // Admin's profiling pass (model/admin.h)
  CPU,           // the tensors' device
  OtherDevice,
  Float32,  // the tensors' type
  Float64,
  OtherType,
  SdpaCore,          // the attention core set to LibTorch's SDPA (kernels.h)
  ReferenceKernels,  // kernels() == Reference (kernels.h)
  Composed,          // the model was asked to run its layers composed (`stx bench --kernels composed`)
  kCount
};

class Features {
 public:
  Features() = default;
  Features(std::initializer_list<Feature> fs) {
    for (auto f : fs) add(f);
  }
  Features& add(Feature f, bool on = true) {
    if (on) bits_.set(static_cast<size_t>(f));
    return *this;
  }
  // A feature no kernel declares, by its name ("rope"): the layer runs composed where it is asked.
  Features& add_named(const std::string& name, bool on = true);
  Features& operator|=(const Features& o);
  friend Features operator|(Features a, const Features& b) { return a |= b; }
  bool has(Feature f) const { return bits_.test(static_cast<size_t>(f)); }
  bool within(const Features& set) const { return (bits_ & ~set.bits_).none() && named_.empty(); }
  // The features of this set outside `set`, by name ("taps, rope"); "" when none.
  std::string outside(const Features& set) const;
  bool empty() const { return bits_.none() && named_.empty(); }

 private:
  std::bitset<static_cast<size_t>(Feature::kCount)> bits_;
  std::vector<std::string> named_;  // sorted, no repeats
};

// A feature's name in messages ("qk-norm", "taps").
const char* feature_name(Feature f);

// Throws (TORCH_CHECK) when `asked` is not within `implemented`, naming the kernel and what it lacks.
void check_implements(const char* kernel, const Features& asked, const Features& implemented);

}  // namespace stx
