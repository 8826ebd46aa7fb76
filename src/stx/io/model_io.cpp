#include "stx/io/model_io.h"

#include <map>
#include <set>
#include <sstream>

#include "stx/config/config_io.h"
#include "stx/core/error.h"
#include "stx/core/shape_text.h"
#include "stx/io/safetensors.h"

namespace stx {

void save_model(const std::string& path, TransformerImpl& model, const Config& cfg) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (auto& [name, t] : model.state()) out.emplace_back(name, t.detach().to(torch::kCPU, torch::kFloat32));
  save_safetensors(path, out, {{kConfigKey, config_to_json(cfg).dump()}, {kFormatKey, kModelFormat}}, Checksums::On);
}

void load_state(TransformerImpl& model, const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                const std::string& what) {
  std::map<std::string, torch::Tensor> expected;
  for (auto& [name, t] : model.state()) expected[name] = t;
  std::set<std::string> seen;
  torch::NoGradGuard no_grad;
  for (auto& [name, t] : tensors) {
    auto it = expected.find(name);
    if (it == expected.end())
      throw InputError(what + ": unexpected tensor '" + name + "' (not part of this model's config)");
    if (!t.is_floating_point())
      throw InputError(what + ": tensor '" + name + "' has a non-floating dtype " +
                       std::string(c10::toString(t.scalar_type())));
    if (t.sizes() != it->second.sizes())
      throw InputError(what + ": tensor '" + name + "' has shape " + shape_str(t.sizes()) + ", the config needs " +
                       shape_str(it->second.sizes()));
    it->second.copy_(t);
    seen.insert(name);
  }
  for (auto& [name, _] : expected)
    if (!seen.count(name)) throw InputError(what + ": missing tensor '" + name + "'");
}

LoadedModel load_model(const std::string& path) {
  auto file = load_safetensors(path);
  auto it = file.metadata.find(kConfigKey);
  if (it == file.metadata.end())
    throw InputError(path + ": no '" + std::string(kConfigKey) + "' metadata (not written by stx init/train?)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(it->second);
  } catch (const std::exception&) {
    throw InputError(path + ": metadata '" + std::string(kConfigKey) + "' is not valid JSON");
  }
  LoadedModel out;
  try {
    out.config = config_from_json(j);
  } catch (const InputError& e) {
    throw InputError(path + ": " + e.what());
  }
  out.model = Transformer(out.config.model);
  load_state(*out.model, file.tensors, path);
  return out;
}

}  // namespace stx
