// Corpus BLEU (13a tokenization, clipping, brevity penalty) on hand-checkable cases, and the
// learning-rate schedules' formulas. The cross-check against nltk's corpus_bleu on real
// translations runs in tests/ref once `stx eval` exists.
#include <gtest/gtest.h>

#include <cmath>

#include "stx/core/error.h"
#include "stx/eval/bleu.h"
#include "stx/train/schedule.h"

namespace stx {
namespace {

TEST(Bleu, Tokenize13a) {
  auto t = tokenize_13a("Hello, world! It's 3.5-4 \"great\" (really). 1,000 &amp; more");
  std::vector<std::string> want{"Hello", ",",  "world", "!",      "It's", "3.5", "-",     "4", "\"",
                                "great", "\"", "(",     "really", ")",    ".",   "1,000", "&", "more"};
  EXPECT_EQ(t, want);
}

TEST(Bleu, IdenticalIs100AndClippingWorks) {
  EXPECT_NEAR(corpus_bleu({"the cat sat on the mat ."}, {"the cat sat on the mat ."}).score, 100.0, 1e-9);
  // "the the the the" vs "the cat": unigram precision clipped to 1/4.
  auto b = corpus_bleu_tokens({{"the", "the", "the", "the"}}, {{"the", "cat", "sat", "on"}});
  EXPECT_EQ(b.correct[0], 1);
  EXPECT_EQ(b.total[0], 4);
}

TEST(Bleu, HandComputedCorpusScore) {
  // hyp1 "the cat sat on the mat" / ref1 "the cat sat on a mat": p1 5/6, p2 3/5, p3 2/4, p4 1/3;
  // hyp2 "a quick brown fox jumps" / ref2 "the quick brown fox jumped": p1 3/5, p2 2/4, p3 1/3, p4 0/2.
  // Corpus: 8/11, 5/9, 3/7, 1/5; lengths 11 vs 11 → BP 1.
  auto b = corpus_bleu({"the cat sat on the mat", "a quick brown fox jumps"},
                       {"the cat sat on a mat", "the quick brown fox jumped"});
  const double want =
      100 * std::exp((std::log(8.0 / 11) + std::log(5.0 / 9) + std::log(3.0 / 7) + std::log(1.0 / 5)) / 4);
  EXPECT_NEAR(b.score, want, 1e-9);
  EXPECT_DOUBLE_EQ(b.brevity_penalty, 1.0);
}

TEST(Bleu, BrevityPenaltyAndMismatch) {
  auto b = corpus_bleu({"a b c d"}, {"a b c d e f g h"});
  EXPECT_NEAR(b.brevity_penalty, std::exp(1 - 8.0 / 4), 1e-12);
  EXPECT_THROW(corpus_bleu({"a"}, {"a", "b"}), InputError);
}

TEST(Schedule, Formulas) {
  Schedule s{ScheduleKind::InverseSqrt, 1e-3, 4000, 100000};
  EXPECT_DOUBLE_EQ(s.at(1), 1e-3 / 4000);
  EXPECT_DOUBLE_EQ(s.at(4000), 1e-3);
  EXPECT_DOUBLE_EQ(s.at(16000), 1e-3 * 0.5);
  Schedule c{ScheduleKind::Cosine, 1e-3, 10, 110};
  EXPECT_DOUBLE_EQ(c.at(10), 1e-3);
  EXPECT_NEAR(c.at(60), 0.5e-3, 1e-15);
  EXPECT_NEAR(c.at(110), 0.0, 1e-15);
  Schedule k{ScheduleKind::Constant, 2e-4, 0, 10};
  EXPECT_DOUBLE_EQ(k.at(1), 2e-4);
  EXPECT_DOUBLE_EQ(k.at(1000), 2e-4);
}

}  // namespace
}  // namespace stx
