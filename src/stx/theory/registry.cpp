// stx/theory/registry.cpp — the list of `stx theory` experiments, in report order.
#include "stx/theory/experiment.h"
#include "stx/theory/experiments.h"

namespace stx::theory {

const std::vector<Experiment>& experiments() {
  static const std::vector<Experiment> list{
      {"lemma2", "Xiong et al. Lemma 2: E‖x_l‖²/d per layer, Post-LN = 3/2, Pre-LN in [1+l/2, 1+3l/2]", run_lemma2},
      {"lemma3",
       "Xiong et al. Lemma 3: ‖J_LN(x)‖₂ = √d/‖x − mean(x)‖ exactly; the paper's O(√d/‖x‖) needs a small mean",
       run_lemma3},
      {"theorem1", "Xiong et al. Theorem 1: ‖∂L/∂W^{2,L}‖_F at init, Post-LN flat in L, Pre-LN ∝ 1/√L", run_theorem1},
      {"grad-profile", "Xiong et al. Figure 3: per-layer W^{2,l} gradient norms at init, 6-6 … 14-14",
       run_grad_profile},
      {"deepnet-update", "DeepNet Figures 4–5: model update ‖ΔF‖ over the first steps across depth",
       run_deepnet_update},
      {"sigma-toy", "σReparam article's toy: entropy collapse as σ grows, and σReparam's fixed point", run_sigma_toy},
      {"entropy-bound", "Zhai et al. Theorem 3.1: attention entropy ≥ the closed-form bound in σ", run_entropy_bound},
      {"stabilizers-init",
       "ReZero, LayerScale, Admin, T-Fixup, Sub-LN: the properties their papers state at initialization",
       run_stabilizers_init},
  };
  return list;
}

const Experiment* find_experiment(const std::string& name) {
  for (auto& e : experiments())
    if (e.name == name) return &e;
  return nullptr;
}

}  // namespace stx::theory
