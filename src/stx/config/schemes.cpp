// stx/config/schemes.cpp — the scheme table of schemes.h.
#include "stx/config/schemes.h"

#include <algorithm>
#include <cmath>

#include "stx/config/config_io.h"

namespace stx {

const std::vector<SchemeRow>& scheme_table() {
  // clang-format off
  static const std::vector<SchemeRow> rows{
      {"post", "post", "post", "Post-LN", "",
       "x ← LN(x + G(x)) (Vaswani et al. 2017; Xiong et al. 2020 Fig. 1a)",
       "#d62728", "#ff9896", Scheme::Post, false, std::nullopt,
       kUseSweep | kUseTheory | kUseTheoryProfile | kUseDemo | kUseCollapse | kUseCollapseSgd},
      {"pre", "pre", "pre", "Pre-LN", "",
       "x ← x + G(LN(x)), final LN (Xiong et al. 2020 Fig. 1b)",
       "#1f77b4", "#aec7e8", Scheme::Pre, false, std::nullopt,
       kUseSweep | kUseTheory | kUseTheoryProfile | kUseDemo | kUseCollapse},
      {"deepnorm", "deepnorm", "", "DeepNorm", "",
       "x ← LN(αx + G(x)) with β-scaled init (DeepNet; Wang et al. 2022)",
       "#2ca02c", "#98df8a", Scheme::DeepNorm, false, std::nullopt,
       kUseSweep | kUseTheory | kUseTheoryProfile | kUseDemo},
      {"post-init", "post_init", "", "Post-LN-init", "",
       "Post-LN with layer l's weights divided by N−l+1 at init (DeepNet §3)",
       "#ff7f0e", "#ffbb78", Scheme::PostInit, false, std::nullopt,
       kUseSweep | kUseTheoryProfile | kUseDemo},
      {"sigma", "post_sigma", "sigma-post", "Post-LN + σReparam", "σReparam + Post-LN",
       "Post-LN with every linear reparametrized as γ·W/σ(W) (σReparam; Zhai et al. 2023)",
       "#9467bd", "#c5b0d5", Scheme::Post, true, std::nullopt,
       kUseSweep | kUseTheory | kUseTheoryProfile | kUseDemo | kUseCollapse | kUseCollapseSgd},
      {"sigma-nonorm", "nonorm_sigma", "sigma-nonorm", "σReparam, no norm", "",
       "x ← x + G(x) with every linear as γ·W/σ(W) and no normalization (Zhai et al. 2023 §5)",
       "#8c564b", "#c49c94", Scheme::Post, true, NormKind::None,
       kUseCollapse | kUseCollapseSgd},
      // The stabilizers of 2019–2026 (docs/model.md#stabilizers).
      {"rezero", "rezero", "", "ReZero", "",
       "x ← x + α_l·G(x), α_l = 0 at init, no norm (Bachlechner et al. 2020)",
       "#17becf", "#9edae5", Scheme::ReZero, false, NormKind::None, kUseSweep},
      {"layerscale", "layerscale", "", "LayerScale", "",
       "x ← x + λ_l ⊙ G(LN(x)), λ_l = ε at init (CaiT; Touvron et al. 2021)",
       "#bcbd22", "#dbdb8d", Scheme::LayerScale, false, std::nullopt, kUseSweep},
      {"peri-ln", "peri_ln", "", "Peri-LN", "",
       "x ← x + LN(G(LN(x))) (Kim et al. 2025)",
       "#e377c2", "#f7b6d2", Scheme::PeriLN, false, std::nullopt, kUseSweep},
      {"mix-ln", "mix_ln", "", "Mix-LN", "",
       "Post-LN in the first ⌊p·L⌋ layers, Pre-LN above (Li et al. 2024)",
       "#7f7f7f", "#c7c7c7", Scheme::MixLN, false, std::nullopt, kUseSweep},
      {"ln-scaling", "ln_scaling", "", "LayerNorm Scaling", "",
       "Pre-LN with layer l's norm outputs × 1/√l (Sun et al. 2025)",
       "#393b79", "#9c9ede", Scheme::LNScaling, false, std::nullopt, kUseSweep},
      {"depth-scaled", "depth_scaled", "", "Depth-scaled (a/√L)", "",
       "x ← x + (a/√L)·G(LN(x)) (depth-μP; Yang et al. 2023, Bordelon et al. 2023)",
       "#637939", "#b5cf6b", Scheme::DepthScaled, false, std::nullopt, kUseSweep},
      {"t-fixup", "t_fixup", "", "T-Fixup", "",
       "x ← x + G(x), no norm, v/out/fc1/fc2 and embeddings scaled at init (Huang et al. 2020)",
       "#5254a3", "#6b6ecf", Scheme::TFixup, false, NormKind::None, kUseSweep},
      {"ds-init", "ds_init", "", "DS-Init", "",
       "Post-LN with layer l's uniform init bound × l^(−1/2) (Zhang, Titov, Sennrich 2019)",
       "#8ca252", "#cedb9c", Scheme::DSInit, false, std::nullopt, kUseSweep},
      {"admin", "admin", "", "Admin", "",
       "x ← LN(ω ⊙ x + G(x)), ω profiled before training (Liu et al. 2020)",
       "#b15928", "#fdbf6f", Scheme::Admin, false, std::nullopt, kUseSweep},
      {"normformer", "normformer", "", "NormFormer", "",
       "Pre-LN + LN after attention and after the FFN activation, head and residual scales (Shleifer et al. 2021)",
       "#6a3d9a", "#cab2d6", Scheme::NormFormer, false, std::nullopt, kUseSweep},
      {"sub-ln", "sub_ln", "", "Sub-LN (Magneto)", "",
       "Pre-LN + LN before out_proj and fc2, γ-scaled init (Wang et al. 2022, Magneto)",
       "#1b9e77", "#66c2a5", Scheme::SubLN, false, std::nullopt, kUseSweep},
      {"pre-rms", "pre_rms", "", "Pre-LN (RMSNorm)", "",
       "x ← x + G(RMSNorm(x)) (Zhang & Sennrich 2019)",
       "#8c6d31", "#e7ba52", Scheme::Pre, false, NormKind::RMSNorm, kUseSweep},
      {"pre-dyt", "pre_dyt", "", "Pre-LN (Dynamic Tanh)", "",
       "x ← x + G(DyT(x)), DyT = γ ⊙ tanh(αx) + β (Zhu et al. 2025)",
       "#843c39", "#e7969c", Scheme::Pre, false, NormKind::DyT, kUseSweep},
      {"post-qknorm", "post_qknorm", "", "Post-LN + QK-LayerNorm", "",
       "Post-LN with q and k layer-normalized per head (Dehghani et al. 2023)",
       "#7b4173", "#ce6dbd", Scheme::Post, false, std::nullopt, kUseSweep, {"model.qk_norm=true"}},
      {"pre-qknorm", "pre_qknorm", "", "Pre-LN + QK-LayerNorm", "",
       "Pre-LN with q and k layer-normalized per head (Wortsman et al. 2023)",
       "#a55194", "#de9ed6", Scheme::Pre, false, std::nullopt, kUseSweep, {"model.qk_norm=true"}},
      {"post-zloss", "post_zloss", "", "Post-LN + z-loss", "",
       "Post-LN trained with + 1e-4·log²Z (PaLM; Chowdhery et al. 2022)",
       "#31a354", "#a1d99b", Scheme::Post, false, std::nullopt, kUseSweep, {"train.z_loss=0.0001"}},
      {"pre-zloss", "pre_zloss", "", "Pre-LN + z-loss", "",
       "Pre-LN trained with + 1e-4·log²Z (PaLM; Chowdhery et al. 2022)",
       "#74c476", "#c7e9c0", Scheme::Pre, false, std::nullopt, kUseSweep, {"train.z_loss=0.0001"}},
      {"post-softcap", "post_softcap", "", "Post-LN + soft-capping", "",
       "Post-LN with attention logits 50·tanh(z/50), output logits 30·tanh(z/30) (Gemma 2)",
       "#e6550d", "#fdae6b", Scheme::Post, false, std::nullopt, kUseSweep,
       {"model.attn_softcap=50", "model.logit_softcap=30"}},
      {"pre-softcap", "pre_softcap", "", "Pre-LN + soft-capping", "",
       "Pre-LN with attention logits 50·tanh(z/50), output logits 30·tanh(z/30) (Gemma 2)",
       "#fd8d3c", "#fdd0a2", Scheme::Pre, false, std::nullopt, kUseSweep,
       {"model.attn_softcap=50", "model.logit_softcap=30"}},
      {"pre-sigma", "pre_sigma", "", "Pre-LN + σReparam", "",
       "Pre-LN with every linear reparametrized as γ·W/σ(W) (Zhai et al. 2023)",
       "#756bb1", "#bcbddc", Scheme::Pre, true, std::nullopt, kUseSweep},
  };
  // clang-format on
  return rows;
}

const std::vector<std::string>& modifier_defaults() {
  static const std::vector<std::string> d{"model.qk_norm=false", "model.attn_softcap=0", "model.logit_softcap=0",
                                          "train.z_loss=0"};
  return d;
}

std::vector<std::string> SchemeRow::overrides() const {
  std::vector<std::string> o{"model.scheme=" + to_string(scheme),
                             std::string("model.sigma_reparam=") + (sigma_reparam ? "true" : "false")};
  if (norm) o.push_back("model.norm=" + to_string(*norm));
  for (auto& d : modifier_defaults()) {
    const auto key = d.substr(0, d.find('=') + 1);
    auto on =
        std::find_if(modifiers.begin(), modifiers.end(), [&](const std::string& m) { return m.rfind(key, 0) == 0; });
    o.push_back(on == modifiers.end() ? d : *on);
  }
  return o;
}

void SchemeRow::apply(Config& c) const {
  for (auto& o : overrides()) apply_override(c, o);
}

void SchemeRow::apply(ModelConfig& m) const {
  Config c;
  c.model = m;
  apply(c);
  m = c.model;
}

std::vector<const SchemeRow*> schemes_used_by(SchemeUse u) {
  std::vector<const SchemeRow*> out;
  for (auto& r : scheme_table())
    if (r.used_by(u)) out.push_back(&r);
  return out;
}

const SchemeRow* find_scheme(const std::string& name, SchemeUse u) {
  for (auto* r : schemes_used_by(u))
    if (r->name == name) return r;
  return nullptr;
}

std::string scheme_names_text(SchemeUse u, const char* sep) {
  std::string s;
  for (auto* r : schemes_used_by(u)) s += (s.empty() ? "" : sep) + r->name;
  return s;
}

bool post_style_layer(Scheme s, double mix_ln_ratio, int64_t l, int64_t L) {
  switch (s) {
    case Scheme::Post:
    case Scheme::DeepNorm:
    case Scheme::PostInit:
    case Scheme::TFixup:
    case Scheme::DSInit:
    case Scheme::Admin: return true;
    case Scheme::MixLN: return l < static_cast<int64_t>(std::floor(mix_ln_ratio * static_cast<double>(L)));
    default: return false;
  }
}

bool has_final_norm(Scheme s) { return !post_style_layer(s, 0.0, 0, 1) && s != Scheme::ReZero; }

}  // namespace stx
