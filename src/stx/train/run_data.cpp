// stx/train/run_data.cpp — see run_data.h.
#include "stx/train/run_data.h"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "stx/core/error.h"
#include "stx/data/corpus.h"
#include "stx/data/vocab.h"

namespace stx {

namespace fs = std::filesystem;

RunVocab open_run_vocab(const std::string& run_dir, const DataConfig& d) {
  RunVocab v;
  if (d.tokenizer == TokenizerKind::Bytes) {
    v.tgt = v.src = Tokenizer::bytes();
  } else {
    v.tgt = Tokenizer(SentencePiece::load((fs::path(run_dir) / "spm.tgt.model").string()));
    v.src = d.task == Task::LM ? v.tgt : Tokenizer(SentencePiece::load((fs::path(run_dir) / "spm.src.model").string()));
  }
  v.vocab_size = std::max(v.src->vocab_size(), v.tgt->vocab_size());
  v.pad_id = v.tgt->pad_id(), v.bos_id = v.tgt->bos_id(), v.eos_id = v.tgt->eos_id();
  return v;
}

std::vector<Example> tokenize_split(const RunVocab& v, const DataConfig& d, const std::string& split, int64_t max_len,
                                    std::vector<std::string>* refs) {
  auto c = load_corpus(d, split);
  std::vector<Example> out;
  out.reserve(c.tgt.size());
  const bool translation = d.task == Task::Translation;
  const size_t chunk = static_cast<size_t>(std::max<int64_t>(1, max_len - 1));
  for (size_t i = 0; i < c.tgt.size(); ++i) {
    auto y = v.tgt->encode(c.tgt[i]);
    if (translation) {
      Example e;
      e.tgt.assign(y.begin(), y.end());
      auto x = v.src->encode(c.src[i]);
      e.src.assign(x.begin(), x.end());
      e.src.push_back(static_cast<int32_t>(v.eos_id));
      out.push_back(std::move(e));
    } else {
      for (size_t a = 0; a < y.size() || a == 0; a += chunk) {
        Example e;
        e.tgt.assign(y.begin() + static_cast<long>(a), y.begin() + static_cast<long>(std::min(y.size(), a + chunk)));
        out.push_back(std::move(e));
      }
    }
  }
  if (refs) *refs = std::move(c.tgt);
  return out;
}

namespace {
torch::Tensor real_tokens(const torch::Tensor& ids, int64_t pad) {
  return ids.defined() ? ids.ne(pad).to(torch::kFloat) : torch::Tensor();
}
}  // namespace

RunData load_run_data(const Config& cfg, const std::string& run_dir, bool reuse_run_vocab, bool quiet) {
  const auto& d = cfg.data;
  if (d.task == Task::Translation && cfg.model.arch != Arch::EncoderDecoder)
    throw InputError("data.task translation needs model.arch: encoder-decoder (got " + to_string(cfg.model.arch) + ")");
  if (d.task == Task::LM && cfg.model.arch != Arch::Decoder)
    throw InputError("data.task lm needs model.arch: decoder (got " + to_string(cfg.model.arch) + ")");
  if (!reuse_run_vocab && d.tokenizer == TokenizerKind::SentencePiece) {
    auto files = prepare_vocab(d);
    auto copy = [&](const std::string& from, const std::string& name) {
      const auto to = fs::path(run_dir) / name, tmp = fs::path(run_dir) / (name + ".tmp");
      std::error_code ec;
      fs::copy_file(from, tmp, fs::copy_options::overwrite_existing, ec);
      if (!ec) fs::rename(tmp, to, ec);
      if (ec) throw InputError("cannot copy " + from + " to " + to.string() + ": " + ec.message());
    };
    copy(files.tgt, "spm.tgt.model");
    if (d.task == Task::Translation) copy(files.src, "spm.src.model");
  }
  RunData r;
  r.vocab = open_run_vocab(run_dir, d);
  const auto& v = r.vocab;
  auto train = tokenize_split(v, d, "train", cfg.model.max_len);
  r.valid_examples = tokenize_split(v, d, "valid", cfg.model.max_len, &r.valid_refs);
  const auto& t = cfg.train;
  if (t.valid_sentences > 0 && t.valid_sentences < static_cast<int64_t>(r.valid_examples.size())) {
    r.valid_examples.resize(static_cast<size_t>(t.valid_sentences));
    if (r.valid_refs.size() > r.valid_examples.size()) r.valid_refs.resize(r.valid_examples.size());
  }
  const int64_t max_len = cfg.model.max_len;
  BatcherOptions fixed;  // validation and the probe: a fixed order
  fixed.max_tokens = t.max_tokens, fixed.max_len = max_len, fixed.pad_id = v.pad_id, fixed.bos_id = v.bos_id,
  fixed.eos_id = v.eos_id;
  BatcherOptions shuffled = fixed;
  shuffled.seed = static_cast<uint64_t>(t.seed), shuffled.shuffle = true;
  r.train = std::make_unique<Batcher>(std::move(train), shuffled);
  r.valid = std::make_unique<Batcher>(r.valid_examples, fixed);
  if (!quiet)
    std::cerr << fmt::format("data: {} train examples in {} batches ({} dropped: empty or over max_len {}), {} valid\n",
                             r.train->examples(), r.train->batches_per_epoch(), r.train->dropped(), max_len,
                             r.valid->examples());
  const int64_t n = std::min<int64_t>(t.probe_sentences, static_cast<int64_t>(r.valid_examples.size()));
  std::vector<Example> probe(r.valid_examples.begin(), r.valid_examples.begin() + n);
  fixed.max_tokens = int64_t(1) << 40;  // the whole probe in one batch
  Batcher pb(std::move(probe), fixed);
  r.probe = pb.batch(0);
  r.probe_src_mask = real_tokens(r.probe.src, v.pad_id);
  r.probe_tgt_mask = real_tokens(r.probe.tgt_in, v.pad_id);
  return r;
}

}  // namespace stx
