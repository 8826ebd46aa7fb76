// stx/config/config_file.cpp — see config_file.h. yaml-cpp keeps every entry of a mapping, a
// repeated key included (a lookup finds the first), so repeats are found by walking the mapping.
#include "stx/config/config_file.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>

#include "stx/core/error.h"
#include "stx/core/user_path.h"

namespace stx {

namespace {

const char* const kStartFrom =
    "start from a config in configs/, e.g. configs/demo.yaml (translation) or configs/atlas.yaml (language "
    "model), both on embedded corpora; --config builtin uses the built-in defaults";

// The line number of a node, or "?" when yaml-cpp has no position for it.
std::string line_of(const YAML::Node& n) {
  const auto m = n.Mark();
  return m.is_null() ? std::string("?") : std::to_string(m.line + 1);
}

std::string scalar_key(const YAML::Node& k, const std::string& path, const std::string& where) {
  if (!k.IsScalar())
    throw InputError("config file '" + path + "' line " + line_of(k) + ": " + where +
                     " must be a plain name (model, train, data; then key: value)");
  return k.Scalar();
}

std::string yaml_scalar_text(const YAML::Node& n, const std::string& key) {
  if (n.IsScalar()) return n.Scalar();
  if (n.IsSequence()) {
    std::string s;
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (!it->IsScalar()) throw InputError("config key '" + key + "': nested lists are not allowed");
      s += (s.empty() ? "" : ",") + it->Scalar();
    }
    return s;
  }
  if (n.IsNull()) throw InputError("config key '" + key + "': missing value");
  throw InputError("config key '" + key + "': expected a value, got a mapping");
}

}  // namespace

std::string shown_value(const std::string& text) {
  constexpr size_t kMax = 80, kHead = 60;
  size_t chars = 0;
  for (unsigned char c : text) chars += (c & 0xC0) != 0x80;  // UTF-8: count the lead bytes
  if (chars <= kMax) return text;
  size_t cut = kHead;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  return text.substr(0, cut) + "… (" + std::to_string(chars) + " characters)";
}

std::vector<ConfigAssignment> read_config_assignments(const std::string& path) {
  require_regular_file(path, "config file", "--config takes a YAML file such as configs/demo.yaml, or builtin");
  std::ifstream in(path);
  if (!in) throw InputError("cannot open config file '" + path + "': " + std::strerror(errno));
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(in);
  } catch (const YAML::Exception& e) {
    throw InputError("config file '" + path + "' is not valid YAML: " + shown_value(e.msg) + " (line " +
                     std::to_string(e.mark.line + 1) + ")");
  }
  if (docs.size() > 1)
    throw InputError("config file '" + path + "' holds " + std::to_string(docs.size()) +
                     " YAML documents (a '---' line starts each after the first); a config is one document: remove "
                     "the '---' and what follows it, or merge the documents");
  if (docs.empty() || docs[0].IsNull())
    throw InputError("config file '" + path + "' is empty (no model:, train: or data: section); " + kStartFrom);
  const YAML::Node& root = docs[0];
  if (!root.IsMap()) throw InputError("config file '" + path + "': expected sections model:, train:, data:");
  std::vector<ConfigAssignment> out;
  std::map<std::string, std::string> section_line;
  for (auto sec = root.begin(); sec != root.end(); ++sec) {
    const std::string section = scalar_key(sec->first, path, "a section");
    if (section != "model" && section != "train" && section != "data")
      throw InputError("config file '" + path + "': unknown section '" + shown_value(section) +
                       "' (allowed: model, train, data)");
    if (auto [it, fresh] = section_line.emplace(section, line_of(sec->first)); !fresh)
      throw InputError("config file '" + path + "': section '" + section + "' appears twice (lines " + it->second +
                       " and " + line_of(sec->first) + "); write its keys under one '" + section + ":'");
    if (sec->second.IsNull()) continue;
    if (!sec->second.IsMap())
      throw InputError("config file '" + path + "': section '" + section + "' must be a mapping of key: value");
    std::map<std::string, std::string> key_line;
    for (auto kv = sec->second.begin(); kv != sec->second.end(); ++kv) {
      const std::string name = section + "." + shown_value(scalar_key(kv->first, path, "a key"));
      if (auto [it, fresh] = key_line.emplace(name, line_of(kv->first)); !fresh)
        throw InputError("config file '" + path + "': key '" + name + "' appears twice (lines " + it->second + " and " +
                         line_of(kv->first) + "); keep one");
      out.push_back({name, yaml_scalar_text(kv->second, name)});
    }
  }
  if (out.empty())
    throw InputError("config file '" + path + "' sets no key (no section, or only empty ones); " +
                     std::string(kStartFrom));
  return out;
}

}  // namespace stx
