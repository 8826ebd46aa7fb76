// The C++ half of tests/ref/test_bleu_nltk.py: computes stx's corpus BLEU (stx/eval/bleu.h) of
// the hypothesis file STX_BLEU_HYP against the reference file STX_BLEU_REF (one sentence per
// line) and writes the score, its statistics and the 13a tokens of every line to STX_BLEU_OUT
// as JSON, for the Python side to recompute with nltk. Skipped when the variables are unset.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "stx/core/atomic_file.h"
#include "stx/eval/bleu.h"

namespace stx {
namespace {

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
    } else {
      o += static_cast<char>(c);  // UTF-8 bytes pass through
    }
  }
  return o + "\"";
}

std::string json_number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

template <typename T, typename F>
std::string json_array(const T& xs, F item) {
  std::string o = "[";
  for (size_t i = 0; i < xs.size(); ++i) o += (i ? "," : "") + item(xs[i]);
  return o + "]";
}

TEST(BleuNltk, CorpusBleuToJson) {
  const char* hyp = std::getenv("STX_BLEU_HYP");
  const char* ref = std::getenv("STX_BLEU_REF");
  const char* out = std::getenv("STX_BLEU_OUT");
  if (!hyp || !ref || !out)
    GTEST_SKIP() << "set STX_BLEU_HYP, STX_BLEU_REF, STX_BLEU_OUT (tests/ref/test_bleu_nltk.py)";
  const auto hyps = read_lines(hyp), refs = read_lines(ref);
  ASSERT_EQ(hyps.size(), refs.size());
  const BleuScore b = corpus_bleu(hyps, refs);
  auto tokens = [](const std::vector<std::string>& lines) {
    return json_array(lines, [](const std::string& l) { return json_array(tokenize_13a(l), json_string); });
  };
  std::ostringstream js;
  js << "{\"score\":" << json_number(b.score) << ",\"brevity_penalty\":" << json_number(b.brevity_penalty)
     << ",\"hyp_len\":" << b.hyp_len << ",\"ref_len\":" << b.ref_len
     << ",\"precisions\":" << json_array(b.precisions, json_number)
     << ",\"correct\":" << json_array(b.correct, [](int64_t x) { return std::to_string(x); })
     << ",\"total\":" << json_array(b.total, [](int64_t x) { return std::to_string(x); })
     << ",\"hyp_tokens\":" << tokens(hyps) << ",\"ref_tokens\":" << tokens(refs) << "}\n";
  write_atomically(out, [&](const std::string& tmp) {
    std::ofstream f(tmp, std::ios::binary);
    f << js.str();
    if (!f.flush()) throw std::runtime_error("cannot write " + tmp);
  });
}

}  // namespace
}  // namespace stx
