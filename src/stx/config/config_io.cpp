// stx/config/config_io.cpp — one table of keys drives YAML, --set, JSON and error messages.
#include "stx/config/config_io.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "stx/config/config_file.h"
#include "stx/core/error.h"

namespace stx {
namespace {

// One config key: how to read it from text, how to write it as JSON, what is allowed.
struct Key {
  std::string name;     // "model.d_model"
  std::string allowed;  // "a positive integer", "post | pre | deepnorm | post-init"
  std::function<void(const std::string&)> set;
  std::function<nlohmann::json()> get;
};

[[noreturn]] void bad_value(const std::string& key, const std::string& value, const std::string& allowed) {
  throw InputError("config key '" + shown_value(key) + "': invalid value '" + shown_value(value) +
                   "' (allowed: " + allowed + ")");
}

int64_t parse_int(const std::string& key, const std::string& s, const std::string& allowed) {
  if (s.empty()) bad_value(key, s, allowed);
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') bad_value(key, s, allowed);
  return v;
}

double parse_double(const std::string& key, const std::string& s, const std::string& allowed) {
  if (s.empty()) bad_value(key, s, allowed);
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(v)) bad_value(key, s, allowed);
  return v;
}

bool parse_bool(const std::string& key, const std::string& s) {
  if (s == "true" || s == "True" || s == "yes" || s == "on" || s == "1") return true;
  if (s == "false" || s == "False" || s == "no" || s == "off" || s == "0") return false;
  bad_value(key, s, "true | false");
}

template <class E>
struct EnumNames {
  std::vector<std::pair<std::string, E>> names;
  std::string allowed() const {
    std::string a;
    for (auto& [n, _] : names) a += (a.empty() ? "" : " | ") + n;
    return a;
  }
  E parse(const std::string& key, const std::string& s) const {
    for (auto& [n, e] : names)
      if (n == s) return e;
    bad_value(key, s, allowed());
  }
  std::string name(E e) const {
    for (auto& [n, v] : names)
      if (v == e) return n;
    return "?";
  }
};

const EnumNames<Arch> kArch{
    {{"encoder", Arch::Encoder}, {"decoder", Arch::Decoder}, {"encoder-decoder", Arch::EncoderDecoder}}};
const EnumNames<Scheme> kScheme{{{"post", Scheme::Post},
                                 {"pre", Scheme::Pre},
                                 {"deepnorm", Scheme::DeepNorm},
                                 {"post-init", Scheme::PostInit},
                                 {"rezero", Scheme::ReZero},
                                 {"layerscale", Scheme::LayerScale},
                                 {"peri-ln", Scheme::PeriLN},
                                 {"mix-ln", Scheme::MixLN},
                                 {"ln-scaling", Scheme::LNScaling},
                                 {"depth-scaled", Scheme::DepthScaled},
                                 {"t-fixup", Scheme::TFixup},
                                 {"ds-init", Scheme::DSInit},
                                 {"admin", Scheme::Admin},
                                 {"normformer", Scheme::NormFormer},
                                 {"sub-ln", Scheme::SubLN}}};
const EnumNames<NormKind> kNorm{{{"layernorm", NormKind::LayerNorm},
                                 {"rmsnorm", NormKind::RMSNorm},
                                 {"dyt", NormKind::DyT},
                                 {"none", NormKind::None}}};
const EnumNames<Activation> kAct{{{"relu", Activation::ReLU}, {"gelu", Activation::GELU}}};
const EnumNames<QKInit> kQK{{{"xavier", QKInit::Xavier}, {"zero", QKInit::Zero}}};
const EnumNames<Positions> kPos{
    {{"sinusoidal", Positions::Sinusoidal}, {"learned", Positions::Learned}, {"none", Positions::None}}};
const EnumNames<GammaInit> kGamma{{{"sigma", GammaInit::Sigma}, {"one", GammaInit::One}}};
const EnumNames<Task> kTask{{{"translation", Task::Translation}, {"lm", Task::LM}}};
const EnumNames<TokenizerKind> kTokenizer{{{"spm", TokenizerKind::SentencePiece}, {"bytes", TokenizerKind::Bytes}}};
const EnumNames<OptimizerKind> kOptimizer{
    {{"adam", OptimizerKind::Adam}, {"adamw", OptimizerKind::AdamW}, {"sgd", OptimizerKind::SGD}}};
const EnumNames<ScheduleKind> kSchedule{{{"inverse-sqrt", ScheduleKind::InverseSqrt},
                                         {"cosine", ScheduleKind::Cosine},
                                         {"constant", ScheduleKind::Constant}}};
const EnumNames<OnDivergence> kOnDivergence{
    {{"stop", OnDivergence::Stop}, {"skip", OnDivergence::Skip}, {"rollback", OnDivergence::Rollback}}};
const EnumNames<DeviceKind> kDevice{{{"cpu", DeviceKind::CPU}, {"cuda", DeviceKind::CUDA}}};
const EnumNames<WeightDecayMode> kWeightDecayMode{
    {{"coupled", WeightDecayMode::Coupled}, {"independent", WeightDecayMode::Independent}}};
const EnumNames<DType> kDType{{{"float32", DType::Float32}, {"float64", DType::Float64}}};

Key int_key(const std::string& name, int64_t& v) {
  const std::string allowed = "an integer";
  return {name, allowed, [&v, name, allowed](const std::string& s) { v = parse_int(name, s, allowed); },
          [&v] { return nlohmann::json(v); }};
}
Key real_key(const std::string& name, double& v) {
  const std::string allowed = "a finite number";
  return {name, allowed, [&v, name, allowed](const std::string& s) { v = parse_double(name, s, allowed); },
          [&v] { return nlohmann::json(v); }};
}
Key bool_key(const std::string& name, bool& v) {
  return {name, "true | false", [&v, name](const std::string& s) { v = parse_bool(name, s); },
          [&v] { return nlohmann::json(v); }};
}
template <class E>
Key enum_key(const std::string& name, E& v, const EnumNames<E>& names) {
  return {name, names.allowed(), [&v, name, &names](const std::string& s) { v = names.parse(name, s); },
          [&v, &names] { return nlohmann::json(names.name(v)); }};
}
Key string_key(const std::string& name, std::string& v) {
  return {name, "a non-empty string",
          [&v, name](const std::string& s) {
            if (s.empty()) bad_value(name, s, "a non-empty string");
            v = s;
          },
          [&v] { return nlohmann::json(v); }};
}
Key pair_key(const std::string& name, std::array<double, 2>& v) {
  const std::string allowed = "two numbers, e.g. [0.9, 0.98]";
  return {name, allowed,
          [&v, name, allowed](const std::string& s) {
            std::string t = s;
            if (!t.empty() && t.front() == '[' && t.back() == ']') t = t.substr(1, t.size() - 2);
            auto comma = t.find(',');
            if (comma == std::string::npos) bad_value(name, s, allowed);
            auto trim = [](std::string x) {
              x.erase(0, x.find_first_not_of(" \t"));
              x.erase(x.find_last_not_of(" \t") + 1);
              return x;
            };
            v[0] = parse_double(name, trim(t.substr(0, comma)), allowed);
            v[1] = parse_double(name, trim(t.substr(comma + 1)), allowed);
          },
          [&v] {
            return nlohmann::json::array({v[0], v[1]});
          }};
}

std::vector<Key> keys_of(Config& c) {
  auto& m = c.model;
  auto& t = c.train;
  auto& d = c.data;
  return {
      enum_key("model.arch", m.arch, kArch),
      int_key("model.vocab_size", m.vocab_size),
      int_key("model.d_model", m.d_model),
      int_key("model.n_heads", m.n_heads),
      int_key("model.d_ff", m.d_ff),
      int_key("model.encoder_layers", m.encoder_layers),
      int_key("model.decoder_layers", m.decoder_layers),
      enum_key("model.scheme", m.scheme, kScheme),
      bool_key("model.sigma_reparam", m.sigma_reparam),
      enum_key("model.gamma_init", m.gamma_init, kGamma),
      enum_key("model.norm", m.norm, kNorm),
      real_key("model.norm_eps", m.norm_eps),
      real_key("model.dyt_alpha", m.dyt_alpha),
      real_key("model.layerscale_init", m.layerscale_init),
      real_key("model.mix_ln_ratio", m.mix_ln_ratio),
      real_key("model.residual_scale", m.residual_scale),
      real_key("model.ds_init_exponent", m.ds_init_exponent),
      bool_key("model.qk_norm", m.qk_norm),
      real_key("model.attn_softcap", m.attn_softcap),
      real_key("model.logit_softcap", m.logit_softcap),
      enum_key("model.activation", m.activation, kAct),
      enum_key("model.qk_init", m.qk_init, kQK),
      bool_key("model.bias", m.bias),
      bool_key("model.tie_embeddings", m.tie_embeddings),
      enum_key("model.positions", m.positions, kPos),
      bool_key("model.embed_scale", m.embed_scale),
      real_key("model.dropout", m.dropout),
      real_key("model.attention_dropout", m.attention_dropout),
      int_key("model.max_len", m.max_len),
      int_key("model.pad_id", m.pad_id),
      enum_key("train.optimizer", t.optimizer, kOptimizer),
      real_key("train.lr", t.lr),
      pair_key("train.betas", t.betas),
      real_key("train.eps", t.eps),
      real_key("train.weight_decay", t.weight_decay),
      enum_key("train.weight_decay_mode", t.weight_decay_mode, kWeightDecayMode),
      real_key("train.momentum", t.momentum),
      enum_key("train.schedule", t.schedule, kSchedule),
      int_key("train.warmup_steps", t.warmup_steps),
      int_key("train.max_steps", t.max_steps),
      int_key("train.max_tokens", t.max_tokens),
      real_key("train.clip_norm", t.clip_norm),
      real_key("train.z_loss", t.z_loss),
      real_key("train.label_smoothing", t.label_smoothing),
      int_key("train.log_every", t.log_every),
      int_key("train.eval_every", t.eval_every),
      int_key("train.checkpoint_every", t.checkpoint_every),
      int_key("train.seed", t.seed),
      bool_key("train.checkpoint_activations", t.checkpoint_activations),
      bool_key("train.doctor", t.doctor),
      enum_key("train.on_divergence", t.on_divergence, kOnDivergence),
      enum_key("train.device", t.device, kDevice),
      enum_key("train.dtype", t.dtype, kDType),
      int_key("train.update_freq", t.update_freq),
      int_key("train.spike_window", t.spike_window),
      real_key("train.spike_zscore", t.spike_zscore),
      int_key("train.max_skips", t.max_skips),
      int_key("train.max_rollbacks", t.max_rollbacks),
      real_key("train.rollback_lr_factor", t.rollback_lr_factor),
      int_key("train.probe_sentences", t.probe_sentences),
      int_key("train.valid_bleu_sentences", t.valid_bleu_sentences),
      int_key("train.valid_sentences", t.valid_sentences),
      real_key("train.bucket_mb", t.bucket_mb),
      int_key("train.dist_timeout_s", t.dist_timeout_s),
      enum_key("data.task", d.task, kTask),
      string_key("data.corpus", d.corpus),
      string_key("data.src_lang", d.src_lang),
      string_key("data.tgt_lang", d.tgt_lang),
      enum_key("data.tokenizer", d.tokenizer, kTokenizer),
      int_key("data.spm_vocab_size", d.spm_vocab_size),
      bool_key("data.joint_vocab", d.joint_vocab),
  };
}

const std::vector<std::string> kSections{"model", "train", "data"};

std::string keys_in_section(const std::vector<Key>& keys, const std::string& section) {
  std::string out;
  for (auto& k : keys)
    if (k.name.rfind(section + ".", 0) == 0) out += (out.empty() ? "" : ", ") + k.name.substr(section.size() + 1);
  return out;
}

void set_key(Config& cfg, const std::string& name, const std::string& value) {
  auto keys = keys_of(cfg);
  for (auto& k : keys)
    if (k.name == name) {
      k.set(value);
      return;
    }
  auto dot = name.find('.');
  std::string section = dot == std::string::npos ? name : name.substr(0, dot);
  bool known_section = false;
  for (auto& s : kSections) known_section |= s == section;
  if (!known_section || dot == std::string::npos)
    throw InputError("unknown config key '" + shown_value(name) +
                     "' (keys are section.key with section one of: model, train, data)");
  throw InputError("unknown config key '" + shown_value(name) + "' (allowed in " + section + ": " +
                   keys_in_section(keys, section) + ")");
}

}  // namespace

