#include "stx/core/runtime.h"

#include <c10/util/Logging.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>
#include <thread>
#include <utility>

namespace stx {

int physical_cores() {
  // Count distinct (physical id, core id) pairs in /proc/cpuinfo; fall back to hw threads.
  std::ifstream in("/proc/cpuinfo");
  std::set<std::pair<std::string, std::string>> cores;
  std::string line, phys = "0";
  while (std::getline(in, line)) {
    auto value = [&] { return line.substr(line.find(':') + 1); };
    if (line.rfind("physical id", 0) == 0) phys = value();
    if (line.rfind("core id", 0) == 0) cores.emplace(phys, value());
  }
  int n = static_cast<int>(cores.size());
  if (n <= 0) n = static_cast<int>(std::thread::hardware_concurrency());
  return n > 0 ? n : 1;
}

namespace {
std::string mapped_blas() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    auto pos = line.find('/');
    if (pos == std::string::npos) continue;
    auto path = line.substr(pos);
    if (path.find("openblas") != std::string::npos || path.find("libblas") != std::string::npos ||
        path.find("libmkl") != std::string::npos)
      return path;
  }
  return "";
}
}  // namespace

void reexec_with_runtime_env(int argc, char** argv) {
  (void)argc;
  if (std::getenv("STX_NO_REEXEC") || std::getenv("STX_REEXECED")) return;
  bool change = false;
  if (!std::getenv("OMP_WAIT_POLICY")) setenv("OMP_WAIT_POLICY", "PASSIVE", 1), change = true;
  if (!std::getenv("GLIBC_TUNABLES"))
    setenv("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296", 1),
        change = true;
  if (!change) return;
  setenv("STX_REEXECED", "1", 1);
  execv("/proc/self/exe", argv);  // returns only on failure: continue without the settings
}

std::string build_info() {
  std::string s =
      std::string("stx ") + STX_VERSION + "\nLibTorch " + TORCH_VERSION + " (PyTorch " STX_TORCH_PY_VERSION ")";
  s += std::string("\nCUDA: ") + (STX_WITH_CUDA ? "yes (" STX_TORCH_CUDA_VERSION ")" : "no");
  s += std::string("\nNCCL: ") + (STX_WITH_NCCL ? "yes" : "no");
  s += "\nC++: " + std::to_string(__cplusplus);
  if (STX_WITH_CUDA) s += "\nCUDA devices on this machine: " + std::to_string(torch::cuda::device_count());
  return s;
}

int default_threads(int64_t d_model, int64_t tokens) {
  const double work = static_cast<double>(tokens) * static_cast<double>(d_model) * static_cast<double>(d_model);
  return work < 16777216.0 ? 1 : physical_cores();  // 2²⁴
}

namespace {
// The threads the environment chose: STX_THREADS (set by `stx train --nproc N` for its workers,
// cores / N each), else OMP_NUM_THREADS (torchrun sets 1 for several workers per node); 0: none.
int threads_from_env() {
  for (const char* name : {"STX_THREADS", "OMP_NUM_THREADS"})
    if (const char* v = std::getenv(name); v && std::atoi(v) > 0) return std::atoi(v);
  return 0;
}
}  // namespace

void use_default_threads(int64_t d_model, int64_t tokens) {
  if (threads_from_env() == 0) torch::set_num_threads(default_threads(d_model, tokens));
}

RuntimeInfo init_runtime(int threads) {
  RuntimeInfo info;
  // c10d logs its own copy of every rendezvous or collective failure at ERROR level; stx reports
  // each as one line (exit 2 or 4), so only FATAL gets through unless the user asks for c10's
  // logs with TORCH_CPP_LOG_LEVEL.
  if (!std::getenv("TORCH_CPP_LOG_LEVEL")) FLAGS_caffe2_log_level = c10::GLOG_FATAL;
  at::globalContext().setFlushDenormal(true);
  const int from_env = threads_from_env();
  info.threads = threads > 0 ? threads : from_env > 0 ? from_env : physical_cores();
  torch::set_num_threads(info.threads);
  info.blas = mapped_blas();
  info.reference_blas = !info.blas.empty() && info.blas.find("openblas") == std::string::npos &&
                        info.blas.find("mkl") == std::string::npos;
  static bool warned = false;
  if (info.reference_blas && !warned) {
    warned = true;
    std::cerr << "stx: WARNING: BLAS is " << info.blas
              << " (the reference BLAS, ~35x slower); install libopenblas-dev (scripts/setup.sh)\n";
  }
  return info;
}

}  // namespace stx
