// stx/data/tokenizer.h — SentencePiece subwords (Kudo & Richardson 2018) through the
// libstx_spm.so shim, loaded with dlmopen(LM_ID_NEWLM) so its bundled protobuf never meets
// LibTorch's (see src/spm_shim/spm_shim.cpp).
#pragma once
#include <memory>
#include <string>
#include <vector>

namespace stx {

class SentencePiece {
 public:
  // Loads a .model file; InputError when missing or invalid.
  static SentencePiece load(const std::string& model_path);
  // Trains `model_prefix`.model/.vocab on text files (one sentence per line). Special ids:
  // pad 0, unk 1, bos 2, eos 3.
  static void train(const std::vector<std::string>& inputs, const std::string& model_prefix, int vocab_size,
                    const std::string& model_type = "unigram", double character_coverage = 1.0);

  std::vector<int> encode(const std::string& text) const;
  std::string decode(const std::vector<int>& ids) const;
  int vocab_size() const;
  int pad_id() const;
  int bos_id() const;
  int eos_id() const;
  int unk_id() const;

  // The shim's path (found next to the stx binary, or at the build location).
  static std::string shim_path();

 private:
  struct Handle;
  std::shared_ptr<Handle> h_;
};

}  // namespace stx
