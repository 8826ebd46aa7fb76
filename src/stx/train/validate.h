// stx/train/validate.h — validation during training and `stx eval`: label-smoothed loss and
// nll per target token over a whole split (eval mode: no dropout, no σReparam power iteration),
// and for translation corpus BLEU (eval/bleu.h) of decoded sentences against the raw references.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "stx/config/config.h"
#include "stx/data/batcher.h"
#include "stx/eval/decode.h"
#include "stx/model/transformer.h"
#include "stx/train/run_data.h"

namespace stx {

struct Validation {
  double loss = 0, nll = 0;  // per target token
  int64_t tokens = 0;
  std::optional<double> bleu;
};

// Loss and nll over every batch of `batches` (model mode restored afterwards).
Validation evaluate_loss(TransformerImpl& model, const Batcher& batches, double label_smoothing, int64_t pad_id);

// Decodes `sources` and scores them against `refs` with corpus BLEU; `hyps` (optional) receives
// the detokenized outputs.
double bleu_of(TransformerImpl& model, const RunVocab& v, const std::vector<Example>& sources,
               const std::vector<std::string>& refs, const DecodeOptions& o, std::vector<std::string>* hyps = nullptr);

// What the trainer logs at eval_every: loss/nll on valid and, for translation, greedy BLEU on
// the first train.valid_bleu_sentences valid sentences (0: none).
Validation validate_run(TransformerImpl& model, const RunData& data, const Config& cfg);

}  // namespace stx
