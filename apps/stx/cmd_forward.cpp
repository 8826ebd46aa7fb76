// stx forward — logits (and optionally taps) for the token ids in a safetensors file, in
// eval mode: no dropout, no σReparam power iteration.
#include <iostream>
#include <memory>

#include "command.h"
#include "stx/core/error.h"
#include "stx/io/model_io.h"
#include "stx/io/safetensors.h"
#include "stx/model/taps.h"

namespace stx::cli {

namespace {
// Checks an input id tensor: int64, [batch, length], ids in [0, vocab), length ≤ max_len.
torch::Tensor check_tokens(const SafetensorsFile& f, const std::string& path, const std::string& name,
                           const ModelConfig& m) {
  const torch::Tensor* t = f.find(name);
  if (!t) return {};
  if (t->scalar_type() != torch::kInt64)
    throw InputError(path + ": tensor '" + name + "' must be int64 token ids, got " +
                     std::string(c10::toString(t->scalar_type())));
  if (t->dim() != 2 || t->size(0) == 0 || t->size(1) == 0)
    throw InputError(path + ": tensor '" + name + "' must have shape [batch, length] with both > 0");
  if (t->size(1) > m.max_len)
    throw InputError(path + ": tensor '" + name + "' has length " + std::to_string(t->size(1)) +
                     ", above model.max_len = " + std::to_string(m.max_len));
  const int64_t lo = t->min().item<int64_t>(), hi = t->max().item<int64_t>();
  if (lo < 0 || hi >= m.vocab_size)
    throw InputError(path + ": tensor '" + name + "' has token id " + std::to_string(lo < 0 ? lo : hi) +
                     " outside [0, " + std::to_string(m.vocab_size) + ")");
  return *t;
}
}  // namespace

void register_forward(Registry& reg) {
  struct Opts {
    std::string model, input, out;
    bool taps = false;
    std::vector<std::string> filters;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = reg.app.add_subcommand("forward", "run a model on token ids; write logits (and taps) as safetensors");
  sub->add_option("--model", o->model, "model .safetensors (from stx init or stx train)")->required();
  sub->add_option("--input", o->input, "input .safetensors with int64 'src' and/or 'tgt' [batch, length]")->required();
  sub->add_option("--out", o->out, "output .safetensors: 'logits' [batch, length, vocab] float32")->required();
  sub->add_flag("--taps", o->taps, "also write every intermediate point (docs/model.md tap names)");
  sub->add_option("--tap", o->filters, "record only taps whose name contains this (repeatable; implies --taps)");
  reg.add(sub, [o] {
    auto loaded = load_model(o->model);
    const auto& m = loaded.config.model;
    auto in = load_safetensors(o->input);
    for (auto& [name, _] : in.tensors)
      if (name != "src" && name != "tgt")
        throw InputError(o->input + ": unexpected tensor '" + name + "' (allowed: src, tgt)");
    auto src = check_tokens(in, o->input, "src", m);
    auto tgt = check_tokens(in, o->input, "tgt", m);
    if (m.has_encoder() && !src.defined())
      throw InputError(o->input + ": this " + to_string(m.arch) + " model needs tensor 'src'");
    if (m.has_decoder() && !tgt.defined())
      throw InputError(o->input + ": this " + to_string(m.arch) + " model needs tensor 'tgt'");
    if (!m.has_encoder() && src.defined())
      throw InputError(o->input + ": a decoder-only model takes 'tgt' only, found 'src'");
    if (!m.has_decoder() && tgt.defined())
      throw InputError(o->input + ": an encoder-only model takes 'src' only, found 'tgt'");
    if (src.defined() && tgt.defined() && src.size(0) != tgt.size(0))
      throw InputError(o->input + ": 'src' and 'tgt' have different batch sizes");
    auto& model = loaded.model;
    model->eval();
    torch::NoGradGuard no_grad;
    const bool want_taps = o->taps || !o->filters.empty();
    Taps taps(o->filters);
    auto logits = model->forward(src, tgt, want_taps ? &taps : nullptr);
    std::vector<std::pair<std::string, torch::Tensor>> out{{"logits", logits.to(torch::kFloat32)}};
    if (want_taps)
      for (auto& [name, t] : taps.values())
        if (name != "logits") out.emplace_back(name, t.to(torch::kFloat32));
    save_safetensors(o->out, out, {{"stx.source_model", o->model}}, Checksums::On);
    std::cout << "wrote " << o->out << ": logits " << logits.sizes()
              << (want_taps ? ", " + std::to_string(out.size() - 1) + " taps" : "") << "\n";
    return 0;
  });
}

}  // namespace stx::cli
