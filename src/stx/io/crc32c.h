// stx/io/crc32c.h — CRC-32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78; RFC 3720
// §12.1), the checksum stx stores for every tensor of the safetensors files it writes. Uses the
// SSE4.2 crc32 instruction where the CPU has it, a byte table elsewhere (same result).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace stx {

// The CRC-32C of n bytes, continuing from `crc` (0 to start): crc32c("123456789") = 0xE3069283.
uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0);
// Eight lowercase hex digits.
std::string crc32c_hex(uint32_t crc);

}  // namespace stx
