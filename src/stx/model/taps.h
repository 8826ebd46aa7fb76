// stx/model/taps.h — record intermediate tensors of a forward by name (Xiong et al.'s notation:
// x^{post,1..5}, x^{pre,1..5}, norm inputs, layer outputs, attention probabilities), and
// optionally their gradients after backward.
//
// Tap names: "{stack}.layers.{i}.{point}" with stack ∈ {encoder, decoder} and point one of
//   post1 … post5 / pre1 … pre5           Xiong et al.'s (2020) points for self-attention and FFN
//   cross1 … cross3                       the decoder's cross-attention sub-layer, in order
//   input                                 x_l, the layer input
//   {norm_name}.input                     input of each norm, e.g. final_layer_norm.input
//   self_attn.probs / encoder_attn.probs  attention probabilities [B, H, Tq, Tk]
//   {attn}.queries_in / {attn}.keys_in    the attention's query input and (cross-attention
//                                         only) its key/value input [B, T, d]
//   (these three only when a filter names them explicitly, e.g. ".probs")
// plus "{stack}.embed" (x_0 after embedding), "{stack}.layer_norm.input" (final norm input),
// "{stack}.out" (the stack's final hidden state) and "logits".
#pragma once
#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

namespace stx {

class Taps {
 public:
  // `filters`: substrings; a name is recorded when it contains any of them (empty: all but the
  // attention internals probs, queries_in, keys_in). `with_grad`: keep gradients of recorded
  // tensors after backward.
  explicit Taps(std::vector<std::string> filters = {}, bool with_grad = false)
      : filters_(std::move(filters)), with_grad_(with_grad) {}

  bool wants(const std::string& name) const;
  // Records `t` under `name` if wanted. Returns t unchanged (so calls can wrap expressions).
  const torch::Tensor& record(const std::string& name, const torch::Tensor& t);

  const std::map<std::string, torch::Tensor>& values() const { return values_; }
  // Gradients of the recorded tensors (after backward); empty tensors where none reached.
  std::map<std::string, torch::Tensor> grads() const;
  bool with_grad() const { return with_grad_; }
  void clear() { values_.clear(); }

 private:
  std::vector<std::string> filters_;
  bool with_grad_;
  std::map<std::string, torch::Tensor> values_;
};

// A tap site: a recorder (may be null) and the name prefix of the current module.
struct TapSite {
  Taps* taps = nullptr;
  std::string prefix;
  void operator()(const std::string& point, const torch::Tensor& t) const {
    if (taps) taps->record(prefix + point, t);
  }
  TapSite sub(const std::string& name) const { return taps ? TapSite{taps, prefix + name + "."} : TapSite{}; }
};

}  // namespace stx