std::string to_string(Arch v) { return kArch.name(v); }
std::string to_string(Scheme v) { return kScheme.name(v); }

std::string to_string(NormKind v) { return kNorm.name(v); }
std::string to_string(Activation v) { return kAct.name(v); }
std::string to_string(QKInit v) { return kQK.name(v); }
std::string to_string(Positions v) { return kPos.name(v); }
std::string to_string(GammaInit v) { return kGamma.name(v); }
std::string to_string(Task v) { return kTask.name(v); }
std::string to_string(TokenizerKind v) { return kTokenizer.name(v); }
std::string to_string(OptimizerKind v) { return kOptimizer.name(v); }
std::string to_string(ScheduleKind v) { return kSchedule.name(v); }
std::string to_string(OnDivergence v) { return kOnDivergence.name(v); }
std::string to_string(DeviceKind v) { return kDevice.name(v); }
std::string to_string(DType v) { return kDType.name(v); }

OptimizerKind parse_optimizer(const std::string& name) { return kOptimizer.parse("train.optimizer", name); }

std::vector<std::string> config_keys() {
  Config c;
  std::vector<std::string> out;
  for (auto& k : keys_of(c)) out.push_back(k.name);
  return out;
}

std::string config_key_allowed(const std::string& key) {
  Config c;
  for (auto& k : keys_of(c))
    if (k.name == key) return k.allowed;
  throw InputError("unknown config key '" + shown_value(key) + "'");
}

