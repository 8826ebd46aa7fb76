#include "stx/eval/bleu.h"

#include <cmath>
#include <map>
#include <regex>
#include <sstream>

#include "stx/core/error.h"

namespace stx {

namespace {
void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t p = 0; (p = s.find(from, p)) != std::string::npos; p += to.size()) s.replace(p, from.size(), to);
}
}  // namespace

std::vector<std::string> tokenize_13a(const std::string& input) {
  std::string line = input;
  replace_all(line, "<skipped>", "");
  replace_all(line, "-\n", "");
  replace_all(line, "\n", " ");
  if (line.find('&') != std::string::npos) {
    replace_all(line, "&quot;", "\"");
    replace_all(line, "&amp;", "&");
    replace_all(line, "&lt;", "<");
    replace_all(line, "&gt;", ">");
  }
  line = " " + line + " ";
  // The four substitutions of mteval-v13a, in order.
  static const std::regex punct(R"(([\{-\~\[-\` -\&\(-\+\:-\@\/]))");
  static const std::regex period_comma_a(R"(([^0-9])([\.,]))");
  static const std::regex period_comma_b(R"(([\.,])([^0-9]))");
  static const std::regex dash(R"(([0-9])(-))");
  line = std::regex_replace(line, punct, " $1 ");
  line = std::regex_replace(line, period_comma_a, "$1 $2 ");
  line = std::regex_replace(line, period_comma_b, " $1 $2");
  line = std::regex_replace(line, dash, "$1 $2 ");
  // Python's str.split() (sacreBLEU's last step) also splits on the Unicode spaces.
  static const char* unicode_spaces[] = {"\u0085", "\u00a0", "\u1680", "\u2000", "\u2001", "\u2002", "\u2003", "\u2004",
                                         "\u2005", "\u2006", "\u2007", "\u2008", "\u2009", "\u200a", "\u2028", "\u2029",
                                         "\u202f", "\u205f", "\u3000", "\x1c",   "\x1d",   "\x1e",   "\x1f"};
  for (const char* u : unicode_spaces)
    if (line.find(u) != std::string::npos) replace_all(line, u, " ");
  std::istringstream is(line);
  std::vector<std::string> out;
  for (std::string w; is >> w;) out.push_back(w);
  return out;
}

BleuScore corpus_bleu_tokens(const std::vector<std::vector<std::string>>& hyps,
                             const std::vector<std::vector<std::string>>& refs) {
  if (hyps.size() != refs.size())
    throw InputError("BLEU: " + std::to_string(hyps.size()) + " hypotheses but " + std::to_string(refs.size()) +
                     " references");
  BleuScore b;
  for (size_t s = 0; s < hyps.size(); ++s) {
    const auto& h = hyps[s];
    const auto& r = refs[s];
    b.hyp_len += static_cast<int64_t>(h.size());
    b.ref_len += static_cast<int64_t>(r.size());
    for (int n = 1; n <= 4; ++n) {
      std::map<std::vector<std::string>, int> rc;
      for (size_t i = 0; i + n <= r.size(); ++i) ++rc[std::vector<std::string>(r.begin() + i, r.begin() + i + n)];
      std::map<std::vector<std::string>, int> hc;
      for (size_t i = 0; i + n <= h.size(); ++i) ++hc[std::vector<std::string>(h.begin() + i, h.begin() + i + n)];
      for (auto& [g, c] : hc) {
        auto it = rc.find(g);
        b.correct[n - 1] += std::min(c, it == rc.end() ? 0 : it->second);  // clipped counts
      }
      b.total[n - 1] += std::max<int64_t>(0, static_cast<int64_t>(h.size()) - n + 1);
    }
  }
  double log_sum = 0;
  double smooth = 1;
  for (int n = 0; n < 4; ++n) {
    if (b.total[n] == 0) return b;  // hypothesis too short for n-grams: BLEU 0
    double p;
    if (b.correct[n] == 0) {  // sacreBLEU "exp" smoothing
      smooth *= 2;
      p = 1.0 / (smooth * static_cast<double>(b.total[n]));
    } else {
      p = static_cast<double>(b.correct[n]) / static_cast<double>(b.total[n]);
    }
    b.precisions[n] = 100 * p;
    log_sum += std::log(p);
  }
  b.brevity_penalty = b.hyp_len == 0 ? 0
                      : b.hyp_len < b.ref_len
                          ? std::exp(1.0 - static_cast<double>(b.ref_len) / static_cast<double>(b.hyp_len))
                          : 1.0;
  b.score = 100 * b.brevity_penalty * std::exp(log_sum / 4);
  return b;
}

BleuScore corpus_bleu(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references) {
  std::vector<std::vector<std::string>> h, r;
  for (auto& s : hypotheses) h.push_back(tokenize_13a(s));
  for (auto& s : references) r.push_back(tokenize_13a(s));
  return corpus_bleu_tokens(h, r);
}

}  // namespace stx
