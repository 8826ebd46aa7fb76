// stx/parallel/grad_sync.cpp — see grad_sync.h.
#include "stx/parallel/grad_sync.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>

#include <fmt/format.h>

#include <map>
#include <mutex>
#include <unordered_map>

#include "stx/core/error.h"

namespace stx::parallel {

namespace {

DistError all_reduce_failed(int rank, std::string m) {
  if (auto nl = m.find('\n'); nl != std::string::npos) m.resize(nl);
  return DistError(
      "rank " + std::to_string(rank) +
      ": gradient all-reduce failed (a peer died, hung past train.dist_timeout_s or the network failed): " + m);
}
constexpr int64_t kFirstBucketBytes = 1024 * 1024;  // DDP's first bucket (dist._DEFAULT_FIRST_BUCKET_BYTES)

// The bucket's communication: an all-reduce SUM of its flat buffer (DDP's default hook divides by
// the world size; stx's losses are already normalized by the whole update's tokens).
class SumHook : public c10d::CppCommHookInterface<c10::intrusive_ptr<c10d::ProcessGroup>> {
 public:
  using CppCommHookInterface::CppCommHookInterface;
  c10::intrusive_ptr<c10::ivalue::Future> runHook(c10d::GradBucket& bucket) override {
    std::vector<at::Tensor> tensors{bucket.getBufferRef()};
    return state_->allreduce(tensors)->getFuture();
  }
};
}  // namespace

GradSync::GradSync(World& world, std::vector<std::pair<std::string, torch::Tensor>> named, double bucket_mb)
    : world_(world) {
  std::vector<at::Tensor> params;
  std::unordered_map<size_t, std::string> names;
  for (auto& [name, p] : named) {
    names[params.size()] = name;
    bytes_ += p.numel() * p.element_size();
    params.push_back(p);
  }
  const auto cap = static_cast<int64_t>(bucket_mb * 1024 * 1024);
  const std::vector<size_t> limits{static_cast<size_t>(std::min(kFirstBucketBytes, cap)), static_cast<size_t>(cap)};
  auto [indices, per_bucket] =
      c10d::compute_bucket_assignment_by_size(params, limits, std::vector<bool>(params.size()));
  std::reverse(indices.begin(), indices.end());  // as DDP: the last parameters' bucket first
  buckets_ = static_cast<int64_t>(indices.size());
  // find_unused_parameters: true — a scheme may leave a parameter out of the graph (e.g. a
  // gate at zero); the Reducer then marks it ready with a zero gradient instead of waiting.
  reducer_ = std::make_unique<c10d::Reducer>(
      params, std::move(indices), world_.process_group(), std::vector<bool>(params.size()), cap,
      /*find_unused_parameters=*/true, /*gradient_as_bucket_view=*/false, std::move(names),
      std::min(kFirstBucketBytes, cap), /*skip_all_reduce_unused_params=*/false, /*use_python_reducer=*/false,
      std::vector<int64_t>{});
  reducer_->register_comm_hook(std::make_unique<SumHook>(world_.process_group()));
}

GradSync::~GradSync() = default;

std::string GradSync::summary(int64_t update_freq, int64_t max_tokens) const {
  return fmt::format(
      "data parallel: {} processes, {} batches of ≤ {} tokens per update, {} gradient bucket(s), {:.1f} MB "
      "all-reduced per update",
      world_.size(), world_.size() * update_freq, max_tokens, buckets_, static_cast<double>(bytes_) / 1e6);
}

void GradSync::backward(const torch::Tensor& loss) {
  try {
    reducer_->prepare_for_forward();
    reducer_->prepare_for_backward({loss});
    loss.backward();  // the Reducer's hooks all-reduce; its end-of-backward callback writes .grad
  } catch (const c10::Error& e) {
    throw all_reduce_failed(world_.rank(), e.what_without_backtrace());
  } catch (const DistError&) {
    throw;
  } catch (const InputError&) {
    throw;
  } catch (const EnvError&) {
    throw;
  } catch (const std::exception& e) {
    // Gloo's own exceptions (gloo::IoException "Connection closed by peer" when a peer died, its
    // timeouts) come back from the bucket's future as thrown: std::runtime_error, not c10::Error.
    throw all_reduce_failed(world_.rank(), e.what());
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
