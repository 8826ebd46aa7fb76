#include "stx/data/tokens.h"

namespace stx {

std::vector<int> Tokenizer::encode(const std::string& text) const {
  if (spm_) return spm_->encode(text);
  std::vector<int> ids;
  ids.reserve(text.size());
  for (unsigned char c : text) ids.push_back(kByteOffset + static_cast<int>(c));
  return ids;
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
  if (spm_) return spm_->decode(ids);
  std::string s;
  s.reserve(ids.size());
  for (int id : ids)
    if (id >= kByteOffset && id < kByteVocab) s.push_back(static_cast<char>(id - kByteOffset));
  return s;
}

}  // namespace stx
