// stx/parallel/world.cpp — see world.h.
#include "stx/parallel/world.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#if STX_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <cstdlib>

#include "stx/core/error.h"

namespace stx::parallel {
namespace {

std::optional<std::string> getenv_str(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::optional<std::string>(v) : std::nullopt;
}

int int_var(const char* name, int lo, int hi, std::optional<int> fallback) {
  auto v = getenv_str(name);
  if (!v) {
    if (fallback) return *fallback;
    throw InputError(std::string("WORLD_SIZE is set but ") + name +
                     " is not (a distributed worker needs RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT)");
  }
  try {
    size_t used = 0;
    const long x = std::stol(*v, &used);
    if (used == v->size() && x >= lo && x <= hi) return static_cast<int>(x);
  } catch (const std::exception&) {
  }
  throw InputError(std::string(name) + "=" + *v + " is not an integer in [" + std::to_string(lo) + ", " +
                   std::to_string(hi) + "]");
}

// What went wrong in a collective, as one line.
[[noreturn]] void rethrow(int rank, const char* what) {
  try {
    throw;
  } catch (const DistError&) {
    throw;
  } catch (const std::exception& e) {  // c10::Error, or Gloo's own (std::runtime_error)
    const auto* c = dynamic_cast<const c10::Error*>(&e);
    std::string m = c ? c->what_without_backtrace() : e.what();
    if (auto nl = m.find('\n'); nl != std::string::npos) m.resize(nl);
    throw DistError("rank " + std::to_string(rank) + ": " + what +
                    " failed (a peer died, hung past the timeout or the network failed): " + m);
  }
}

bool is_loopback(const std::string& host) { return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1"; }

}  // namespace

std::optional<Env> env_from_environment() {
  if (!getenv_str("WORLD_SIZE")) return std::nullopt;
  Env e;
  e.world_size = int_var("WORLD_SIZE", 1, 65536, std::nullopt);
  e.rank = int_var("RANK", 0, e.world_size - 1, std::nullopt);
  e.local_rank = int_var("LOCAL_RANK", 0, 65535, e.rank);
  e.master_port = int_var("MASTER_PORT", 1, 65535, std::nullopt);
  e.master_addr = getenv_str("MASTER_ADDR").value_or("");
  if (e.master_addr.empty())
    throw InputError("WORLD_SIZE is set but MASTER_ADDR is not (the host of rank 0's TCPStore)");
  return e;
}

World::World(const Env& env, std::chrono::milliseconds timeout, const torch::Device& device) : env_(env) {
  // Under torchrun its agent already hosts the store on MASTER_PORT; workers join it as clients
  // under the prefix PyTorch uses (torch.distributed.rendezvous, TORCHELASTIC_USE_AGENT_STORE).
  const bool agent_store = getenv_str("TORCHELASTIC_USE_AGENT_STORE").value_or("") == "True";
  c10d::TCPStoreOptions so;
  so.port = static_cast<uint16_t>(env.master_port);
  so.isServer = env.rank == 0 && !agent_store;
  so.numWorkers = static_cast<size_t>(env.world_size);
  so.waitWorkers = true;
  so.timeout = timeout;
  c10::intrusive_ptr<c10d::Store> store;
  try {
    store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, so);
    if (agent_store)
      store = c10::make_intrusive<c10d::PrefixStore>(
          "/worker/attempt_" + getenv_str("TORCHELASTIC_RESTART_COUNT").value_or("0"), store);
  } catch (const std::exception& e) {
    std::string m = e.what();
    if (auto nl = m.find('\n'); nl != std::string::npos) m.resize(nl);
    throw InputError("rank " + std::to_string(env.rank) + ": rendezvous with the TCPStore at " + env.master_addr + ":" +
                     std::to_string(env.master_port) + " failed within " + std::to_string(timeout.count() / 1000) +
                     " s (MASTER_ADDR / MASTER_PORT; is rank 0 running and the port free?): " + m);
  }
  try {
    if (device.is_cuda()) {
#if STX_WITH_NCCL
      auto opts = c10d::ProcessGroupNCCL::Options::create();
      opts->timeout = timeout;
      group_ = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, env.rank, env.world_size, opts);
      process_group_ = c10::make_intrusive<c10d::ProcessGroup>(store, env.rank, env.world_size);
      process_group_->setBackend(c10::DeviceType::CUDA, c10d::ProcessGroup::BackendType::NCCL, group_);
      process_group_->setDefaultBackend(c10d::ProcessGroup::BackendType::NCCL);
#else
      throw InputError(
          "train.device cuda with several processes needs NCCL, which this build lacks (build against a CUDA PyTorch: "
          "-DSTX_PYTHON=/path/to/its/python3)");
#endif
    } else {
      auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
      // GLOO_SOCKET_IFNAME as in PyTorch; loopback jobs bind 127.0.0.1; others this host's address.
      if (auto ifname = getenv_str("GLOO_SOCKET_IFNAME"))
        opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(*ifname));
      else if (is_loopback(env.master_addr))
        opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      else opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      opts->threads = 1;
      group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store, env.rank, env.world_size, opts);
      process_group_ = c10::make_intrusive<c10d::ProcessGroup>(store, env.rank, env.world_size);
      process_group_->setBackend(c10::DeviceType::CPU, c10d::ProcessGroup::BackendType::GLOO, group_);
      process_group_->setDefaultBackend(c10d::ProcessGroup::BackendType::GLOO);
    }
  } catch (const InputError&) {
    throw;
  } catch (...) {
    rethrow(env.rank, "building the process group");
  }
}

World::~World() = default;

void World::all_reduce_sum(torch::Tensor& t) {
  try {
    std::vector<torch::Tensor> v{t};
    group_->allreduce(v)->wait();
  } catch (...) {
    rethrow(rank(), "all-reduce");
  }
}

void World::broadcast(torch::Tensor& t, int root) {
  try {
    std::vector<torch::Tensor> v{t};
    c10d::BroadcastOptions o;
    o.rootRank = root;
    group_->broadcast(v, o)->wait();
  } catch (...) {
    rethrow(rank(), "broadcast");
  }
}

std::vector<torch::Tensor> World::all_gather(const torch::Tensor& t) {
  try {
    std::vector<torch::Tensor> in{t};
    std::vector<std::vector<torch::Tensor>> out(1);
    for (int r = 0; r < size(); ++r) out[0].push_back(torch::empty_like(t));
    group_->allgather(out, in)->wait();
    return out[0];
  } catch (...) {
    rethrow(rank(), "all-gather");
  }
}

void World::barrier() {
  try {
    group_->barrier()->wait();
  } catch (...) {
    rethrow(rank(), "barrier");
  }
}

}  // namespace stx::parallel
