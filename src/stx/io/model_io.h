// stx/io/model_io.h — a model's weights and buffers as safetensors, with the resolved config
// as JSON under the metadata key "stx.config" (docs/model.md).
#pragma once
#include <string>

#include "stx/config/config.h"
#include "stx/model/transformer.h"

namespace stx {

inline constexpr const char* kConfigKey = "stx.config";
inline constexpr const char* kFormatKey = "stx.format";
inline constexpr const char* kModelFormat = "stx-model/1";

// Writes atomically (float32 on CPU, names from docs/model.md).
void save_model(const std::string& path, TransformerImpl& model, const Config& cfg);

struct LoadedModel {
  Config config;
  Transformer model{nullptr};
};
// Reads the config from the metadata, builds the model and copies every tensor in. A missing
// or unexpected tensor, a wrong shape or dtype, or a bad config is an InputError.
LoadedModel load_model(const std::string& path);

// Copies `tensors` into the model's parameters and buffers by name, checking names and shapes;
// `what` names the source in messages.
void load_state(TransformerImpl& model, const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                const std::string& what);

}  // namespace stx
