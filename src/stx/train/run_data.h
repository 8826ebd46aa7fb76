// stx/train/run_data.h — the data side of a run: the tokenizers — SentencePiece model(s) (copied
// into the run directory as spm.src.model / spm.tgt.model, so eval and translate use exactly what
// training used) or bytes (data.tokenizer: bytes, nothing stored) — tokenized splits, the
// train/valid batchers and the fixed ΔF probe batch.
//   translation: src = pieces(x) + [eos], tgt = pieces(y)   (the batcher adds bos / eos)
//   lm:          tgt = pieces(paragraph)
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stx/config/config.h"
#include "stx/data/batcher.h"
#include "stx/data/tokens.h"

namespace stx {

// The run's tokenizers: RUN/spm.src.model and RUN/spm.tgt.model (LM: tgt only; src = tgt), or
// bytes on both sides.
struct RunVocab {
  std::optional<Tokenizer> src, tgt;
  int64_t vocab_size = 0;  // max over the sides: model.vocab_size
  int64_t pad_id = 0, bos_id = 2, eos_id = 3;
};
RunVocab open_run_vocab(const std::string& run_dir, const DataConfig& d);

// A split tokenized as batcher examples; `refs` (optional) receives the raw target lines. For
// lm, a segment longer than max_len − 1 pieces is cut into consecutive chunks of that length
// (bos/eos take the last position), so no text is dropped.
std::vector<Example> tokenize_split(const RunVocab& v, const DataConfig& d, const std::string& split, int64_t max_len,
                                    std::vector<std::string>* refs = nullptr);

struct RunData {
  RunVocab vocab;
  std::unique_ptr<Batcher> train, valid;
  std::vector<Example> valid_examples;           // in corpus order (BLEU decodes a prefix of them)
  std::vector<std::string> valid_refs;           // raw target lines, same order
  Batch probe;                                   // fixed ΔF / diagnostics batch
  torch::Tensor probe_src_mask, probe_tgt_mask;  // [B, S], [B, T] float: 1 on real tokens
};

// Prepares (or, with reuse_run_vocab, reopens) the vocabulary, tokenizes train and valid and
// builds the batchers (train shuffled with train.seed, valid in fixed order) and the probe batch
// (the first train.probe_sentences valid examples).
RunData load_run_data(const Config& cfg, const std::string& run_dir, bool reuse_run_vocab, bool quiet);

}  // namespace stx
