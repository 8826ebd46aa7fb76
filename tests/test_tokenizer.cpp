// SentencePiece through the dlmopen shim, in the same process as LibTorch (the hazard of
// docs/design.md): train a tiny model, encode/decode round trip, errors are InputErrors.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>

#include "stx/core/error.h"
#include "stx/data/tokenizer.h"

namespace stx {
namespace {

TEST(Tokenizer, TrainEncodeDecodeBesideLibTorch) {
  auto x = torch::randn({4, 4}).matmul(torch::randn({4, 4}));  // LibTorch is live
  const std::string dir = ::testing::TempDir();
  const std::string text = dir + "/stx_spm_corpus.txt";
  {
    std::ifstream in(std::string(STX_SOURCE_DIR) + "/data/demo/moby-dick-ch1.txt");
    std::ofstream out(text);
    std::string line;
    while (std::getline(in, line))
      if (!line.empty()) out << line << "\n";
  }
  SentencePiece::train({text}, dir + "/stx_spm_test", 200);
  auto sp = SentencePiece::load(dir + "/stx_spm_test.model");
  EXPECT_EQ(sp.vocab_size(), 200);
  EXPECT_EQ(sp.pad_id(), 0);
  EXPECT_EQ(sp.eos_id(), 3);
  const std::string s = "Call me Ishmael. Some years ago, never mind how long precisely.";
  auto ids = sp.encode(s);
  EXPECT_GT(ids.size(), 5u);
  EXPECT_LT(ids.size(), s.size());
  for (int id : ids) EXPECT_TRUE(id >= 0 && id < 200);
  EXPECT_EQ(sp.decode(ids), s);
  EXPECT_TRUE(torch::isfinite(x).all().item<bool>());
}

TEST(Tokenizer, BadModelsAreInputErrors) {
  EXPECT_THROW(SentencePiece::load("/nonexistent/x.model"), InputError);
  const std::string junk = ::testing::TempDir() + "/stx_spm_junk.model";
  std::ofstream(junk) << "this is not a sentencepiece model";
  EXPECT_THROW(SentencePiece::load(junk), InputError);
  EXPECT_THROW(SentencePiece::train({"/nonexistent/corpus.txt"}, ::testing::TempDir() + "/x", 100), InputError);
}

}  // namespace
}  // namespace stx
