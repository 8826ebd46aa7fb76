// stx/io/safetensors.h — reading and writing torch tensors in the safetensors format, without
// any third-party safetensors library. Layout: an 8-byte little-endian header length N, N bytes
// of JSON header {name: {"dtype","shape","data_offsets":[begin,end]}, "__metadata__": {str: str}},
// then the raw little-endian tensor data (offsets are relative to the start of the data).
// Supported dtypes: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

namespace stx {

struct SafetensorsFile {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;  // in file order (sorted by data offset)
  std::map<std::string, std::string> metadata;
  const torch::Tensor* find(const std::string& name) const;  // nullptr if absent
};

// Checksums::On stores the CRC-32C (io/crc32c.h) of every tensor's bytes in the metadata key
// "stx.crc32c" (a JSON object name → [8 hex digits, dtype, shape]) and that of the metadata in
// "stx.metadata_crc32c" (over the metadata's canonical JSON: sorted keys, without that key).
// Every file stx itself writes (checkpoints, models, probes) has them; other readers see two
// more metadata strings.
enum class Checksums { Off, On };

// Writes atomically (stx::write_atomically). Tensors are detached, copied to CPU and made
// contiguous, and written in the given order. The header JSON is padded with spaces to a
// multiple of 8 bytes. Duplicate names, the name "__metadata__", the reserved metadata keys and
// unsupported dtypes are InputErrors, and so is a failed write; in every failure no file is
// left at `path`.
void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {}, Checksums checksums = Checksums::Off);

// Reads the whole file. Every malformed input throws stx::InputError with one line naming the
// file and the problem. Never reads out of bounds. The returned tensors own their memory. A
// file with checksums is verified: metadata, or a tensor with its recorded dtype and shape, whose
// CRC-32C differs from the stored one is an InputError naming it ("the file is corrupt"); a
// tensor another tool replaced or added (other dtype or shape, or no record) is left to the
// caller's checks. The checksum keys are not returned in `metadata`.
SafetensorsFile load_safetensors(const std::string& path);

}  // namespace stx
