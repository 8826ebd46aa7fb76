// stx/data/tokens.h — the tokenizer of a run (data.tokenizer): SentencePiece pieces
// (tokenizer.h), or bytes — id = 4 + b for every UTF-8 byte b of the text, with SentencePiece's
// special ids pad 0, unk 1 (never produced), bos 2, eos 3; a vocabulary of 260. With bytes a
// model's loss per token is its loss per byte (eos aside), so nll / ln 2 is bits per byte.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "stx/data/tokenizer.h"

namespace stx {

class Tokenizer {
 public:
  static constexpr int kByteOffset = 4, kByteVocab = 256 + kByteOffset;

  explicit Tokenizer(SentencePiece spm) : spm_(std::move(spm)) {}
  static Tokenizer bytes() { return Tokenizer(); }

  std::vector<int> encode(const std::string& text) const;
  // Bytes: ids outside the byte range (specials) are skipped.
  std::string decode(const std::vector<int>& ids) const;
  int vocab_size() const { return spm_ ? spm_->vocab_size() : kByteVocab; }
  int pad_id() const { return spm_ ? spm_->pad_id() : 0; }
  int bos_id() const { return spm_ ? spm_->bos_id() : 2; }
  int eos_id() const { return spm_ ? spm_->eos_id() : 3; }
  bool is_bytes() const { return !spm_; }

 private:
  Tokenizer() = default;
  std::optional<SentencePiece> spm_;
};

}  // namespace stx
