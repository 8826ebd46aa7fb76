// stx/parallel/grad_sync.cpp — see grad_sync.h.
#include "stx/parallel/grad_sync.h"

#include <ATen/CPUGeneratorImpl.h>

#include <map>
#include <mutex>

#include "stx/core/error.h"

namespace stx::parallel {

namespace {
constexpr double kFirstBucketMB = 1.0;  // DDP's first bucket
}

GradSync::GradSync(World& world, std::vector<torch::Tensor> params, double bucket_mb)
    : world_(world), params_(std::move(params)), slot_(params_.size()), seen_(params_.size(), 0) {
  // Buckets over the parameters in reverse order, by size (one dtype and device per bucket: one
  // flat tensor each). The first bucket holds at most 1 MB, the others train.bucket_mb.
  double cap = std::min(kFirstBucketMB, bucket_mb) * 1024 * 1024, filled = 0;
  int64_t numel = 0;
  for (size_t k = params_.size(); k-- > 0;) {
    const auto& p = params_[k];
    const double b = static_cast<double>(p.numel() * p.element_size());
    bytes_ += static_cast<int64_t>(b);
    const bool same_kind = !buckets_.empty() &&
                           params_[buckets_.back().params.front()].scalar_type() == p.scalar_type() &&
                           params_[buckets_.back().params.front()].device() == p.device();
    if (!same_kind || filled + b > cap) {  // a new bucket (a parameter larger than the cap gets one alone)
      if (!buckets_.empty()) cap = bucket_mb * 1024 * 1024;
      buckets_.emplace_back();
      filled = 0, numel = 0;
    }
    auto& bk = buckets_.back();
    slot_[k] = {buckets_.size() - 1, bk.params.size()};
    bk.params.push_back(k);
    bk.offsets.push_back(numel);
    numel += p.numel(), filled += b;
  }
  for (auto& bk : buckets_) {
    const auto& last = params_[bk.params.back()];
    bk.flat = torch::zeros({bk.offsets.back() + last.numel()}, last.options().requires_grad(false));  // Σ numel
  }
  for (size_t k = 0; k < params_.size(); ++k)
    params_[k].register_hook([this, k](const torch::Tensor& g) {
      on_grad(k, g);
      return torch::Tensor();  // keep the gradient as it is
    });
}

void GradSync::before_backward() {
  std::fill(seen_.begin(), seen_.end(), 0);
  for (auto& bk : buckets_) bk.ready = 0, bk.work.reset();
  next_launch_ = 0;
  armed_ = true;
}

// The gradient of parameter `index` is complete for this backward (a leaf's hook sees the sum of
// all its uses). Its slot gets what .grad will hold after accumulation.
void GradSync::on_grad(size_t index, const torch::Tensor& grad) {
  if (!armed_ || seen_[index]) return;
  seen_[index] = 1;
  auto& [b, pos] = slot_[index];
  auto& bk = buckets_[b];
  torch::NoGradGuard ng;
  auto view = bk.flat.narrow(0, bk.offsets[pos], params_[index].numel());
  view.copy_(grad.reshape(-1));
  const auto& acc = params_[index].grad();
  if (acc.defined()) view.add_(acc.reshape(-1));
  if (++bk.ready == bk.params.size()) launch_ready();
}

void GradSync::launch_ready() {
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].ready == buckets_[next_launch_].params.size()) {
    std::vector<torch::Tensor> v{buckets_[next_launch_].flat};
    try {
      buckets_[next_launch_].work = world_.group()->allreduce(v);
    } catch (const c10::Error& e) {
      throw DistError("rank " + std::to_string(world_.rank()) +
                      ": gradient all-reduce failed: " + e.what_without_backtrace());
    }
    ++next_launch_;
  }
}

void GradSync::finish() {
  armed_ = false;
  torch::NoGradGuard ng;
  // A parameter without a gradient in this backward (unused) contributes what it accumulated, or 0.
  for (size_t k = 0; k < params_.size(); ++k) {
    if (seen_[k]) continue;
    seen_[k] = 1;
    auto& [b, pos] = slot_[k];
    auto& bk = buckets_[b];
    auto view = bk.flat.narrow(0, bk.offsets[pos], params_[k].numel());
    const auto& acc = params_[k].grad();
    if (acc.defined()) view.copy_(acc.reshape(-1));
    else view.zero_();
    ++bk.ready;
  }
  launch_ready();
  for (auto& bk : buckets_) {
    try {
      bk.work->wait();
    } catch (const std::exception& e) {
      std::string m = e.what();
      if (auto nl = m.find('\n'); nl != std::string::npos) m.resize(nl);
      throw DistError(
          "rank " + std::to_string(world_.rank()) +
          ": gradient all-reduce failed (a peer died, hung past train.dist_timeout_s or the network failed): " + m);
    }
    for (size_t i = 0; i < bk.params.size(); ++i) {
      auto& p = params_[bk.params[i]];
      auto sum = bk.flat.narrow(0, bk.offsets[i], p.numel()).view(p.sizes());
      if (p.grad().defined()) p.mutable_grad().copy_(sum);
      else p.mutable_grad() = sum.clone();
    }
  }
}

void broadcast_from_main(World& world, const std::vector<torch::Tensor>& tensors) {
  if (tensors.empty()) return;
  torch::NoGradGuard ng;
  std::map<std::pair<c10::ScalarType, std::string>, std::vector<torch::Tensor>> groups;
  for (auto& t : tensors) groups[{t.scalar_type(), t.device().str()}].push_back(t);
  for (auto& [key, ts] : groups) {
    std::vector<torch::Tensor> flat;
    for (auto& t : ts) flat.push_back(t.detach().reshape(-1));
    auto buf = torch::cat(flat);
    world.broadcast(buf, 0);
    int64_t off = 0;
    for (auto& t : ts) {
      t.detach().copy_(buf.narrow(0, off, t.numel()).view(t.sizes()));
      off += t.numel();
    }
  }
}

void broadcast_module(World& world, torch::nn::Module& module) {
  std::vector<torch::Tensor> all;
  for (auto& p : module.parameters()) all.push_back(p);
  for (auto& b : module.buffers()) all.push_back(b);
  broadcast_from_main(world, all);
}

std::vector<torch::Tensor> other_ranks_generator_states(World& world) {
  torch::Tensor mine;
  {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    mine = gen.get_state();
  }
  auto all = world.all_gather(mine);
  return {all.begin() + 1, all.end()};
}

}  // namespace stx::parallel
