#include "stx/core/blas_coretype.h"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace stx {

CpuSimd cpu_simd() {
  CpuSimd s;
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  __builtin_cpu_init();
  s.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vl");
  s.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  return s;
}

std::string openblas_coretype_override(const std::string& corename, CpuSimd cpu) {
  if (corename.empty()) return "";
  auto in = [&](auto const& names) {
    return std::any_of(names.begin(), names.end(), [&](const char* n) {
      return std::equal(corename.begin(), corename.end(), n, n + std::char_traits<char>::length(n),
                        [](unsigned char a, unsigned char b) { return std::tolower(a) == std::tolower(b); });
    });
  };
  // OpenBLAS's core names whose sgemm kernels use AVX-512, and those that use AVX2 + FMA
  // (kernel/x86_64/KERNEL.*; Zen and Excavator reuse the Haswell kernels).
  static constexpr std::array<const char*, 3> avx512_cores{"SkylakeX", "Cooperlake", "SapphireRapids"};
  static constexpr std::array<const char*, 3> avx2_cores{"Haswell", "Zen", "Excavator"};
  if (in(avx512_cores) || in(avx2_cores)) return "";  // a modern family: OpenBLAS's choice stands
  if (cpu.avx512) return "SkylakeX";
  if (cpu.avx2_fma) return "Haswell";
  return "";
}

std::string openblas_corename() {
  using Name = const char* (*)();
  auto name = reinterpret_cast<Name>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  const char* s = name ? name() : nullptr;
  return s ? s : "";
}

}  // namespace stx
