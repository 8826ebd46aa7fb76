// stx/train/memory_estimate.cpp — see memory_estimate.h.
#include "stx/train/memory_estimate.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "stx/core/error.h"
#include "stx/data/tokens.h"

namespace stx {

namespace {

// Coefficients fitted (least squares on the relative error) to the peak resident memory of 12
// short runs of the atlas's LM, d 64–256, d_ff 256–2,048, h·n 512–4,096, 1,024–16,384 tokens a
// step, 8 probe sequences (docs/training.md#memory): values per token and layer, float32, the
// allocator's share included.
constexpr double kPerD = 11;           // of width d saved for backward (fused path)
constexpr double kPerFF = 2;           // of width d_ff
constexpr double kPerAttention = 2;    // per head and key (scores and probabilities)
constexpr double kProbeAttention = 2;  // the probe's taps per head and key
constexpr double kProbeD = 12;         // the probe's taps of width d (not fitted: a small term)
constexpr double kPerLogit = 3;        // logits, softmax and gradient per token and vocabulary entry
constexpr double kCheckpointed = 1;    // of width d kept per layer when recomputing

double layer_params(double d, double ff, bool bias, bool cross) {
  const double attention = 4 * d * d + (bias ? 4 * d : 0), ffn = 2 * d * ff + (bias ? ff + d : 0);
  return attention * (cross ? 2 : 1) + ffn + 2 * d * (cross ? 3 : 2);
}

// The first value of `key` in a "key value" file (/proc/meminfo, memory.stat), in bytes.
double meminfo_kb(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  std::string k;
  double v = 0;
  std::string unit;
  while (in >> k >> v) {
    std::getline(in, unit);
    if (k == key + ":") return v * 1024;
  }
  return INFINITY;
}

double read_number(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  if (!(in >> s) || s == "max") return INFINITY;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  return end && *end == '\0' ? v : INFINITY;
}

// This process's cgroup limit less its usage (v2, else v1); INFINITY when unlimited.
double cgroup_room() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("0::", 0) == 0) {
      const std::string dir = "/sys/fs/cgroup" + line.substr(3);
      const double max = read_number(dir + "/memory.max");
      if (std::isfinite(max)) return max - read_number(dir + "/memory.current");
    }
  const double v1 = read_number("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  if (std::isfinite(v1) && v1 < 1e18) return v1 - read_number("/sys/fs/cgroup/memory/memory.usage_in_bytes");
  return INFINITY;
}

std::string gb(double bytes) {
  if (bytes >= 1e12) return fmt::format("{:.3g} TB", bytes / 1e12);
  return bytes >= 1e9 ? fmt::format("{:.1f} GB", bytes / 1e9) : fmt::format("{:.0f} MB", bytes / 1e6);
}

}  // namespace

double MemoryEstimate::total(bool checkpointed) const {
  return state + (checkpointed ? activations_checkpointed : activations) + logits + probe + fixed;
}

double MemoryEstimate::total() const { return total(checkpointing); }

double resident_bytes() {
  std::ifstream in("/proc/self/statm");
  double size = 0, resident = 0;
  in >> size >> resident;
  return resident * static_cast<double>(::sysconf(_SC_PAGESIZE));
}

MemoryEstimate estimate_memory(const Config& cfg, double resident) {
  const auto& m = cfg.model;
  const auto& t = cfg.train;
  const double d = static_cast<double>(m.d_model), ff = static_cast<double>(m.d_ff), h = static_cast<double>(m.n_heads);
  const double V = static_cast<double>(m.vocab_size), n = static_cast<double>(std::min(m.max_len, t.max_tokens));
  const double T = static_cast<double>(t.max_tokens);
  const double Le = m.has_encoder() ? static_cast<double>(m.encoder_layers) : 0;
  const double Ld = m.has_decoder() ? static_cast<double>(m.decoder_layers) : 0;
  const bool cross = m.has_encoder() && m.has_decoder();
  const double stacks = (Le > 0) + (Ld > 0);
  const double embeddings = V * d * (m.tie_embeddings ? 1 : stacks + 1) +
                            (m.positions == Positions::Learned ? stacks * static_cast<double>(m.max_len) * d : 0);

  const double w = t.dtype == DType::Float64 ? 8 : 4;  // bytes per value
  MemoryEstimate e;
  e.checkpointing = t.checkpoint_activations;
  e.resident = resident;
  e.params = embeddings + Le * layer_params(d, ff, m.bias, false) + Ld * layer_params(d, ff, m.bias, cross);
  e.state = e.params * w * (t.optimizer == OptimizerKind::SGD ? (t.momentum > 0 ? 3 : 2) : 4);
  const double per_layer = kPerD * d + kPerFF * ff + kPerAttention * h * n;  // values per token
  const double layers = Le + Ld * (cross ? 1.5 : 1.0);                       // cross-attention: half a layer more
  e.activations = w * T * layers * per_layer;
  e.activations_checkpointed = w * T * (layers * kCheckpointed * d + per_layer);
  e.logits = w * T * V * kPerLogit;
  const double probe_tokens = static_cast<double>(t.probe_sentences) * n;
  e.probe = w * probe_tokens * (layers * (kProbeD * d + kProbeAttention * h * n) + V);
  e.fixed = resident + w * stacks * static_cast<double>(m.max_len) * d;
  e.layers = Le + Ld;
  if (e.layers > 0) {
    const double layer_state = e.state * (e.params - embeddings) / e.params;
    const double probe_layers = w * probe_tokens * layers * (kProbeD * d + kProbeAttention * h * n);
    e.per_layer =
        (layer_state + (e.checkpointing ? w * T * layers * kCheckpointed * d : e.activations) + probe_layers) /
        e.layers;
  }
  return e;
}

