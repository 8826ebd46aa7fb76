// stx/sweep/sweep_plan.cpp — see sweep_plan.h.
#include "stx/sweep/sweep_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "stx/config/config_io.h"
#include "stx/config/schemes.h"
#include "stx/core/error.h"
#include "stx/grid/grid_plan.h"

namespace stx::sweep {

namespace {

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const auto comma = text.find(',', start);
    auto item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const auto a = item.find_first_not_of(" \t"), b = item.find_last_not_of(" \t");
    out.push_back(a == std::string::npos ? "" : item.substr(a, b - a + 1));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

// Keys every run sets itself: a difference in the base config there changes no run.
const std::set<std::string>& sweep_keys() {
  static const std::set<std::string> k = [] {
    std::set<std::string> keys{"train.max_steps", "model.encoder_layers", "model.decoder_layers"};
    for (auto* r : schemes_used_by(kUseSweep))
      for (auto& o : r->overrides()) keys.insert(o.substr(0, o.find('=')));
    return keys;
  }();
  return k;
}

}  // namespace

const SchemeRow& scheme_row(const std::string& name) {
  const auto* r = find_scheme(name, kUseSweep);
  if (!r) throw InputError("unknown sweep scheme '" + name + "' (allowed: " + scheme_names_text(kUseSweep) + ")");
  return *r;
}

std::vector<int64_t> parse_depths(const std::string& text) {
  std::vector<int64_t> out;
  for (auto& item : split(text)) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size())
      throw InputError("--depths '" + text + "': '" + item + "' is not an integer (expected e.g. 6,18,50,100)");
    if (v <= 0) throw InputError("--depths '" + text + "': depth " + item + " must be a positive number of layers");
    if (std::find(out.begin(), out.end(), v) != out.end())
      throw InputError("--depths '" + text + "': depth " + item + " is listed twice");
    out.push_back(v);
  }
  return out;
}

std::vector<std::string> parse_schemes(const std::string& text) {
  std::vector<std::string> out;
  for (auto& item : split(text)) {
    if (!find_scheme(item, kUseSweep))
      throw InputError("--schemes '" + text + "': unknown scheme '" + item +
                       "' (allowed: " + scheme_names_text(kUseSweep) + ")");
    if (std::find(out.begin(), out.end(), item) != out.end())
      throw InputError("--schemes '" + text + "': scheme '" + item + "' is listed twice");
    out.push_back(item);
  }
  return out;
}

std::string run_name(const std::string& scheme, int64_t depth) { return fmt::format("{}-L{}", scheme, depth); }

std::string depth_label(const Config& base, int64_t depth) {
  return base.model.arch == Arch::EncoderDecoder ? fmt::format("{}L-{}L", depth, depth) : fmt::format("{}L", depth);
}

std::vector<std::string> run_overrides(const Plan& p, const std::string& scheme, int64_t depth) {
  std::vector<std::string> o{fmt::format("train.max_steps={}", p.steps)};
  for (auto& a : scheme_row(scheme).overrides()) o.push_back(a);
  if (p.base.model.has_encoder()) o.push_back(fmt::format("model.encoder_layers={}", depth));
  if (p.base.model.has_decoder()) o.push_back(fmt::format("model.decoder_layers={}", depth));
  return o;
}

Plan make_plan(const std::string& config_path, const std::vector<std::string>& overrides,
               const std::vector<std::string>& schemes, const std::vector<int64_t>& depths, int64_t steps) {
  if (steps <= 0) throw InputError(fmt::format("--steps {}: must be a positive number of updates", steps));
  Plan p{config_path, overrides, schemes, depths, steps, resolve_config(config_path, overrides)};
  // A --set the sweep would silently replace, then every run's config, before the first run starts.
  grid::refuse_own_keys(overrides, grid::override_keys(run_overrides(p, schemes.empty() ? "post" : schemes[0], 1)),
                        "the sweep", "use --steps, --schemes or --depths");
  std::vector<grid::PlannedRun> runs;
  for (auto& s : schemes)
    for (auto d : depths) runs.push_back({run_name(s, d), run_overrides(p, s, d)});
  grid::validate_runs(p.base, runs);
  return p;
}

nlohmann::json plan_json(const Plan& p) {
  return {{"config_path", p.config_path},
          {"overrides", p.overrides},
          {"config", config_to_json(p.base)},
          {"steps", p.steps},
          {"schemes", p.schemes},
          {"depths", p.depths}};
}

std::string plan_mismatch(const nlohmann::json& stored, const Plan& p) {
  if (!stored.contains("steps") || !stored.contains("config") || !stored["config"].is_object())
    return "its sweep_plan.json lacks \"steps\" or \"config\"";
  if (stored["steps"] != p.steps)
    return fmt::format("it was run with --steps {}, not {}", stored["steps"].dump(), p.steps);
  return grid::config_mismatch(stored["config"], p.base, sweep_keys());
}

}  // namespace stx::sweep
