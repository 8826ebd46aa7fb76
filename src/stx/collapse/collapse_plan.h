// stx/collapse/collapse_plan.h — the grid of `stx experiment entropy-collapse` (Zhai et al.,
// ICML 2023, §3 and §5): configurations ("arms") × learning-rate multipliers, every run without
// warm-up (constant schedule, train.warmup_steps = 0) and with the divergence guard stopping it.
//
// Arms (DIR/{arm}-x{multiplier}; the scheme table's rows with an arm name, config/schemes.h):
//   post, pre                      the baselines: Post-LN / Pre-LN, Adam
//   post-sgd                       Post-LN with SGD (momentum train.momentum): the baseline for
//                                  the paper's "without adaptive optimizers" claim
//   sigma-post, sigma-post-sgd     σReparam on every linear + Post-LN, Adam / SGD
//   sigma-nonorm, sigma-nonorm-sgd σReparam with no normalization at all (model.norm = none), Adam / SGD
// A run's learning rate is (Adam: the config's train.lr, which --set may change; SGD: --sgd-lr)
// × the multiplier.
// Multipliers climb in the given order; once a run of an arm diverges (its outcome label,
// grid/outcome.h: the divergence guard stopped it, or a loss spike it did not come back below the
// unigram plateau from), its higher multipliers are not run ("until it fails").
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "stx/config/config.h"

namespace stx::collapse {

struct Arm {
  std::string name, title;
  bool sgd = false;
  std::vector<std::string> overrides;  // model.norm, model.scheme, model.sigma_reparam, train.optimizer
  std::string color;                   // plots (the scheme table's colour of its row and optimizer)
};
// Every arm, in report order.
const std::vector<Arm>& all_arms();
const Arm& find_arm(const std::string& name);  // InputError listing the names

struct CollapsePlan {
  std::string config_path;
  std::vector<std::string> overrides;  // the user's --set, applied first
  Config base;                         // resolved and validated
  std::vector<Arm> arms;
  std::vector<double> multipliers;
  int64_t steps = 0;
  double sgd_lr = 0.01;
  double threshold = 0.1;   // collapse: lowest layer entropy below this (nats)
  double spike_nats = 1.0;  // loss spike: a train loss this far above the lowest before it
  bool quick = false;
};

std::vector<std::string> parse_arms(const std::string& text);
std::vector<double> parse_multipliers(const std::string& text);

// Checks the numbers and that every run's config validates (InputError naming the run).
CollapsePlan make_plan(const std::string& config_path, const std::vector<std::string>& overrides,
                       const std::vector<std::string>& arms, const std::vector<double>& multipliers, int64_t steps,
                       double sgd_lr, double threshold, double spike_nats, bool quick);

std::string run_name(const Arm& a, double multiplier);  // "post-x4", "sigma-post-x0.5"
double run_lr(const CollapsePlan& p, const Arm& a, double multiplier);
// The experiment's --set overrides of one run (after the user's).
std::vector<std::string> run_overrides(const CollapsePlan& p, const Arm& a, double multiplier);

// DIR/experiment_plan.json, and why a stored one does not match (config, steps, SGD lr), "" if it does.
nlohmann::json plan_json(const CollapsePlan& p);
std::string plan_mismatch(const nlohmann::json& stored, const CollapsePlan& p);

}  // namespace stx::collapse
