// stx/core/host_record.cpp — see host_record.h.
#include "stx/core/host_record.h"

#include <torch/torch.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

#include "stx/core/atomic_file.h"
#include "stx/core/error.h"
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
  // The library's directory is not a fact of the run: OpenBLAS keeps its kernel ("… (PATH)" → the
  // config string), another BLAS its file name ("MKL inside /x/libtorch_cpu.so" → "MKL inside libtorch_cpu.so").
  auto blas = blas_info();
  if (auto p = blas.find(" (/"); p != std::string::npos && blas.back() == ')') blas.resize(p);
  else if (auto first = blas.find('/'), last = blas.rfind('/'); first != std::string::npos)
    blas = blas.substr(0, first) + blas.substr(last + 1);
  return {{"cpu", cpu_model()}, {"host_threads", std::thread::hardware_concurrency()},
          {"blas", blas},       {"threads", torch::get_num_threads()},
          {"stx", STX_VERSION}, {"libtorch", TORCH_VERSION}};
}

void record_host(const std::string& path, const nlohmann::json& extra, bool resume) {
  auto h = host_record();
  h.update(extra);
  write_file(path, h.dump() + "\n", /*append=*/resume);
}

}  // namespace stx
