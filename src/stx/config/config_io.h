// stx/config/config_io.h — YAML config files, `--set section.key=value` overrides, the JSON form
// stored in safetensors metadata, and validation. Every error is an InputError naming the key,
// the value and what is allowed.
#pragma once
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stx/config/config.h"

namespace stx {

// Reads a YAML file with top-level sections model/train/data (config_file.h: one document, no
// section or key twice, at least one key). Unknown sections or keys, wrong types and
// out-of-range values are InputErrors. The result is not validated.
Config load_config_file(const std::string& path);

// The --config value that names the built-in defaults of config.h instead of a file.
inline constexpr const char* kBuiltinConfig = "builtin";

// Applies one "section.key=value" override (the --set syntax). Does not validate.
void apply_override(Config& cfg, const std::string& assignment);

// Loads `path` (the defaults when empty or kBuiltinConfig), applies overrides in order, validates.
Config resolve_config(const std::string& path, const std::vector<std::string>& overrides);

// Checks sizes and combinations; throws InputError on the first problem.
void validate(const Config& cfg);

// What is allowed but likely a mistake in a config that trains, as one line ("" when nothing):
// train.warmup_steps > train.max_steps (the rate never reaches train.lr).
std::string training_warning(const Config& cfg);

// The full config as nested JSON {"model":{…},"train":{…},"data":{…}} and back.
nlohmann::json config_to_json(const Config& cfg);
Config config_from_json(const nlohmann::json& j);

// The same content as YAML text (for RUN/config.yaml).
std::string config_to_yaml(const Config& cfg);

// A train.optimizer name ("adamw") as its enum; InputError listing the names.
OptimizerKind parse_optimizer(const std::string& name);

// All keys, "section.key", in declaration order (for messages and docs).
std::vector<std::string> config_keys();
// What a key allows, as its error messages say it: "true | false", "post | pre | …" for the
// named values, or a phrase for numbers ("a positive integer"). InputError for an unknown key.
std::string config_key_allowed(const std::string& key);

// The first key (declaration order) outside `ignored` whose value differs between two configs
// in config_to_json form; a key `stored` lacks (newer than it) passes.
struct ConfigDifference {
  std::string key;
  nlohmann::json stored, now;
};
std::optional<ConfigDifference> config_diff(const nlohmann::json& stored, const nlohmann::json& now,
                                            const std::set<std::string>& ignored = {});

}  // namespace stx