MemoryEstimate estimate_training_memory(const Config& cfg) {
  Config c = cfg;
  c.model.vocab_size =
      cfg.data.tokenizer == TokenizerKind::Bytes ? Tokenizer::bytes().vocab_size() : cfg.data.spm_vocab_size;
  return estimate_memory(c, resident_bytes());
}

double available_memory(std::string* source) {
  double best = meminfo_kb("MemAvailable");
  std::string why = "MemAvailable";
  if (const double c = cgroup_room(); c < best) best = c, why = "the cgroup's memory limit";
  if (const char* env = std::getenv("STX_MEMORY_MB"); env && *env) {
    char* end = nullptr;
    const double mb = std::strtod(env, &end);
    if (!end || *end != '\0' || !(mb > 0))
      throw InputError(fmt::format("STX_MEMORY_MB={:.40}: expected a positive number of megabytes", env));
    if (mb * 1e6 - resident_bytes() < best) best = mb * 1e6 - resident_bytes(), why = "STX_MEMORY_MB";
  }
  if (source) *source = why;
  return best;
}

void check_memory(const Config& cfg, const MemoryEstimate& e) {
  std::string source;
  const double avail = available_memory(&source) + e.resident;  // what this process holds is not "available"
  if (!std::isfinite(avail) || e.total() <= avail) return;
  const auto& t = cfg.train;
  std::vector<std::string> fits;
  // Tokens per step: activations and logits scale with them; whole sequences of max_len.
  const double act = e.checkpointing ? e.activations_checkpointed : e.activations;
  const double per_token = (act + e.logits) / static_cast<double>(t.max_tokens);
  const double room = avail - (e.state + e.probe + e.fixed);
  const int64_t seq = std::min(cfg.model.max_len, t.max_tokens);
  if (room > 0) {
    const auto tokens = static_cast<int64_t>(room / per_token) / seq * seq;
    if (tokens >= seq) fits.push_back(fmt::format("--set train.max_tokens={}", tokens));
  }
  if (!e.checkpointing && e.total(true) <= avail)
    fits.push_back(fmt::format("--set train.checkpoint_activations=true ({})", gb(e.total(true))));
  // Depth: the layers' state, activations and probe taps, at this width.
  if (e.per_layer > 0) {
    const auto layers = static_cast<int64_t>((avail - (e.total() - e.per_layer * e.layers)) / e.per_layer);
    if (layers >= 1 && static_cast<double>(layers) < e.layers)
      fits.push_back(fmt::format("≤ {} layers in all", layers));
  }
  std::string how = fits.empty() ? "no setting of tokens per step, activation checkpointing or depth fits: make the "
                                   "model narrower (model.d_model, model.d_ff, model.vocab_size)"
                                 : "it would fit with ";
  for (size_t i = 0; i < fits.size(); ++i) how += (i ? ", or " : "") + fits[i];
  throw InputError(fmt::format(
      "training this model needs about {} ({:.3g} parameters: {} with gradients and optimizer state; activations {} "
      "for {} tokens a step; logits {}; diagnostics probe {}; process and data {}) but {} are available ({}); {}",
      gb(e.total()), e.params, gb(e.state), gb(act), t.max_tokens, gb(e.logits), gb(e.probe), gb(e.fixed), gb(avail),
      source, how));
}

}  // namespace stx
