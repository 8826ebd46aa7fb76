// stx/train/checkpoint.cpp — training checkpoints (format in checkpoint.h): model weights as
// float32, the optimizer's named state, torch's default CPU generator state, and the config and
// trainer state as JSON metadata; plus the resume compatibility check on configs.
#include "stx/train/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>

#include <mutex>
#include <set>

#include "stx/config/config_io.h"
#include "stx/core/error.h"
#include "stx/core/run_dir.h"
#include "stx/io/model_io.h"
#include "stx/io/safetensors.h"
#include "stx/train/train_state.h"

namespace stx {
namespace {

constexpr const char* kTrainKey = "stx.train";
constexpr const char* kRngName = "rng.torch";

nlohmann::json parse_json(const std::string& path, const std::string& key, const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const std::exception&) {
    throw InputError(path + ": metadata '" + key + "' is not valid JSON");
  }
}

// A value as it would be written in a config: strings unquoted, numbers and lists as JSON.
std::string value_text(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace

void save_checkpoint(const std::string& path, TransformerImpl& model, const Optimizer& opt, const Config& cfg,
                     const nlohmann::json& train_state, const std::vector<torch::Tensor>& rank_rngs) {
  NamedTensors out;
  for (auto& [name, t] : model.state())  // float64 runs (train.dtype) keep their precision across a resume
    out.emplace_back("model." + name, t.detach().to(torch::kCPU, t.scalar_type() == torch::kFloat64 ? torch::kFloat64
                                                                                                    : torch::kFloat32));
  for (auto& nt : opt.state()) out.push_back(nt);
  {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    out.emplace_back(kRngName, gen.get_state());
  }
  for (size_t r = 0; r < rank_rngs.size(); ++r)
    out.emplace_back("rng.rank" + std::to_string(r + 1), rank_rngs[r].to(torch::kCPU));
  save_safetensors(
      path, out,
      {{kFormatKey, kCheckpointFormat}, {kConfigKey, config_to_json(cfg).dump()}, {kTrainKey, train_state.dump()}},
      Checksums::On);
}

Checkpoint read_checkpoint(const std::string& path) {
  SafetensorsFile file = load_safetensors(path);
  auto meta = [&](const char* key) -> const std::string& {
    auto it = file.metadata.find(key);
    if (it == file.metadata.end())
      throw InputError(path + ": no '" + std::string(key) + "' metadata (not an stx training checkpoint)");
    return it->second;
  };
  const std::string& format = meta(kFormatKey);
  if (format != kCheckpointFormat)
    throw InputError(path + ": '" + std::string(kFormatKey) + "' is '" + format + "', expected '" + kCheckpointFormat +
                     "' (a training checkpoint written by stx train)");
  Checkpoint ck;
  try {
    ck.config = config_from_json(parse_json(path, kConfigKey, meta(kConfigKey)));
  } catch (const InputError& e) {
    const std::string msg = e.what();
    throw InputError(msg.rfind(path + ":", 0) == 0 ? msg : path + ": " + msg);
  }
  ck.train_state = parse_json(path, kTrainKey, meta(kTrainKey));
  if (!ck.train_state.is_object())
    throw InputError(path + ": metadata '" + std::string(kTrainKey) + "' is not a JSON object");
  for (auto& [name, t] : file.tensors) {
    if (name.rfind("model.", 0) == 0) ck.model.emplace_back(name.substr(6), t);
    else if (name.rfind("optim.", 0) == 0) ck.optimizer.emplace_back(name, t);
    else if (name == kRngName) ck.rng = t;
    else if (name.rfind("rng.rank", 0) == 0 && name.size() > 8 && name.size() < 14 &&
             name.find_first_not_of("0123456789", 8) == std::string::npos && name != "rng.rank0") {
      const size_t r = std::stoul(name.substr(8));
      if (ck.rank_rngs.size() < r) ck.rank_rngs.resize(r);
      ck.rank_rngs[r - 1] = t;
    } else
      throw InputError(path + ": unexpected tensor '" + name +
                       "' (a checkpoint holds model.*, optim.*, rng.torch and rng.rank<r>)");
  }
  for (size_t r = 0; r < ck.rank_rngs.size(); ++r)
    if (!ck.rank_rngs[r].defined() || ck.rank_rngs[r].scalar_type() != torch::kUInt8 || ck.rank_rngs[r].dim() != 1)
      throw InputError(path + ": tensor 'rng.rank" + std::to_string(r + 1) + "' is missing or not a 1-D uint8 tensor");
  if (!ck.rng.defined()) throw InputError(path + ": missing tensor 'rng.torch' (the random generator state)");
  if (ck.rng.scalar_type() != torch::kUInt8 || ck.rng.dim() != 1)
    throw InputError(path + ": tensor 'rng.torch' must be a 1-D uint8 tensor");
  return ck;
}

void restore_checkpoint(const Checkpoint& ck, TransformerImpl& model, Optimizer& opt, const std::string& what,
                        int rank) {
  if (rank > 0 && static_cast<size_t>(rank) > ck.rank_rngs.size())
    throw InputError(what + ": no tensor 'rng.rank" + std::to_string(rank) + "' (the checkpoint holds " +
                     std::to_string(ck.rank_rngs.size() + 1) + " ranks' generator states)");
  const torch::Tensor& rng = rank == 0 ? ck.rng : ck.rank_rngs[static_cast<size_t>(rank) - 1];
  const std::string rng_name = rank == 0 ? kRngName : "rng.rank" + std::to_string(rank);
  // Validate the generator state on a copy first, so a bad one changes nothing.
  auto gen = at::detail::getDefaultCPUGenerator();
  try {
    auto probe = gen.clone();
    probe.set_state(rng);
  } catch (const c10::Error&) {
    throw InputError(what + ": tensor '" + rng_name + "' is not a CPU generator state of this LibTorch (" +
                     std::to_string(rng.numel()) + " bytes)");
  }
  opt.load_state(ck.optimizer, what);  // checks everything before copying
  load_state(model, ck.model, what);
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(rng);
}

int64_t checkpoint_step(const Checkpoint& ck) {
  const auto it = ck.train_state.find("step");
  return it != ck.train_state.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

Checkpoint read_last_checkpoint(const RunDir& dir, const std::string& why) {
  try {
    return read_checkpoint(dir.last());
  } catch (const InputError& e) {
    std::string note;
    if (dir.has_prev()) {
      try {
        const auto prev = read_checkpoint(dir.prev());
        note = "; " + dir.prev() + " (step " + std::to_string(checkpoint_step(prev)) +
               ") is intact: continue from it with --resume-prev";
      } catch (const InputError&) {
        note = "; " + dir.prev() + " is not readable either";
      }
    }
    throw InputError(why + e.what() + note);
  }
}

void adopt_resumed_config(const Checkpoint& ck, Config& cfg, int world_size, const RunDir& dir) {
  const int saved = TrainState::from_json(ck.train_state, dir.last()).world_size;
  if (saved != world_size)
    throw InputError("cannot resume " + dir.dir() + ": it was trained by " + std::to_string(saved) +
                     " process(es) and this job has " + std::to_string(world_size) +
                     " (the batches of an update and their order depend on it); resume with --nproc " +
                     std::to_string(saved));
  cfg.model.vocab_size = ck.config.model.vocab_size;
  cfg.model.pad_id = ck.config.model.pad_id;
  const auto why = resume_incompatibility(ck.config, cfg);
  if (!why.empty()) throw InputError("cannot resume " + dir.dir() + ": " + why);
}

std::string resume_incompatibility(const Config& saved, const Config& now) {
  // Keys that do not change the trajectory of accepted updates (stopping, logging, the guard's
  // policy and what validation reports).
  static const std::set<std::string> may_differ{
      "train.max_steps",     "train.log_every",          "train.eval_every",           "train.checkpoint_every",
      "train.on_divergence", "train.spike_window",       "train.spike_zscore",         "train.max_skips",
      "train.max_rollbacks", "train.rollback_lr_factor", "train.valid_bleu_sentences", "train.bucket_mb",
      "train.dist_timeout_s"};
  const auto d = config_diff(config_to_json(saved), config_to_json(now), may_differ);
  if (d) return d->key + " is " + value_text(d->stored) + " in the checkpoint but " + value_text(d->now) + " now";
  return "";
}

}  // namespace stx
