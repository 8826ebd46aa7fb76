// stx/train/optimizer.cpp — Adam, AdamW and SGD(momentum) written as torch.optim 2.11's
// single-tensor loops (foreach=False, amsgrad=False, maximize=False; the default on the CPU):
//   adam.py  _single_tensor_adam    g ← g + wd·p; m ← lerp(m, g, 1−β1); v ← β2·v + (1−β2)·g·g;
//                                   p ← p − (lr/(1−β1ᵗ)) · m / (√v/√(1−β2ᵗ) + ε)
//            AdamW (decoupled)      p ← p·(1 − lr·wd), then the same moments and update with g;
//                                   train.weight_decay_mode independent: p ← p·(1 − lr·(wd/train.lr))
//   sgd.py   _single_tensor_sgd     d ← g + wd·p; b ← μ·b + d (b ← d at the first step); p ← p − lr·b
// The same in-place ATen kernels with the same scalars in the same order give the same float32
// bits as torch.optim (tests/ref/test_optimizer_parity.py). Scratch tensors are allocated once.
#include "stx/train/optimizer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "stx/core/error.h"
#include "stx/core/shape_text.h"
#include "stx/kernels/adam.h"

namespace stx {
namespace {

// 64 Ki elements (256 KB of float32) per chunk on the CPU: the five or six buffers one chunk's
// update touches stay in the L2 cache across its kernels. On a GPU one chunk is the whole buffer
// (there the cost is the number of kernel launches).
constexpr int64_t kCpuChunk = int64_t{1} << 16;

// One flat buffer per (device, dtype) of the largest parameter's size; every parameter gets a
// view of its own shape at the start of it (the views are used one parameter at a time).
std::vector<torch::Tensor> scratch_views(const NamedTensors& params) {
  std::map<std::string, std::pair<torch::TensorOptions, int64_t>> size_of;
  auto key = [](const torch::Tensor& t) { return t.device().str() + "/" + c10::toString(t.scalar_type()); };
  for (auto& [_, p] : params) {
    auto& e = size_of.emplace(key(p), std::make_pair(p.options(), int64_t{0})).first->second;
    e.second = std::max(e.second, p.numel());
  }
  std::map<std::string, torch::Tensor> flat;
  for (auto& [k, e] : size_of) flat[k] = torch::empty({e.second}, e.first.requires_grad(false));
  std::vector<torch::Tensor> views;
  for (auto& [_, p] : params) views.push_back(flat[key(p)].narrow(0, 0, p.numel()).view(p.sizes()));
  return views;
}

// The flat layout needs dense floating-point parameters of one device and dtype, each with its
// own storage (moving a parameter that shares storage with another would untie them).
bool can_flatten(const NamedTensors& params) {
  if (params.empty()) return false;
  const auto& first = params.front().second;
  std::set<const void*> storages;
  for (auto& [_, p] : params) {
    if (p.device() != first.device() || p.scalar_type() != first.scalar_type() || !p.is_floating_point() ||
        p.layout() != torch::kStrided || !p.is_contiguous() || p.numel() == 0)
      return false;
    if (!storages.insert(p.storage().unsafeGetStorageImpl()).second) return false;
  }
  return true;
}

torch::Tensor chunk_of(const torch::Tensor& flat, int64_t offset, int64_t length) {
  return flat.defined() ? flat.narrow(0, offset, length) : torch::Tensor();
}

}  // namespace

Optimizer::Optimizer(NamedTensors params, const TrainConfig& t) : params_(std::move(params)), t_(t) {
  kind_ = t_.optimizer;
  torch::NoGradGuard no_grad;
  const bool l2 = kind_ != Kind::AdamW && t_.weight_decay != 0;
  flat_ = can_flatten(params_);
  if (!flat_) {
    for (auto& [name, p] : params_) {
      m_.push_back(torch::zeros_like(p, p.options().requires_grad(false)));
      if (kind_ != Kind::SGD) v_.push_back(torch::zeros_like(p, p.options().requires_grad(false)));
    }
  } else {
    int64_t total = 0;
    for (auto& [_, p] : params_) offset_.push_back(total), total += p.numel();
    const auto opts = params_.front().second.options().requires_grad(false);
    flat_p_ = torch::empty({total}, opts);  // flat_g_ comes with the first zero_grad that adopts the gradients
    flat_m_ = torch::zeros({total}, opts);
    if (kind_ != Kind::SGD) flat_v_ = torch::zeros({total}, opts);
    for (size_t i = 0; i < params_.size(); ++i) {
      torch::Tensor& p = params_[i].second;
      auto slot = [&](const torch::Tensor& flat) { return flat.narrow(0, offset_[i], p.numel()).view(p.sizes()); };
      slot(flat_p_).copy_(p);
      p.set_data(slot(flat_p_));  // the module's parameter is now a view of flat_p_ (same tensor, same values)
      m_.push_back(slot(flat_m_));
      if (kind_ != Kind::SGD) v_.push_back(slot(flat_v_));
    }
    const int64_t chunk = flat_p_.is_cpu() ? std::min(kCpuChunk, total) : total;
    const auto decayed = l2 ? torch::empty({chunk}, opts) : torch::Tensor();
    const auto denom = kind_ != Kind::SGD ? torch::empty({chunk}, opts) : torch::Tensor();
    for (int64_t o = 0; o < total; o += chunk) {
      const int64_t n = std::min(chunk, total - o);
      chunks_.push_back({chunk_of(flat_p_, o, n), torch::Tensor(), chunk_of(flat_m_, o, n), chunk_of(flat_v_, o, n),
                         chunk_of(decayed, 0, n), chunk_of(denom, 0, n)});
    }
  }
  if (l2) decayed_ = scratch_views(params_);
  if (kind_ != Kind::SGD) denom_ = scratch_views(params_);
}

bool Optimizer::grads_flat() const {
  if (!flat_g_.defined()) return false;
  const auto* base = static_cast<const char*>(flat_g_.data_ptr());
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto& g = params_[i].second.grad();
    if (!g.defined() || g.data_ptr() != base + offset_[i] * flat_g_.element_size()) return false;
  }
  return true;
}

