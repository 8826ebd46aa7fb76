// tests/test_data.cpp — the data pipeline: stx/data/corpus (plain and gzip line files, corrupt and
// truncated gzip, UTF-8 errors with line numbers, split layout and its errors), stx/data/batcher
// (token budget, each example once per epoch, drop counts, seeded shuffle, exact resume by seek,
// the tgt_in/tgt_out layout) and stx/data/vocab (the SentencePiece cache and its key).
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include <torch/torch.h>

#include "helpers.h"
#include "stx/core/error.h"
#include "stx/data/batcher.h"
#include "stx/data/corpus.h"
#include "stx/data/vocab.h"

namespace fs = std::filesystem;

namespace stx {
namespace {

using test::error_of;

// A fresh, empty directory, removed at the end of the scope.
struct FreshDir {
  std::string path;
  explicit FreshDir(const std::string& tag) {
    static int counter = 0;
    path = (fs::path(::testing::TempDir()) /
            ("stx_data_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++)))
               .string();
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~FreshDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string write_gz(const std::string& path, const std::string& bytes) {
  gzFile gz = gzopen(path.c_str(), "wb9");
  EXPECT_NE(gz, nullptr);
  EXPECT_EQ(gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  EXPECT_EQ(gzclose(gz), Z_OK);
  return path;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

#define EXPECT_HAS(haystack, needle) EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

// ---------------------------------------------------------------- corpus

TEST(DataCorpus, PlainAndGzipReadTheSameLines) {
  const FreshDir tmp("read");
  const std::string& dir = tmp.path;
  const std::string text = "first line\nsecond\r\n\nÑandú — “quoted” 😀\nno final newline";
  const std::vector<std::string> want{"first line", "second", "", "Ñandú — “quoted” 😀", "no final newline"};
  EXPECT_EQ(read_lines(write_file(dir + "/a.txt", text)), want);
  EXPECT_EQ(read_lines(write_gz(dir + "/a.txt.gz", text)), want);
  EXPECT_EQ(read_lines(write_gz(dir + "/gz-without-suffix", text)), want);  // detected by magic bytes
  EXPECT_EQ(read_lines(write_file(dir + "/b.txt", "x\ny\n")), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(read_lines(write_file(dir + "/bom.txt", "\xEF\xBB\xBFx\n")), std::vector<std::string>{"x"});
}

TEST(DataCorpus, CorruptAndTruncatedGzipAreInputErrors) {
  const FreshDir tmp("gz");
  const std::string& dir = tmp.path;
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "line " + std::to_string(i * 7919 % 10007) + " of a test corpus\n";
  const std::string gz = read_file(write_gz(dir + "/ok.gz", text));
  ASSERT_GT(gz.size(), 100u);
  std::string bad_crc = gz;
  bad_crc[bad_crc.size() - 6] ^= 0x55;  // the CRC-32 in the trailer
  EXPECT_HAS(error_of([&] { read_lines(write_file(dir + "/crc.gz", bad_crc)); }), "corrupt");
  std::string bad_body = gz;
  for (size_t i = 20; i < 60; ++i) bad_body[i] = static_cast<char>(0xff);  // garbage deflate data
  EXPECT_HAS(error_of([&] { read_lines(write_file(dir + "/body.gz", bad_body)); }), "body.gz");
  const std::string cut = dir + "/cut.gz";
  write_file(cut, gz.substr(0, gz.size() / 2));
  const auto msg = error_of([&] { read_lines(cut); });
  EXPECT_HAS(msg, "truncated");
  EXPECT_HAS(msg, cut);
}

TEST(DataCorpus, InvalidUtf8NamesTheLine) {
  const FreshDir tmp("utf8");
  const std::string& dir = tmp.path;
  EXPECT_HAS(error_of([&] { read_lines(write_file(dir + "/a", "ok\nfine\nbad \xff byte\nok\n")); }), "line 3");
  EXPECT_HAS(error_of([&] { read_lines(write_gz(dir + "/b.gz", "ok\n\xC0\xAF overlong\n")); }), "line 2");
  EXPECT_HAS(error_of([&] { read_lines(write_file(dir + "/c", "\xED\xA0\x80 surrogate\n")); }), "line 1");
  EXPECT_HAS(error_of([&] { read_lines(write_file(dir + "/d", "cut \xE2\x82")); }), "UTF-8");
  EXPECT_HAS(error_of([&] { read_lines(write_file(dir + "/e", "a\nb\xF4\x90\x80\x80\n")); }), "line 2");
}

TEST(DataCorpus, EmptyAndMissingFilesAreInputErrors) {
  const FreshDir tmp("empty");
  const std::string& dir = tmp.path;
  EXPECT_HAS(error_of([&] { read_lines(write_file(dir + "/zero", "")); }), "empty");
  EXPECT_HAS(error_of([&] { read_lines(write_file(dir + "/blank", "\n\r\n\n")); }), "empty");
  EXPECT_HAS(error_of([&] { read_lines(write_gz(dir + "/zero.gz", "")); }), "empty");
  EXPECT_HAS(error_of([&] { read_lines(dir + "/absent.txt"); }), dir + "/absent.txt");
  EXPECT_HAS(error_of([&] { read_lines(dir); }), "directory");
}

TEST(DataCorpus, SplitsOfADirectory) {
  const FreshDir tmp("splits");
  const std::string& dir = tmp.path;
  write_file(dir + "/train.xx", "a1\na2\n\na4\n");
  write_gz(dir + "/train.yy.gz", "b1\nb2\nb3\nb4\n");
  write_file(dir + "/test-one.xx", "p\n");
  write_gz(dir + "/test-one.yy.gz", "q\n");
  write_file(dir + "/valid.xx", "only one side\n");
  write_file(dir + "/odd.xx", "1\n2\n3\n");
  write_file(dir + "/odd.yy", "1\n2\n");
  DataConfig d;
  d.corpus = dir, d.src_lang = "xx", d.tgt_lang = "yy";
  EXPECT_EQ(corpus_dir(d), dir);
  auto c = load_corpus(d, "train");
  EXPECT_EQ(c.src, (std::vector<std::string>{"a1", "a2", "", "a4"}));  // empty lines are kept
  EXPECT_EQ(c.tgt.size(), 4u);
  EXPECT_EQ(corpus_files(d, "test-one").tgt, dir + "/test-one.yy.gz");
  write_file(dir + "/test-one.yy", "plain\n");
  EXPECT_EQ(corpus_files(d, "test-one").tgt, dir + "/test-one.yy");  // the plain file wins
  EXPECT_EQ(load_corpus(d, "test-one").tgt, std::vector<std::string>{"plain"});

  auto msg = error_of([&] { corpus_files(d, "valid"); });
  EXPECT_HAS(msg, "valid.yy");
  EXPECT_HAS(msg, "available splits: odd, test-one, train");
  msg = error_of([&] { load_corpus(d, "odd"); });
  EXPECT_HAS(msg, "3 lines");
  EXPECT_HAS(msg, "has 2");
  EXPECT_HAS(msg, dir + "/odd.yy");

  d.task = Task::LM;
  write_gz(dir + "/train.txt.gz", "para one\npara two\n");
  c = load_corpus(d, "train");
  EXPECT_TRUE(c.src.empty());
  EXPECT_EQ(c.tgt.size(), 2u);
  EXPECT_HAS(error_of([&] { corpus_files(d, "valid"); }), "available splits: train");

  d.corpus = dir + "/nope";
  EXPECT_HAS(error_of([&] { corpus_dir(d); }), dir + "/nope");
}

TEST(DataCorpus, EmbeddedCorpora) {
  DataConfig d;  // bible-es-en, es → en
  auto c = load_corpus(d, "valid");
  EXPECT_EQ(c.src.size(), 827u);
  EXPECT_EQ(c.tgt.size(), 827u);
  d.task = Task::LM, d.corpus = "moby-dick";
  EXPECT_EQ(load_corpus(d, "valid").tgt.size(), 128u);
  EXPECT_HAS(error_of([&] { corpus_files(d, "dev"); }), "available splits: test, train, valid");
}

// ---------------------------------------------------------------- batcher

constexpr int64_t kPad = 0, kBos = 2, kEos = 3;

// n translation examples with random lengths; example i's tgt starts with the id 100 + i.
std::vector<Example> random_examples(int n, int max_len, uint32_t seed) {
  std::mt19937 g(seed);
  std::vector<Example> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const int s = 1 + static_cast<int>(g() % max_len), t = 1 + static_cast<int>(g() % max_len);
    for (int k = 0; k < s - 1; ++k) v[i].src.push_back(4 + static_cast<int32_t>(g() % 50));
    v[i].src.push_back(kEos);
    v[i].tgt.push_back(100 + i);
    for (int k = 1; k < t; ++k) v[i].tgt.push_back(4 + static_cast<int32_t>(g() % 50));
  }
  return v;
}

// The example ids (first tgt token) of a batch, row by row.
std::vector<int64_t> ids_of(const Batch& b) {
  auto col = b.tgt_out.select(1, 0).contiguous();
  return std::vector<int64_t>(col.data_ptr<int64_t>(), col.data_ptr<int64_t>() + col.numel());
}

void expect_same(const Batch& a, const Batch& b) {
  EXPECT_TRUE(torch::equal(a.src, b.src));
  EXPECT_TRUE(torch::equal(a.tgt_in, b.tgt_in));
  EXPECT_TRUE(torch::equal(a.tgt_out, b.tgt_out));
}

// The batcher's options with the test's special ids.
BatcherOptions opts(int64_t max_tokens, int64_t max_len, uint64_t seed, bool shuffle) {
  BatcherOptions o;
  o.max_tokens = max_tokens, o.max_len = max_len, o.pad_id = kPad, o.bos_id = kBos, o.eos_id = kEos, o.seed = seed;
  o.shuffle = shuffle;
  return o;
}

TEST(DataBatcher, BudgetHeldAndEveryExampleOncePerEpoch) {
  const int64_t max_tokens = 200;
  auto ex = random_examples(500, 40, 1);
  Batcher b(ex, opts(max_tokens, 64, 7, true));
  EXPECT_EQ(b.examples(), 500);
  EXPECT_EQ(b.dropped(), 0);
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::map<int64_t, int> seen;
    for (int64_t i = 0; i < b.batches_per_epoch(); ++i) {
      EXPECT_EQ(b.position().epoch, epoch);
      EXPECT_EQ(b.position().index, i);
      Batch x = b.next();
      ASSERT_EQ(x.src.dtype(), torch::kInt64);
      EXPECT_LE(x.sentences * std::max(x.src.size(1), x.tgt_in.size(1)), max_tokens);
      EXPECT_EQ(x.src.size(0), x.sentences);
      EXPECT_EQ(x.src_tokens, (x.src != kPad).sum().item<int64_t>());
      EXPECT_EQ(x.tgt_tokens, (x.tgt_out != kPad).sum().item<int64_t>());
      for (int64_t id : ids_of(x)) ++seen[id - 100];
    }
    ASSERT_EQ(seen.size(), 500u);
    for (auto& [id, n] : seen) {
      EXPECT_EQ(n, 1) << "example " << id;
      EXPECT_TRUE(id >= 0 && id < 500);
    }
  }
  EXPECT_EQ(b.position().epoch, 2);
  // Length bucketing: batches hold similar lengths, so padding is a small share.
  int64_t real = 0, padded = 0;
  for (int64_t i = 0; i < b.batches_per_epoch(); ++i) {
    Batch x = b.batch(i);
    real += x.tgt_tokens, padded += x.tgt_out.numel();
  }
  EXPECT_GT(static_cast<double>(real) / padded, 0.6);
}

TEST(DataBatcher, DropsAndCountsUnusableExamples) {
  auto ex = random_examples(50, 10, 2);                    // all within max_len 16 and the budget
  ex.push_back({{5, kEos}, {}});                           // empty target
  ex.push_back({std::vector<int32_t>(17, 5), {7}});        // src longer than max_len
  ex.push_back({{5, kEos}, std::vector<int32_t>(16, 7)});  // tgt + eos = 17 > max_len
  ex.push_back({{5, kEos}, std::vector<int32_t>(15, 7)});  // 16 tokens: kept
  Batcher b(ex, opts(16, 16, 1, false));
  EXPECT_EQ(b.dropped(), 3);
  EXPECT_EQ(b.examples(), 51);
  Batcher small(ex, opts(12, 16, 1, false));  // the 16-token example alone exceeds 12
  EXPECT_EQ(small.dropped(), 4);
  auto msg = error_of([&] { Batcher(std::vector<Example>{{{kEos}, {}}}, opts(10, 10, 1, true)); });
  EXPECT_HAS(msg, "no example survives");
  EXPECT_HAS(error_of([&] { Batcher(ex, opts(0, 16, 1, true)); }), "max_tokens");
}

TEST(DataBatcher, ShuffleIsSeededPerEpoch) {
  auto ex = random_examples(400, 30, 3);
  auto order = [&](uint64_t seed, bool shuffle, int epochs) {
    Batcher b(ex, opts(150, 64, seed, shuffle));
    std::vector<std::vector<int64_t>> out(static_cast<size_t>(epochs));
    for (int e = 0; e < epochs; ++e)
      for (int64_t i = 0; i < b.batches_per_epoch(); ++i) out[e].push_back(ids_of(b.next())[0]);
    return out;
  };
  const auto a = order(11, true, 2), again = order(11, true, 2), other = order(12, true, 2);
  ASSERT_GT(a[0].size(), 20u);
  EXPECT_EQ(a, again);        // same seed: the same batches in the same order
  EXPECT_NE(a[0], a[1]);      // a new permutation each epoch
  EXPECT_NE(a[0], other[0]);  // another seed, another order
  auto sorted0 = a[0], sorted1 = a[1];
  std::sort(sorted0.begin(), sorted0.end()), std::sort(sorted1.begin(), sorted1.end());
  EXPECT_EQ(sorted0, sorted1);  // the same batches, reordered
  const auto fixed = order(11, false, 2);
  EXPECT_EQ(fixed[0], fixed[1]);
  Batcher b(ex, opts(150, 64, 11, false));
  for (size_t i = 0; i < fixed[0].size(); ++i) EXPECT_EQ(ids_of(b.batch(static_cast<int64_t>(i)))[0], fixed[0][i]);
}

TEST(DataBatcher, SeekReproducesAnUninterruptedRun) {
  auto ex = random_examples(300, 30, 4);
  Batcher run(ex, opts(120, 64, 5, true));
  const int64_t nb = run.batches_per_epoch();
  std::vector<Batch> batches;
  std::vector<BatchPosition> positions;
  for (int64_t i = 0; i < 2 * nb + nb / 2; ++i) {
    positions.push_back(run.position());
    batches.push_back(run.next());
  }
  for (size_t start : {size_t{0}, size_t(nb) / 3, size_t(nb), size_t(nb) + 5, batches.size() - 1}) {
    Batcher resumed(ex, opts(120, 64, 5, true));
    resumed.seek(positions[start]);
    for (size_t k = start; k < batches.size(); ++k) {
      EXPECT_EQ(resumed.position().epoch, positions[k].epoch);
      EXPECT_EQ(resumed.position().index, positions[k].index);
      expect_same(resumed.next(), batches[k]);
    }
  }
  Batcher b(ex, opts(120, 64, 5, true));
  EXPECT_THROW(b.seek({0, nb}), InputError);
  EXPECT_THROW(b.seek({0, -1}), InputError);
  EXPECT_THROW(b.seek({-1, 0}), InputError);
  EXPECT_THROW(b.batch(nb), InputError);
}

TEST(DataBatcher, PaddingBosEosLayout) {
  std::vector<Example> ex{{{5, 6, kEos}, {7, 8, 9}}, {{5, kEos}, {7}}};
  Batcher b(ex, opts(1000, 10, 1, false));
  ASSERT_EQ(b.batches_per_epoch(), 1);
  Batch x = b.next();
  auto t = [](std::vector<std::vector<int64_t>> rows) {
    auto out = torch::zeros({static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows[0].size())}, torch::kInt64);
    for (size_t r = 0; r < rows.size(); ++r)
      for (size_t c = 0; c < rows[r].size(); ++c) out[r][c] = rows[r][c];
    return out;
  };
  // Sorted by length: the short example first.
  EXPECT_TRUE(torch::equal(x.src, t({{5, kEos, kPad}, {5, 6, kEos}}))) << x.src;
  EXPECT_TRUE(torch::equal(x.tgt_in, t({{kBos, 7, kPad, kPad}, {kBos, 7, 8, 9}}))) << x.tgt_in;
  EXPECT_TRUE(torch::equal(x.tgt_out, t({{7, kEos, kPad, kPad}, {7, 8, 9, kEos}}))) << x.tgt_out;
  EXPECT_EQ(x.sentences, 2);
  EXPECT_EQ(x.src_tokens, 5);
  EXPECT_EQ(x.tgt_tokens, 6);

  Batcher lm(std::vector<Example>{{{}, {9, 8}}}, opts(100, 10, 1, true));  // LM: no src
  Batch y = lm.next();
  EXPECT_FALSE(y.src.defined());
  EXPECT_TRUE(torch::equal(y.tgt_in, t({{kBos, 9, 8}})));
  EXPECT_TRUE(torch::equal(y.tgt_out, t({{9, 8, kEos}})));
  EXPECT_EQ(y.src_tokens, 0);
}

// ---------------------------------------------------------------- vocab

TEST(DataVocab, TrainsOnceAndCachesByKey) {
  const FreshDir corpus_tmp("vocab_corpus"), cache_tmp("vocab_cache");
  const std::string &corpus = corpus_tmp.path, &cache = cache_tmp.path;
  DataConfig bible;  // bible-es-en valid as a tiny corpus's train split
  auto c = load_corpus(bible, "valid");
  std::string es, en;
  for (size_t i = 0; i < 400; ++i) es += c.src[i] + "\n", en += c.tgt[i] + "\n";
  write_file(corpus + "/train.es", es);
  write_gz(corpus + "/train.en.gz", en);
  DataConfig d;
  d.corpus = corpus, d.spm_vocab_size = 300;

  ::testing::internal::CaptureStderr();
  const VocabFiles v = prepare_vocab(d, cache);
  EXPECT_HAS(::testing::internal::GetCapturedStderr(), "training SentencePiece");
  EXPECT_EQ(v.src, v.tgt);  // joint by default
  ASSERT_TRUE(fs::exists(v.src));
  const auto mtime = fs::last_write_time(v.src);
  auto sp = SentencePiece::load(v.src);
  EXPECT_EQ(sp.vocab_size(), 300);
  EXPECT_EQ(sp.eos_id(), 3);
  EXPECT_FALSE(sp.encode("Jehová dijo").empty());
  EXPECT_FALSE(sp.encode("Yahweh said").empty());

  ::testing::internal::CaptureStderr();
  const VocabFiles again = prepare_vocab(d, cache);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");  // cached: no training
  EXPECT_EQ(again.src, v.src);
  EXPECT_EQ(fs::last_write_time(v.src), mtime);

  // Another size: another model. Far beyond what 400 verses support: a smaller model, no error.
  d.spm_vocab_size = 6000;
  ::testing::internal::CaptureStderr();
  const VocabFiles big = prepare_vocab(d, cache);
  ::testing::internal::GetCapturedStderr();
  EXPECT_NE(big.src, v.src);
  const int got = SentencePiece::load(big.src).vocab_size();
  EXPECT_GT(got, 300);
  EXPECT_LT(got, 6000);

  // Separate vocabularies: one model per side. A changed text: a new key.
  d.spm_vocab_size = 300, d.joint_vocab = false;
  ::testing::internal::CaptureStderr();
  const VocabFiles sep = prepare_vocab(d, cache);
  ::testing::internal::GetCapturedStderr();
  EXPECT_NE(sep.src, sep.tgt);
  EXPECT_NE(sep.src, v.src);
  write_file(corpus + "/train.es", es + "Una línea más.\n");
  write_file(corpus + "/train.en", en + "One more line.\n");  // the plain file now wins over .gz
  d.joint_vocab = true;
  ::testing::internal::CaptureStderr();
  const VocabFiles edited = prepare_vocab(d, cache);
  ::testing::internal::GetCapturedStderr();
  EXPECT_NE(edited.src, v.src);

  d.spm_vocab_size = 4;  // no room beside the special pieces
  EXPECT_HAS(error_of([&] { prepare_vocab(d, cache); }), "data.spm_vocab_size 4");
  d.spm_vocab_size = 20;  // fewer pieces than the corpus has characters: SentencePiece's error
  ::testing::internal::CaptureStderr();
  const auto msg = error_of([&] { prepare_vocab(d, cache); });
  ::testing::internal::GetCapturedStderr();
  EXPECT_HAS(msg, "data.spm_vocab_size 20");
  EXPECT_HAS(msg, "SentencePiece training failed");
  for (auto& e : fs::directory_iterator(cache))  // no temporary left behind, even by a failure
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
}

}  // namespace
}  // namespace stx
