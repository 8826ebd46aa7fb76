#include "stx/model/taps.h"

namespace stx {

bool Taps::wants(const std::string& name) const {
  const bool is_probs = name.size() >= 6 && name.compare(name.size() - 6, 6, ".probs") == 0;
  if (filters_.empty()) return !is_probs;
  for (auto& f : filters_)
    if (name.find(f) != std::string::npos && (!is_probs || f.find("probs") != std::string::npos)) return true;
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
