// stx/data/vocab.h — the SentencePiece model(s) of a training run (Kudo & Richardson 2018):
// trained on first use on the train split with data.spm_vocab_size pieces and cached, so a
// second run with the same corpus and size reuses them. Joint vocabulary (one model on both
// sides' text) when data.joint_vocab, else one model per side. Special ids: pad 0, unk 1,
// bos 2, eos 3 (tokenizer.h).
#pragma once
#include <string>

#include "stx/config/config.h"
#include "stx/data/tokenizer.h"

namespace stx {

struct VocabFiles {
  std::string src, tgt;  // .model paths; joint: the same path twice; lm: tgt only
};

// Returns the cached models for (corpus, task, languages, joint, spm_vocab_size, sha256 of the
// training text), training them into `cache_dir` (default <source>/data/cache/spm) when absent.
// Training writes to a temporary prefix and renames, so an interrupted training leaves no
// model behind. Prints one line to stderr when it trains ("training SentencePiece …"; the
// SentencePiece library adds its own "Running command: …" line). Concurrent callers (e.g. the
// ranks of a distributed run) wait on a lock file and train once.
// data.spm_vocab_size is a soft limit (--hard_vocab_limit=false in the shim): a corpus too small
// for it gives a model with fewer pieces, so size the model by SentencePiece::vocab_size() of the
// loaded model, not by data.spm_vocab_size. InputError (naming data.spm_vocab_size) when the
// size is ≤ 4 or SentencePiece cannot train (e.g. fewer pieces than the corpus has characters).
VocabFiles prepare_vocab(const DataConfig& d, const std::string& cache_dir = "");

}  // namespace stx
