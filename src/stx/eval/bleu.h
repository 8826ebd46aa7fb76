// stx/eval/bleu.h — corpus BLEU (Papineni et al. 2002) as sacreBLEU computes it by default:
// 13a tokenization (mteval-v13a), clipped n-gram precisions for n = 1..4, geometric mean,
// brevity penalty exp(1 − r/c) when c < r, no smoothing unless a precision is zero
// ("exp" smoothing then, as sacreBLEU: the k-th zero precision counts as 1/2^k).
#pragma once
#include <array>
#include <string>
#include <vector>

namespace stx {

// mteval-v13a tokenization of one line (sacreBLEU's default "13a").
std::vector<std::string> tokenize_13a(const std::string& line);

struct BleuScore {
  double score = 0;                    // 0–100
  std::array<double, 4> precisions{};  // percent
  double brevity_penalty = 0;
  int64_t hyp_len = 0, ref_len = 0;
  std::array<int64_t, 4> correct{}, total{};
};

// Corpus BLEU of hypotheses against one reference each (equal counts; InputError otherwise).
BleuScore corpus_bleu(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references);
// The same on pre-tokenized sentences.
BleuScore corpus_bleu_tokens(const std::vector<std::vector<std::string>>& hyps,
                             const std::vector<std::vector<std::string>>& refs);

}  // namespace stx
