// stx/data/vocab.cpp — see vocab.h. The cache key is a SHA-256 (FIPS 180-4, implemented here)
// over the options that shape a model and the training text itself, so an edited corpus or a
// different size never reuses a stale model. A file lock makes concurrent runs (e.g. the ranks
// of a distributed job) train once and share the result.
#include "stx/data/vocab.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "stx/core/error.h"
#include "stx/data/corpus.h"

namespace fs = std::filesystem;

namespace stx {

namespace {

// SHA-256, FIPS 180-4 §6.2.
class Sha256 {
 public:
  Sha256() { h_ = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19}; }
  void update(const std::string& s) { update(reinterpret_cast<const unsigned char*>(s.data()), s.size()); }
  void update(const unsigned char* p, size_t n) {
    bytes_ += n;
    if (fill_) {  // top up the partial block first
      const size_t k = std::min(n, size_t{64} - fill_);
      std::copy(p, p + k, buf_.data() + fill_);
      fill_ += k, p += k, n -= k;
      if (fill_ < 64) return;
      block(buf_.data()), fill_ = 0;
    }
    for (; n >= 64; p += 64, n -= 64) block(p);
    std::copy(p, p + n, buf_.data());
    fill_ = n;
  }
  std::string hex() {
    const uint64_t bits = bytes_ * 8;
    const unsigned char pad = 0x80, zero = 0;
    update(&pad, 1);
    while (fill_ != 56) update(&zero, 1);
    unsigned char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(bits >> (56 - 8 * i));
    update(len, 8);
    std::string out;
    char b[9];
    for (uint32_t w : h_) std::snprintf(b, sizeof(b), "%08x", w), out += b;
    return out;
  }

 private:
  static uint32_t rotr(uint32_t x, int r) { return (x >> r) | (x << (32 - r)); }
  void block(const unsigned char* p) {
    static const uint32_t K[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
    uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = uint32_t(p[4 * i]) << 24 | uint32_t(p[4 * i + 1]) << 16 | uint32_t(p[4 * i + 2]) << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; ++i) {
      const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
    for (int i = 0; i < 64; ++i) {
      const uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
      const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h_[0] += a, h_[1] += b, h_[2] += c, h_[3] += d, h_[4] += e, h_[5] += f, h_[6] += g, h_[7] += h;
  }
  std::array<uint32_t, 8> h_;
  std::array<unsigned char, 64> buf_{};
  size_t fill_ = 0;
  uint64_t bytes_ = 0;
};

// Bump when the training options below change, so old cached models are not reused.
constexpr const char* kRecipe = "stx-spm-1 unigram coverage=1.0 soft-limit";

// A file-name-safe version of the corpus name ("deen", or a path's last component).
std::string slug(const std::string& corpus) {
  std::string base = fs::path(corpus).filename().string();
  if (base.empty()) base = fs::path(corpus).parent_path().filename().string();
  std::string out;
  for (char c : base) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  return out.empty() ? "corpus" : out.substr(0, 40);
}

// Holds an exclusive flock on `path` for its lifetime.
struct FileLock {
  int fd = -1;
  explicit FileLock(const std::string& path) {
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw InputError("cannot create the SentencePiece cache lock '" + path + "'");
    ::flock(fd, LOCK_EX);
  }
  ~FileLock() {
    if (fd >= 0) ::flock(fd, LOCK_UN), ::close(fd);
  }
};

// The model for one text (the non-empty lines of `texts`), trained into `dir` unless cached.
// `what` names the side(s) for the key, the file name and the message.
std::string model_for(const DataConfig& d, const std::string& dir, const std::string& what,
                      const std::vector<const std::vector<std::string>*>& texts) {
  Sha256 text_hash;
  size_t lines = 0;
  for (auto* t : texts)
    for (auto& s : *t)
      if (!s.empty()) text_hash.update(s), text_hash.update("\n"), ++lines;
  Sha256 key;
  key.update(std::string(kRecipe) + "\ncorpus=" + d.corpus + "\ntask=" + to_string(d.task) + "\nsrc=" + d.src_lang +
             "\ntgt=" + d.tgt_lang + "\njoint=" + (d.joint_vocab ? "1" : "0") + "\nside=" + what +
             "\nvocab=" + std::to_string(d.spm_vocab_size) + "\ntext=" + text_hash.hex() + "\n");
  const std::string name =
      slug(d.corpus) + "." + slug(what) + "." + std::to_string(d.spm_vocab_size) + "." + key.hex().substr(0, 16);
  const std::string model = dir + "/" + name + ".model";
  if (fs::exists(model)) return model;

  FileLock lock(dir + "/" + name + ".lock");
  if (fs::exists(model)) return model;  // another process trained it while we waited
  std::cerr << "training SentencePiece (unigram, " << d.spm_vocab_size << " pieces, " << what << ") on " << lines
            << " lines of corpus '" << d.corpus << "' -> " << model << std::endl;
  const std::string tmp = dir + "/" + name + ".tmp" + std::to_string(::getpid());
  auto cleanup = [&] {
    std::error_code ec;
    for (const char* ext : {".txt", ".model", ".vocab"}) fs::remove(tmp + ext, ec);
  };
  try {
    {
      std::ofstream out(tmp + ".txt", std::ios::binary);
      for (auto* t : texts)
        for (auto& s : *t)
          if (!s.empty()) out << s << '\n';
      if (!out.flush()) throw InputError("cannot write the SentencePiece training text '" + tmp + ".txt'");
    }
    try {
      SentencePiece::train({tmp + ".txt"}, tmp, static_cast<int>(d.spm_vocab_size));
    } catch (const InputError& e) {
      throw InputError("data.spm_vocab_size " + std::to_string(d.spm_vocab_size) + " on corpus '" + d.corpus + "' (" +
                       what + "): " + e.what());
    }
    fs::rename(tmp + ".vocab", dir + "/" + name + ".vocab");
    fs::rename(tmp + ".model", model);  // last: the .model's existence marks a complete entry
  } catch (...) {
    cleanup();
    throw;
  }
  cleanup();
  return model;
}

}  // namespace

VocabFiles prepare_vocab(const DataConfig& d, const std::string& cache_dir) {
  if (d.spm_vocab_size <= 4 || d.spm_vocab_size > (1 << 30))
    throw InputError("data.spm_vocab_size " + std::to_string(d.spm_vocab_size) +
                     " is out of range: it must exceed the 4 special pieces (pad, unk, bos, eos) plus the "
                     "corpus's characters, and be at most 2^30");
  const std::string dir = cache_dir.empty() ? std::string(STX_SOURCE_DIR) + "/data/cache/spm" : cache_dir;
  if (dir.find_first_of(" \t\n") != std::string::npos)  // SentencePiece's flag syntax splits at spaces
    throw InputError("SentencePiece cache directory '" + dir + "' contains whitespace; choose a path without");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir)) throw InputError("cannot create the SentencePiece cache directory '" + dir + "'");

  const Corpus c = load_corpus(d, "train");
  VocabFiles v;
  if (d.task == Task::LM) {
    v.tgt = model_for(d, dir, "lm", {&c.tgt});
  } else if (d.joint_vocab) {
    v.src = v.tgt = model_for(d, dir, d.src_lang + "+" + d.tgt_lang, {&c.src, &c.tgt});
  } else {
    v.src = model_for(d, dir, d.src_lang, {&c.src});
    v.tgt = model_for(d, dir, d.tgt_lang, {&c.tgt});
  }
  return v;
}

}  // namespace stx
