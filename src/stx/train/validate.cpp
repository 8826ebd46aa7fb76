// stx/train/validate.cpp — see validate.h.
#include "stx/train/validate.h"

#include "stx/eval/bleu.h"
#include "stx/train/loss.h"

namespace stx {

Validation evaluate_loss(TransformerImpl& model, const Batcher& batches, double label_smoothing, int64_t pad_id) {
  const bool was_training = model.is_training();
  model.eval();
  torch::NoGradGuard ng;
  double loss = 0, nll = 0;
  int64_t tokens = 0;
  auto params = model.parameters();
  const auto dev = params.empty() ? torch::Device(torch::kCPU) : params.front().device();
  auto on = [&](const torch::Tensor& x) { return x.defined() ? x.to(dev) : x; };
  for (int64_t i = 0; i < batches.batches_per_epoch(); ++i) {
    auto b = batches.batch(i);
    auto ls = label_smoothed_loss(model.forward(on(b.src), on(b.tgt_in)), on(b.tgt_out), label_smoothing, pad_id);
    loss += ls.loss.item<double>(), nll += ls.nll.item<double>(), tokens += ls.tokens;
  }
  model.train(was_training);
  Validation v;
  v.tokens = tokens;
  v.loss = loss / static_cast<double>(std::max<int64_t>(tokens, 1));
  v.nll = nll / static_cast<double>(std::max<int64_t>(tokens, 1));
  return v;
}

double bleu_of(TransformerImpl& model, const RunVocab& v, const std::vector<Example>& sources,
               const std::vector<std::string>& refs, const DecodeOptions& o, std::vector<std::string>* hyps) {
  std::vector<std::vector<int32_t>> src;
  for (auto& e : sources) src.push_back(e.src);
  const bool was_training = model.is_training();
  model.eval();
  auto out = translate(model, src, o);
  model.train(was_training);
  std::vector<std::string> text;
  for (auto& ids : out) text.push_back(v.tgt->decode(std::vector<int>(ids.begin(), ids.end())));
  auto score = corpus_bleu(text, std::vector<std::string>(refs.begin(), refs.begin() + static_cast<long>(text.size())));
  if (hyps) *hyps = std::move(text);
  return score.score;
}

Validation validate_run(TransformerImpl& model, const RunData& data, const Config& cfg) {
  auto v = evaluate_loss(model, *data.valid, cfg.train.label_smoothing, data.vocab.pad_id);
  const int64_t n = std::min<int64_t>(cfg.train.valid_bleu_sentences, static_cast<int64_t>(data.valid_examples.size()));
  if (cfg.data.task == Task::Translation && n > 0) {
    DecodeOptions o;
    o.beam = 1;
    o.bos_id = data.vocab.bos_id, o.eos_id = data.vocab.eos_id, o.pad_id = data.vocab.pad_id;
    o.max_len_a = 2, o.max_len_b = 10;
    std::vector<Example> src(data.valid_examples.begin(), data.valid_examples.begin() + n);
    v.bleu = bleu_of(model, data.vocab, src, data.valid_refs, o);
  }
  return v;
}

}  // namespace stx