// One parameter's (or one chunk's) update: torch.optim's single-tensor loop body.
void Optimizer::update_one(const torch::Tensor& p, const torch::Tensor& g0, const torch::Tensor& m,
                           const torch::Tensor& v, torch::Tensor decayed, torch::Tensor denom, double lr,
                           double step_size, double bias_correction2_sqrt) {
  const double wd = t_.weight_decay;
  // AdamW's decay rate this step: lr·wd, or lr·(wd/η) when it follows the schedule alone (the
  // product in torch.optim.AdamW's order for weight_decay = wd/η).
  const double decay = lr * (t_.weight_decay_mode == WeightDecayMode::Independent ? wd / t_.lr : wd);
  if (kind_ != Kind::SGD && adam_fused_available(p) && adam_fused_available(g0) && adam_fused_available(m) &&
      adam_fused_available(v)) {
    const auto f = [](double x) { return static_cast<float>(x); };
    AdamCoefficients c{f(t_.betas[0]), f(1 - t_.betas[0]), f(t_.betas[1]),          f(1 - t_.betas[1]),
                       f(t_.eps),      f(step_size),       f(bias_correction2_sqrt)};
    if (kind_ == Kind::AdamW) c.decay = f(1 - decay);
    else c.l2 = f(wd);
    torch::Tensor pp = p, mm = m, vv = v;
    adam_update(pp, g0, mm, vv, c);  // the steps below in one pass (kernels/adam.h)
    return;
  }
  torch::Tensor g = g0;
  if (kind_ != Kind::AdamW && wd != 0) {  // grad = grad.add(param, alpha=weight_decay)
    at::add_out(decayed, g0, p, wd);
    g = decayed;
  }
  if (kind_ == Kind::SGD) {
    torch::Tensor d = g;
    if (t_.momentum != 0) {
      if (steps_ == 1) m.copy_(g);            // buf = torch.clone(d_p)
      else m.mul_(t_.momentum).add_(g, 1.0);  // dampening 0: alpha = 1 − 0
      d = m;
    }
    p.add_(d, -lr);
    return;
  }
  if (kind_ == Kind::AdamW && wd != 0) p.mul_(1 - decay);
  m.lerp_(g, 1 - t_.betas[0]);
  v.mul_(t_.betas[1]).addcmul_(g, g, 1 - t_.betas[1]);
  at::sqrt_out(denom, v);  // (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
  denom.div_(bias_correction2_sqrt).add_(t_.eps);
  p.addcdiv_(m, denom, -step_size);
}

void Optimizer::step(double lr) {
  torch::NoGradGuard no_grad;
  ++steps_;
  // Python floats: step = step_t.item(); 1 - beta ** step; lr / bc1; math.sqrt(bc2).
  const double step = static_cast<double>(steps_);
  const double bias_correction1 = 1 - std::pow(t_.betas[0], step);
  const double bias_correction2 = 1 - std::pow(t_.betas[1], step);
  const double step_size = lr / bias_correction1;
  const double bias_correction2_sqrt = std::sqrt(bias_correction2);
  if (grads_flat()) {  // every parameter has its gradient in flat_g_: the same update, chunk by chunk
    for (auto& c : chunks_) update_one(c.p, c.g, c.m, c.v, c.decayed, c.denom, lr, step_size, bias_correction2_sqrt);
    return;
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    const torch::Tensor& g0 = params_[i].second.grad();
    if (!g0.defined()) continue;  // a parameter without a gradient is skipped
    update_one(params_[i].second, g0, m_[i], v_.empty() ? torch::Tensor() : v_[i],
               decayed_.empty() ? torch::Tensor() : decayed_[i], denom_.empty() ? torch::Tensor() : denom_[i], lr,
               step_size, bias_correction2_sqrt);
  }
}

