// stx/config/schemes.cpp — the scheme table of schemes.h.
#include "stx/config/schemes.h"

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
  };
  // clang-format on
  return rows;
}

std::vector<std::string> SchemeRow::overrides() const {
  std::vector<std::string> o{"model.scheme=" + to_string(scheme),
                             std::string("model.sigma_reparam=") + (sigma_reparam ? "true" : "false")};
  if (norm) o.push_back("model.norm=" + to_string(*norm));
  return o;
}

void SchemeRow::apply(ModelConfig& m) const {
  m.scheme = scheme;
  m.sigma_reparam = sigma_reparam;
  if (norm) m.norm = *norm;
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

}  // namespace stx
