// stx/sweep/sweep_plan.cpp — see sweep_plan.h.
#include "stx/sweep/sweep_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "stx/core/error.h"
#include "stx/config/config_io.h"

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

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// Keys every run sets itself: a difference in the base config there changes no run.
const std::set<std::string>& sweep_keys() {
  static const std::set<std::string> k{"train.max_steps", "model.scheme", "model.sigma_reparam", "model.encoder_layers",
                                       "model.decoder_layers"};
  return k;
}

}  // namespace

const std::vector<std::string>& scheme_names() {
  static const std::vector<std::string> n{"post", "post-init", "pre", "deepnorm", "sigma"};
  return n;
}

std::string scheme_title(const std::string& name) {
  if (name == "post") return "Post-LN";
  if (name == "post-init") return "Post-LN-init";
  if (name == "pre") return "Pre-LN";
  if (name == "deepnorm") return "DeepNorm";
  if (name == "sigma") return "Post-LN + σReparam";
  return name;
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
    const auto& names = scheme_names();
    if (std::find(names.begin(), names.end(), item) == names.end())
      throw InputError("--schemes '" + text + "': unknown scheme '" + item + "' (allowed: " + join(names) + ")");
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
  const bool sigma = scheme == "sigma";
  o.push_back("model.scheme=" + (sigma ? std::string("post") : scheme));
  o.push_back(std::string("model.sigma_reparam=") + (sigma ? "true" : "false"));
  if (p.base.model.has_encoder()) o.push_back(fmt::format("model.encoder_layers={}", depth));
  if (p.base.model.has_decoder()) o.push_back(fmt::format("model.decoder_layers={}", depth));
  return o;
}

Plan make_plan(const std::string& config_path, const std::vector<std::string>& overrides,
               const std::vector<std::string>& schemes, const std::vector<int64_t>& depths, int64_t steps) {
  if (steps <= 0) throw InputError(fmt::format("--steps {}: must be a positive number of updates", steps));
  Plan p{config_path, overrides, schemes, depths, steps, resolve_config(config_path, overrides)};
  for (auto& o : overrides) {  // a --set the sweep would silently replace
    const auto key = o.substr(0, o.find('='));
    for (auto& mine : run_overrides(p, schemes.empty() ? "post" : schemes[0], 1))
      if (mine.substr(0, mine.find('=')) == key)
        throw InputError("--set " + o + ": the sweep sets " + key + " itself for every run (use --steps, --schemes or --depths)");
  }
  for (auto& s : schemes)
    for (auto d : depths) {  // every run's config must validate before the first run starts
      Config c = p.base;
      for (auto& o : run_overrides(p, s, d)) apply_override(c, o);
      try {
        validate(c);
      } catch (const InputError& e) {
        throw InputError("run " + run_name(s, d) + ": " + e.what());
      }
    }
  return p;
}

nlohmann::json plan_json(const Plan& p) {
  return {{"config_path", p.config_path}, {"overrides", p.overrides}, {"config", config_to_json(p.base)},
          {"steps", p.steps},             {"schemes", p.schemes},     {"depths", p.depths}};
}

std::string plan_mismatch(const nlohmann::json& stored, const Plan& p) {
  if (!stored.contains("steps") || !stored.contains("config") || !stored["config"].is_object())
    return "its sweep_plan.json lacks \"steps\" or \"config\"";
  if (stored["steps"] != p.steps) return fmt::format("it was run with --steps {}, not {}", stored["steps"].dump(), p.steps);
  return config_mismatch(stored["config"], p.base, sweep_keys());
}

std::string config_mismatch(const nlohmann::json& stored, const Config& now_cfg, const std::set<std::string>& ignore) {
  const auto now = config_to_json(now_cfg);
  for (const auto& key : config_keys()) {
    if (ignore.count(key)) continue;
    const auto dot = key.find('.');
    const auto section = key.substr(0, dot), name = key.substr(dot + 1);
    if (!stored.contains(section) || !stored[section].contains(name)) continue;  // a key newer than the stored plan
    const auto& a = stored[section][name];
    const auto& b = now.at(section).at(name);
    if (a != b) return fmt::format("its config has {}={} but this one has {}={}", key, a.dump(), key, b.dump());
  }
  return "";
}

}  // namespace stx::sweep
