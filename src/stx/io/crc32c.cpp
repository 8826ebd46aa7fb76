// stx/io/crc32c.cpp — see crc32c.h.
#include "stx/io/crc32c.h"

#include <fmt/format.h>

#include <array>
#include <cstring>

namespace stx {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // 0x1EDC6F41 bit-reversed

std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (kPoly & (0u - (c & 1u)));
    t[i] = c;
  }
  return t;
}

uint32_t crc_table(const unsigned char* p, size_t n, uint32_t c) {
  static const auto table = make_table();
  for (size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xFFu] ^ (c >> 8);
  return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc_sse42(const unsigned char* p, size_t n, uint32_t c) {
  uint64_t c64 = c;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c64 = __builtin_ia32_crc32di(c64, w);
  }
  c = static_cast<uint32_t>(c64);
  for (; n > 0; ++p, --n) c = __builtin_ia32_crc32qi(c, *p);
  return c;
}
#endif

}  // namespace

uint32_t crc32c(const void* data, size_t n, uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
#if defined(__x86_64__)
  static const bool sse42 = __builtin_cpu_supports("sse4.2");
  c = sse42 ? crc_sse42(p, n, c) : crc_table(p, n, c);
#else
  c = crc_table(p, n, c);
#endif
  return ~c;
}

std::string crc32c_hex(uint32_t crc) { return fmt::format("{:08x}", crc); }

}  // namespace stx
