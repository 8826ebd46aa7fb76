// stx/data/unigram.cpp — see unigram.h.
#include "stx/data/unigram.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>

#include "stx/core/error.h"
#include "stx/data/corpus.h"
#include "stx/data/tokens.h"

namespace stx {

namespace fs = std::filesystem;

double entropy_bits(const std::vector<double>& counts) {
  double n = 0, h = 0;
  for (double k : counts) n += k;
  if (!(n > 0)) return NAN;
  for (double k : counts)
    if (k > 0) h -= k / n * std::log2(k / n);
  return h;
}

double unigram_entropy_bits(const DataConfig& d, const std::string& spm_model) {
  static std::mutex m;
  static std::map<std::string, double> cache;
  const bool bytes = d.tokenizer == TokenizerKind::Bytes;
  std::string model_bytes;
  if (!bytes) {
    std::error_code ec;
    if (spm_model.empty() || !fs::is_regular_file(spm_model, ec)) return NAN;
    std::ifstream in(spm_model, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    if (!in && !in.eof()) throw InputError("cannot read the SentencePiece model '" + spm_model + "'");
    model_bytes = s.str();
  }
  // The corpus as the data config names it, the side that is predicted, and the model's content.
  const auto key = d.corpus + "|" + to_string(d.task) + "|" + d.tgt_lang + "|" + to_string(d.tokenizer) + "|" +
                   std::to_string(std::hash<std::string>{}(model_bytes)) + "|" + std::to_string(model_bytes.size());
  std::lock_guard<std::mutex> lock(m);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const auto lines = load_corpus(d, "train").tgt;
  const Tokenizer tok = bytes ? Tokenizer::bytes() : Tokenizer(SentencePiece::load(spm_model));
  std::vector<double> count(static_cast<size_t>(tok.vocab_size()), 0.0);
  for (auto& line : lines) {
    for (int id : tok.encode(line))
      if (id >= 0 && static_cast<size_t>(id) < count.size()) count[static_cast<size_t>(id)] += 1;
    count[static_cast<size_t>(tok.eos_id())] += 1;
  }
  return cache[key] = entropy_bits(count);
}

}  // namespace stx
