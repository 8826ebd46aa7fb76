// stx/core/host_record.cpp — see host_record.h.
#include "stx/core/host_record.h"

#include <torch/torch.h>

#include <fstream>
#include <thread>

#include "stx/core/runtime.h"

namespace stx {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      auto v = line.substr(line.find(':') + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v.empty() ? "unknown" : v;
    }
  return "unknown";
}

nlohmann::json host_record() {
  auto blas = blas_info();
  if (auto p = blas.rfind(" ("); p != std::string::npos) blas.resize(p);  // the library's path: not a fact of the run
  return {{"cpu", cpu_model()}, {"host_threads", std::thread::hardware_concurrency()},
          {"blas", blas},       {"threads", torch::get_num_threads()},
          {"stx", STX_VERSION}, {"libtorch", TORCH_VERSION}};
}

}  // namespace stx
