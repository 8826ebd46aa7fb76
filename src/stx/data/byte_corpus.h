// stx/data/byte_corpus.h — the embedded demo text as byte tokens (vocab 256): the real tokens
// used by `stx demo` and the theory experiments that need text (grad-profile, deepnet-update).
#pragma once
#include <torch/torch.h>

#include <string>

namespace stx {

// Path of data/demo/moby-dick-ch1.txt in the source tree the binary was built from.
std::string demo_text_path();

// The bytes of `path` as int64 ids in [0, 256); InputError if it cannot be read or has fewer than
// `min_bytes` bytes (`who` names the caller in the message).
torch::Tensor read_byte_tokens(const std::string& path, int64_t min_bytes, const std::string& who);

}  // namespace stx
