// stx/data/unigram.h — the unigram entropy of a corpus's training split as a run's tokenizer cuts
// it: H = −Σ_t p(t) log₂ p(t) over the tokens of the target side of every segment (line) of the
// train split, one eos per segment counted, in bits per token (bits per byte with data.tokenizer:
// bytes). A model that learned only how often each token occurs ends at H: the plateau of the
// run-outcome rules (grid/outcome.h, docs/reference.md#run-outcomes).
#pragma once
#include <string>
#include <vector>

#include "stx/config/config.h"

namespace stx {

// Bytes: counted from the corpus. SentencePiece: the train split's target lines encoded with the
// model at `spm_model` (a run's spm.tgt.model); NaN when `spm_model` is empty or not a file (the
// outcome rules then fall back to log₂ V). Computed once per (corpus, tokenizer, model) in a
// process. InputError when the corpus or the model cannot be read.
double unigram_entropy_bits(const DataConfig& d, const std::string& spm_model = "");

// −Σ p log₂ p of the distribution proportional to `counts` (zeros skipped; NaN if all are zero).
double entropy_bits(const std::vector<double>& counts);

}  // namespace stx