void Optimizer::zero_grad() {
  torch::NoGradGuard no_grad;
  if (grads_flat()) {
    flat_g_.zero_();
    return;
  }
  const auto& like = flat_p_;
  const auto adoptable = [&](const torch::Tensor& g) {
    return g.defined() && g.layout() == torch::kStrided && g.scalar_type() == like.scalar_type() &&
           g.device() == like.device();
  };
  if (flat_ &&
      std::all_of(params_.begin(), params_.end(), [&](const auto& np) { return adoptable(np.second.grad()); })) {
    // Every parameter has a gradient: from now on autograd accumulates into flat_g_'s slots. (Made
    // here, not in the constructor, so that it never coexists with a backward's activations.)
    if (!flat_g_.defined()) {
      flat_g_ = torch::empty_like(flat_p_);
      const int64_t chunk = chunks_.front().p.numel();  // every chunk but the last has this length
      for (size_t k = 0; k < chunks_.size(); ++k) chunks_[k].g = flat_g_.narrow(0, k * chunk, chunks_[k].p.numel());
    }
    for (size_t i = 0; i < params_.size(); ++i) {
      torch::Tensor& p = params_[i].second;
      p.mutable_grad() = flat_g_.narrow(0, offset_[i], p.numel()).view(p.sizes());
    }
    flat_g_.zero_();
    return;
  }
  for (auto& [_, p] : params_)
    if (p.grad().defined()) p.mutable_grad().zero_();
}

NamedTensors Optimizer::state() const {
  NamedTensors out;
  out.emplace_back("optim.step", torch::scalar_tensor(steps_, torch::kInt64));
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string& name = params_[i].first;
    if (kind_ == Kind::SGD) {
      out.emplace_back("optim.momentum." + name, m_[i].detach().clone());
    } else {
      out.emplace_back("optim.exp_avg." + name, m_[i].detach().clone());
      out.emplace_back("optim.exp_avg_sq." + name, v_[i].detach().clone());
    }
  }
  return out;
}

void Optimizer::load_state(const NamedTensors& state, const std::string& what) {
  // Expected name → destination (nullptr for optim.step). Everything is checked before copying.
  std::map<std::string, torch::Tensor*> expected{{"optim.step", nullptr}};
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string& name = params_[i].first;
    if (kind_ == Kind::SGD) {
      expected["optim.momentum." + name] = &m_[i];
    } else {
      expected["optim.exp_avg." + name] = &m_[i];
      expected["optim.exp_avg_sq." + name] = &v_[i];
    }
  }
  const std::string opt = "train.optimizer " + to_string(t_.optimizer);
  std::set<std::string> seen;
  int64_t step = 0;
  for (auto& [name, t] : state) {
    auto it = expected.find(name);
    if (it == expected.end())
      throw InputError(what + ": unexpected optimizer tensor '" + name + "' (not part of " + opt + " on this model)");
    if (!seen.insert(name).second) throw InputError(what + ": optimizer tensor '" + name + "' appears twice");
    if (it->second == nullptr) {
      if (t.numel() != 1 || t.is_floating_point() || t.scalar_type() == torch::kBool)
        throw InputError(what + ": tensor 'optim.step' must be one integer, got " + c10::toString(t.scalar_type()) +
                         " of shape " + shape_str(t.sizes()));
      step = t.item<int64_t>();
      if (step < 0) throw InputError(what + ": tensor 'optim.step' is negative (" + std::to_string(step) + ")");
      continue;
    }
    if (!t.is_floating_point())
      throw InputError(what + ": optimizer tensor '" + name + "' has a non-floating dtype " +
                       c10::toString(t.scalar_type()));
    if (t.sizes() != it->second->sizes())
      throw InputError(what + ": optimizer tensor '" + name + "' has shape " + shape_str(t.sizes()) +
                       ", the model needs " + shape_str(it->second->sizes()));
  }
  for (auto& [name, _] : expected)
    if (!seen.count(name)) throw InputError(what + ": missing optimizer tensor '" + name + "' (needed by " + opt + ")");
  torch::NoGradGuard no_grad;
  for (auto& [name, t] : state)
    if (auto* dst = expected.at(name)) dst->copy_(t);
  steps_ = step;
}

}  // namespace stx
