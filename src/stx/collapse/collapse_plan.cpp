// stx/collapse/collapse_plan.cpp — see collapse_plan.h.
#include "stx/collapse/collapse_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "stx/config/config_io.h"
#include "stx/config/schemes.h"
#include "stx/core/error.h"
#include "stx/grid/grid_plan.h"

namespace stx::collapse {

namespace {

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    const auto a = item.find_first_not_of(" \t"), b = item.find_last_not_of(" \t");
    out.push_back(a == std::string::npos ? "" : item.substr(a, b - a + 1));
  }
  if (!text.empty() && text.back() == ',') out.push_back("");
  return out;
}

// Keys every run sets itself (train.lr is not one: it is the Adam arms' base rate).
const std::set<std::string>& own_keys() {
  static const std::set<std::string> k{"train.max_steps", "train.warmup_steps",  "train.schedule",
                                       "train.optimizer", "train.on_divergence", "model.scheme",
                                       "model.norm",      "model.sigma_reparam"};
  return k;
}

}  // namespace

// The scheme table's collapse rows (config/schemes.h): every Adam arm, then every SGD arm. Each
// arm fixes model.norm = layernorm unless its row says otherwise.
const std::vector<Arm>& all_arms() {
  static const std::vector<Arm> a = [] {
    std::vector<Arm> out;
    for (const bool sgd : {false, true})
      for (auto* r : schemes_used_by(sgd ? kUseCollapseSgd : kUseCollapse)) {
        const auto& title = r->arm_title.empty() ? r->title : r->arm_title;
        Arm arm{r->arm + (sgd ? "-sgd" : ""),
                title + (sgd ? ", SGD" : ", Adam"),
                sgd,
                {"model.norm=layernorm"},
                sgd ? r->sgd_color : r->color};
        for (auto& o : r->overrides()) arm.overrides.push_back(o);
        arm.overrides.push_back(sgd ? "train.optimizer=sgd" : "train.optimizer=adam");
        out.push_back(arm);
      }
    return out;
  }();
  return a;
}

const Arm& find_arm(const std::string& name) {
  std::string names;
  for (auto& a : all_arms()) {
    if (a.name == name) return a;
    names += (names.empty() ? "" : ", ") + a.name;
  }
  throw InputError("--arms: unknown arm '" + name + "' (allowed: " + names + ")");
}

std::vector<std::string> parse_arms(const std::string& text) {
  std::vector<std::string> out;
  for (auto& item : split(text)) {
    find_arm(item);
    if (std::find(out.begin(), out.end(), item) != out.end())
      throw InputError("--arms '" + text + "': '" + item + "' is listed twice");
    out.push_back(item);
  }
  if (out.empty()) throw InputError("--arms: needs at least one arm");
  return out;
}

std::vector<double> parse_multipliers(const std::string& text) {
  std::vector<double> out;
  for (auto& item : split(text)) {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || !std::isfinite(v) || v <= 0)
      throw InputError("--multipliers '" + text + "': '" + item + "' is not a positive number (expected e.g. 1,2,4,8)");
    if (!out.empty() && v <= out.back())
      throw InputError("--multipliers '" + text + "': must increase (the ladder climbs until a run diverges)");
    if (!out.empty() && fmt::format("{:g}", v) == fmt::format("{:g}", out.back()))
      throw InputError("--multipliers '" + text + "': " + item +
                       " and the one before it name the same run (they agree to 6 digits)");
    out.push_back(v);
  }
  if (out.empty()) throw InputError("--multipliers: needs at least one value");
  return out;
}

std::string run_name(const Arm& a, double m) { return fmt::format("{}-x{:g}", a.name, m); }

double run_lr(const CollapsePlan& p, const Arm& a, double m) { return (a.sgd ? p.sgd_lr : p.base.train.lr) * m; }

std::vector<std::string> run_overrides(const CollapsePlan& p, const Arm& a, double m) {
  std::vector<std::string> o = a.overrides;
  o.push_back(fmt::format("train.max_steps={}", p.steps));
  o.push_back(fmt::format("train.lr={:.10g}", run_lr(p, a, m)));
  o.insert(o.end(), {"train.warmup_steps=0", "train.schedule=constant", "train.on_divergence=stop"});
  return o;
}

CollapsePlan make_plan(const std::string& config_path, const std::vector<std::string>& overrides,
                       const std::vector<std::string>& arms, const std::vector<double>& multipliers, int64_t steps,
                       double sgd_lr, double threshold, double spike_nats, bool quick) {
  if (steps <= 0) throw InputError(fmt::format("--steps {}: must be a positive number of updates", steps));
  if (!(sgd_lr > 0) || !std::isfinite(sgd_lr))
    throw InputError(fmt::format("--sgd-lr {}: must be a positive number", sgd_lr));
  if (!(threshold > 0) || !std::isfinite(threshold))
    throw InputError(fmt::format("--collapse-threshold {}: must be a positive entropy in nats", threshold));
  if (!(spike_nats > 0) || !std::isfinite(spike_nats))
    throw InputError(fmt::format("--spike-nats {}: must be positive", spike_nats));
  CollapsePlan p;
  p.config_path = config_path, p.overrides = overrides, p.base = resolve_config(config_path, overrides);
  for (auto& n : arms) p.arms.push_back(find_arm(n));
  p.multipliers = multipliers, p.steps = steps, p.sgd_lr = sgd_lr, p.threshold = threshold, p.spike_nats = spike_nats;
  p.quick = quick;
  grid::refuse_own_keys(overrides, own_keys(), "the experiment", "see stx experiment entropy-collapse --help");
  if (p.base.model.arch == Arch::Encoder)
    throw InputError("--config " + config_path +
                     ": the experiment trains a decoder or encoder-decoder model (model.arch is encoder)");
  std::vector<grid::PlannedRun> runs;
  for (auto& a : p.arms)
    for (double m : multipliers) runs.push_back({run_name(a, m), run_overrides(p, a, m)});
  grid::validate_runs(p.base, runs);
  return p;
}

nlohmann::json plan_json(const CollapsePlan& p) {
  nlohmann::json arms = nlohmann::json::array();
  for (auto& a : p.arms) arms.push_back(a.name);
  return {{"config_path", p.config_path},
          {"overrides", p.overrides},
          {"config", config_to_json(p.base)},
          {"steps", p.steps},
          {"sgd_lr", p.sgd_lr},
          {"arms", arms},
          {"multipliers", p.multipliers}};
}

std::string plan_mismatch(const nlohmann::json& stored, const CollapsePlan& p) {
  if (!stored.contains("steps") || !stored.contains("config") || !stored["config"].is_object() ||
      !stored.contains("sgd_lr"))
    return "its experiment_plan.json lacks \"steps\", \"sgd_lr\" or \"config\"";
  if (stored["steps"] != p.steps)
    return fmt::format("it was run with --steps {}, not {}", stored["steps"].dump(), p.steps);
  if (stored["sgd_lr"] != p.sgd_lr)
    return fmt::format("it was run with --sgd-lr {}, not {}", stored["sgd_lr"].dump(), p.sgd_lr);
  return grid::config_mismatch(stored["config"], p.base, own_keys());
}

}  // namespace stx::collapse
