// stx/config/schemes.h — the one table of named model variants ("schemes"). Every command that
// compares variants reads its names, titles, definitions, config overrides and plot colours
// here: stx sweep (rows of the depth grid), stx theory (the gradient experiments' columns),
// stx demo (its columns) and stx experiment entropy-collapse (its arms). Adding a scheme means
// its semantics in the model code and one row in schemes.cpp (docs/design.md, "Adding a scheme").
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "stx/config/config.h"

namespace stx {

// Which commands use a row (a bit set).
enum SchemeUse : unsigned {
  kUseSweep = 1u << 0,          // stx sweep --schemes
  kUseTheory = 1u << 1,         // stx theory: Theorem 1's columns
  kUseTheoryProfile = 1u << 2,  // stx theory: the per-layer gradient profile's columns (a superset)
  kUseDemo = 1u << 3,           // stx demo
  kUseCollapse = 1u << 4,       // stx experiment entropy-collapse: the Adam arm `arm`
  kUseCollapseSgd = 1u << 5,    // … and the SGD arm `arm`-sgd
};

struct SchemeRow {
  std::string name;        // run names and `stx sweep --schemes`: "sigma"
  std::string key;         // the theory lab's JSON series key (stored results use it): "post_sigma"
  std::string arm;         // the entropy-collapse experiment's arm (its SGD arm adds "-sgd"): "sigma-post"
  std::string title;       // tables and legends, as the papers say it: "Post-LN + σReparam"
  std::string arm_title;   // the entropy-collapse experiment's name (σReparam first), "" = title
  std::string definition;  // one line for report legends
  std::string color;       // plots; the SGD arm uses sgd_color
  std::string sgd_color;
  Scheme scheme = Scheme::Post;  // model.scheme
  bool sigma_reparam = false;    // model.sigma_reparam
  std::optional<NormKind> norm;  // model.norm, when the variant fixes it
  unsigned uses = 0;
  // The modifiers the variant switches on ("model.qk_norm=true", …); every modifier it does
  // not name is set to off (modifier_defaults()), so a row is the whole variant.
  std::vector<std::string> modifiers = {};

  // The --set assignments that select this variant: model.scheme, model.sigma_reparam,
  // model.norm when the row fixes it, and every modifier.
  std::vector<std::string> overrides() const;
  // The same assignments applied to a config; to a model config alone (train.* modifiers such as
  // train.z_loss then have no effect: for callers that do not train with a TrainConfig).
  void apply(Config& c) const;
  void apply(ModelConfig& m) const;
  bool used_by(SchemeUse u) const { return (uses & u) != 0; }
};

// Layer l (0-based) of a stack of L joins its sub-layers Post-LN-style (x ← N(αx + G(x))) rather
// than Pre-LN-style (x ← x + branch(x)): post, deepnorm, post-init, and Mix-LN's lower layers.
bool post_style_layer(Scheme s, double mix_ln_ratio, int64_t l, int64_t L);
// The stack ends in a final norm (every Pre-LN-style scheme; ReZero's is the identity, no norm).
bool has_final_norm(Scheme s);

// "key=value" for every modifier a row may switch on, at its off value:
// model.qk_norm, model.attn_softcap, model.logit_softcap, train.z_loss.
const std::vector<std::string>& modifier_defaults();

// Every row, in table order (DeepNet Table 1's: Post-LN, Pre-LN, DeepNorm, then the rest).
const std::vector<SchemeRow>& scheme_table();
// The rows a command uses, in table order.
std::vector<const SchemeRow*> schemes_used_by(SchemeUse u);
// The row named `name` among those used by `u`, or nullptr.
const SchemeRow* find_scheme(const std::string& name, SchemeUse u);
// "post, pre, …": the names of the rows used by `u` (for error messages and --help).
std::string scheme_names_text(SchemeUse u, const char* sep = ", ");

}  // namespace stx