Config load_config_file(const std::string& path) {
  Config cfg;
  for (auto& a : read_config_assignments(path)) set_key(cfg, a.key, a.value);
  return cfg;
}

void apply_override(Config& cfg, const std::string& assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError("--set '" + shown_value(assignment) + "': expected section.key=value, e.g. model.scheme=deepnorm");
  set_key(cfg, assignment.substr(0, eq), assignment.substr(eq + 1));
}

Config resolve_config(const std::string& path, const std::vector<std::string>& overrides) {
  Config cfg = path.empty() || path == kBuiltinConfig ? Config{} : load_config_file(path);
  for (auto& o : overrides) apply_override(cfg, o);
  validate(cfg);
  return cfg;
}

nlohmann::json config_to_json(const Config& cfg) {
  Config copy = cfg;
  nlohmann::json j = nlohmann::json::object();
  for (auto& k : keys_of(copy)) {
    auto dot = k.name.find('.');
    j[k.name.substr(0, dot)][k.name.substr(dot + 1)] = k.get();
  }
  return j;
}

Config config_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw InputError("stored config is not a JSON object");
  Config cfg;
  for (auto& [section, body] : j.items()) {
    if (!body.is_object()) throw InputError("stored config section '" + section + "' is not an object");
    for (auto& [key, value] : body.items()) {
      std::string text;
      if (value.is_string()) text = value.get<std::string>();
      else if (value.is_boolean()) text = value.get<bool>() ? "true" : "false";
      else if (value.is_number_integer()) text = std::to_string(value.get<int64_t>());
      else if (value.is_number()) {
        std::ostringstream os;
        os.precision(17);
        os << value.get<double>();
        text = os.str();
      } else if (value.is_array() && value.size() == 2 && value[0].is_number() && value[1].is_number()) {
        std::ostringstream os;
        os.precision(17);
        os << value[0].get<double>() << "," << value[1].get<double>();
        text = os.str();
      } else throw InputError("stored config key '" + section + "." + key + "' has an unsupported JSON type");
      set_key(cfg, section + "." + key, text);
    }
  }
  validate(cfg);
  return cfg;
}

std::string config_to_yaml(const Config& cfg) {
  auto j = config_to_json(cfg);
  std::ostringstream os;
  for (auto& section : kSections) {
    os << section << ":\n";
    for (auto& [key, value] : j[section].items()) os << "  " << key << ": " << value.dump() << "\n";
  }
  return os.str();
}

std::optional<ConfigDifference> config_diff(const nlohmann::json& stored, const nlohmann::json& now,
                                            const std::set<std::string>& ignored) {
  for (const auto& key : config_keys()) {
    if (ignored.count(key)) continue;
    const auto dot = key.find('.');
    const auto section = key.substr(0, dot), name = key.substr(dot + 1);
    if (!stored.contains(section) || !stored[section].contains(name)) continue;
    const auto& a = stored[section][name];
    const auto& b = now.at(section).at(name);
    if (a != b) return ConfigDifference{key, a, b};
  }
  return std::nullopt;
}

}  // namespace stx
