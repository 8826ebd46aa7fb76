// stx/parallel/world.h — this process's place in a data-parallel job and the c10d process group
// that joins it to the others (docs/distributed.md).
//
// The job is described by the environment variables torchrun sets: RANK, WORLD_SIZE,
// LOCAL_RANK, MASTER_ADDR, MASTER_PORT. Rendezvous goes through c10d's TCPStore (rank 0 hosts
// it on MASTER_PORT); the process group is c10d's ProcessGroupGloo on CPU and ProcessGroupNCCL
// on CUDA builds that have NCCL. Every collective waits at most the job's timeout: a peer that
// died (connection closed) or hangs (timeout) raises DistError on the others.
#pragma once
#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace stx::parallel {

struct Env {
  int rank = 0, world_size = 1, local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
};

// The job from the environment: nullopt when WORLD_SIZE is unset (a single process);
// InputError naming the variable when one is malformed or missing.
std::optional<Env> env_from_environment();

class World {
 public:
  // Rendezvous with the other WORLD_SIZE − 1 processes and build the process group; InputError
  // if the master cannot be reached (or, for rank 0, its port cannot be bound) within `timeout`.
  World(const Env& env, std::chrono::milliseconds timeout, const torch::Device& device);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  int rank() const { return env_.rank; }
  int size() const { return env_.world_size; }
  bool is_main() const { return env_.rank == 0; }
  const c10::intrusive_ptr<c10d::Backend>& group() const { return group_; }
  // The same backend as a c10d::ProcessGroup (what c10d's Reducer takes).
  const c10::intrusive_ptr<c10d::ProcessGroup>& process_group() const { return process_group_; }

  // Collectives (blocking; DistError when a peer fails or the timeout passes).
  void all_reduce_sum(torch::Tensor& t);
  void broadcast(torch::Tensor& t, int root);
  std::vector<torch::Tensor> all_gather(const torch::Tensor& t);
  void barrier();

 private:
  Env env_;
  c10::intrusive_ptr<c10d::Backend> group_;               // c10d's backend itself (PyTorch ≥ 2: not a ProcessGroup)
  c10::intrusive_ptr<c10d::ProcessGroup> process_group_;  // wrapping group_ for its device type
};

}  // namespace stx::parallel
