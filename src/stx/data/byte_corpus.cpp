// stx/data/byte_corpus.cpp — see byte_corpus.h.
#include "stx/data/byte_corpus.h"

#include <fstream>
#include <iterator>

#include "stx/core/error.h"
#include "stx/core/user_path.h"

namespace stx {

std::string demo_text_path() { return std::string(STX_SOURCE_DIR) + "/data/demo/moby-dick-ch1.txt"; }

torch::Tensor read_byte_tokens(const std::string& path, int64_t min_bytes, const std::string& who) {
  require_regular_file(path, "text file", who);  // before opening: a FIFO would block
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(who + ": cannot read " + path);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (static_cast<int64_t>(s.size()) < min_bytes)
    throw InputError(who + ": " + path + " has " + std::to_string(s.size()) + " bytes; at least " +
                     std::to_string(min_bytes) + " are needed");
  return torch::from_blob(s.data(), {static_cast<int64_t>(s.size())}, torch::kUInt8).to(torch::kInt64);
}

}  // namespace stx
