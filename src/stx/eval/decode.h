// stx/eval/decode.h — sequence generation from a trained model (eval mode, no gradients):
//   greedy and beam search for translation (beam scores: sum of log-probabilities divided by
//   length^length_penalty, fairseq's lenpen; finished hypotheses compete with live ones: a
//   source is done once k have finished and the k-th best beats the best live hypothesis's
//   score at its current length, or at the length limit; beam 1 is exactly greedy),
//   sampling with temperature and top-k for language models.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "stx/model/transformer.h"

namespace stx {

struct DecodeOptions {
  int64_t beam = 1;             // 1 = greedy
  double length_penalty = 1.0;  // α in score / len^α (len counts generated tokens incl. eos)
  int64_t max_len_a = 0;        // max output length = a·|src| + b tokens before the eos, capped
  int64_t max_len_b = 200;      // at model.max_len − 1 (|src| counts the source's eos); eos is
                                // forced after them
  int64_t bos_id = 2, eos_id = 3, pad_id = 0;
};

// Translates each source (ids incl. the final eos, as the batcher builds them) with an
// encoder-decoder model; returns the output ids without bos/eos (bos and pad are never emitted).
// Sources are decoded in batches; the result does not depend on how they are batched.
// Throws InputError for another architecture, an empty or too long source, out-of-vocabulary
// ids, beam < 1 or negative max_len_a/b. The model is in eval mode during the call.
std::vector<std::vector<int32_t>> translate(TransformerImpl& model, const std::vector<std::vector<int32_t>>& sources,
                                            const DecodeOptions& o);

struct SampleOptions {
  int64_t max_new_tokens = 100;
  double temperature = 1.0;  // 0: greedy (argmax)
  int64_t top_k = 0;         // 0: the whole vocabulary
  uint64_t seed = 1;
  int64_t bos_id = 2, eos_id = 3;
};
// Continues `prompt` (ids, without bos; bos is prepended) with a decoder-only model; stops at
// eos, after max_new_tokens, or when bos + prompt + output fill model.max_len; returns only the
// new ids (without eos). bos and the model's pad id are never sampled. Uses its own generator
// seeded with o.seed: reproducible, and the global generator is left untouched.
std::vector<int32_t> sample(TransformerImpl& model, const std::vector<int32_t>& prompt, const SampleOptions& o);

namespace detail {
// translate() through the beam-search code even when o.beam == 1 (tests check that beam
// search with one beam equals greedy decoding).
std::vector<std::vector<int32_t>> translate_beam_search(TransformerImpl& model,
                                                        const std::vector<std::vector<int32_t>>& sources,
                                                        const DecodeOptions& o);
}  // namespace detail

}  // namespace stx
