#include "stx/core/runtime.h"

#include "stx/core/blas_coretype.h"

#include <c10/util/Logging.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
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

void reexec_with_runtime_env(int argc, char** argv) {
  (void)argc;
  if (std::getenv("STX_NO_REEXEC") || std::getenv("STX_REEXECED")) return;
  bool change = false;
  if (!std::getenv("OMP_WAIT_POLICY")) setenv("OMP_WAIT_POLICY", "PASSIVE", 1), change = true;
  // The thresholds keep freed memory in the heap; tcache_count lets each thread's cache hold 2,000
  // freed chunks per small size instead of 7: backward frees thousands of same-size autograd nodes
  // and tensor headers at once, and the overflow went through malloc's bins and their
  // consolidation (the d64 × 1,000 step 1.9 % faster). 65,535 was faster still at 1,000 layers
  // (the forward ~600 → ~550 ms) but hoards: chunks cached by size are never consolidated, and
  // runs of varying batch shape grew without bound (the atlas's d64 × 24 run: 3.8 GB after 150
  // steps, against 1.4 GB with 2,000; docs/performance.md).
  if (!std::getenv("GLIBC_TUNABLES"))
    setenv("GLIBC_TUNABLES",
           "glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296:"
           "glibc.malloc.tcache_count=2000",
           1),
        change = true;
  // A DYNAMIC_ARCH OpenBLAS that fell back to its SSE3 kernels on a CPU newer than itself
  // (blas_coretype.h): the library is loaded by now, so its choice can be read and corrected.
  if (!std::getenv("OPENBLAS_CORETYPE"))
    if (auto core = openblas_coretype_override(openblas_corename(), cpu_simd()); !core.empty())
      setenv("OPENBLAS_CORETYPE", core.c_str(), 1), change = true;
  if (!change) return;
  setenv("STX_REEXECED", "1", 1);
  execv("/proc/self/exe", argv);  // returns only on failure: continue without the settings
}

std::string blas_info() {
  void* f = dlsym(RTLD_DEFAULT, "sgemm_");
  Dl_info where{};
  if (!f || !dladdr(f, &where) || !where.dli_fname) return "none";
  const std::string lib = where.dli_fname;
  using Config = const char* (*)();
  if (lib.find("openblas") != std::string::npos)
    if (auto config = reinterpret_cast<Config>(dlsym(RTLD_DEFAULT, "openblas_get_config")))
      return std::string(config()) + " (" + lib + ")";
  if (lib.find("torch_cpu") != std::string::npos) return "MKL inside " + lib;
  return lib;
}

void set_threads(int n) {
  torch::set_num_threads(n);
  using Set = void (*)(int);
  if (auto set = reinterpret_cast<Set>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) set(n);
}

std::string build_info() {
  std::string s =
      std::string("stx ") + STX_VERSION + "\nLibTorch " + TORCH_VERSION + " (PyTorch " STX_TORCH_PY_VERSION ")";
  s += std::string("\nCUDA: ") + (STX_WITH_CUDA ? "yes (" STX_TORCH_CUDA_VERSION ")" : "no");
  s += std::string("\nNCCL: ") + (STX_WITH_NCCL ? "yes" : "no");
  s += "\nC++: " + std::to_string(__cplusplus);
  s += std::string("\nBLAS: ") + blas_info() + " (built with STX_BLAS=" STX_BLAS_NAME ")";
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
  if (threads_from_env() == 0) set_threads(default_threads(d_model, tokens));
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
  set_threads(info.threads);
  return info;
}

}  // namespace stx
