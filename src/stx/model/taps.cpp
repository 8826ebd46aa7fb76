#include "stx/model/taps.h"

namespace stx {

bool Taps::wants(const std::string& name) const {
  // Attention internals are recorded only when a filter names them explicitly.
  std::string inner;
  for (const char* s : {"probs", "queries_in", "keys_in"}) {
    const std::string tail = std::string(".") + s;
    if (name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0) inner = s;
  }
  if (filters_.empty()) return inner.empty();
  for (auto& f : filters_)
    if (name.find(f) != std::string::npos && (inner.empty() || f.find(inner) != std::string::npos)) return true;
  return false;
}

const torch::Tensor& Taps::record(const std::string& name, const torch::Tensor& t) {
  if (!wants(name)) return t;
  if (with_grad_ && t.requires_grad()) {
    auto& slot = values_[name];
    slot = t;
    slot.retain_grad();
    return t;
  }
  values_[name] = t.detach();
  return t;
}

std::map<std::string, torch::Tensor> Taps::grads() const {
  std::map<std::string, torch::Tensor> out;
  for (auto& [name, t] : values_) out[name] = t.grad().defined() ? t.grad() : torch::Tensor();
  return out;
}

}  // namespace stx
