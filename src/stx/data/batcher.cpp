// stx/data/batcher.cpp — see batcher.h. Token-budget batches as in fairseq's
// `batch_by_size` (Ott et al. 2019): examples sorted by padded length, cut greedily so that
// B · max(S, T) ≤ max_tokens; the batch order is a Fisher–Yates permutation drawn from
// mt19937_64 with our own unbiased bounded draw (std::shuffle and std::uniform_int_distribution
// are implementation-defined, this is not), so a position reproduces the same batch anywhere.
// Tokens are kept in flat arrays in batch order; next() only copies ids into fresh tensors.
#include "stx/data/batcher.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <string>

#include "stx/core/error.h"

namespace stx {

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform in [0, n) by rejection (no modulo bias), n > 0.
uint64_t below(std::mt19937_64& g, uint64_t n) {
  const uint64_t threshold = (0 - n) % n;  // 2^64 mod n
  for (;;) {
    const uint64_t r = g();
    if (r >= threshold) return r % n;
  }
}

}  // namespace

Batcher::Batcher(std::vector<Example> examples, const BatcherOptions& o) {
  const int64_t max_tokens = o.max_tokens, max_len = o.max_len;
  if (max_tokens <= 0) throw InputError("batcher: max_tokens must be > 0, got " + std::to_string(max_tokens));
  if (max_len <= 0) throw InputError("batcher: max_len must be > 0, got " + std::to_string(max_len));
  pad_ = o.pad_id, bos_ = o.bos_id, eos_ = o.eos_id, seed_ = o.seed, shuffle_ = o.shuffle;
  lm_ = std::all_of(examples.begin(), examples.end(), [](const Example& e) { return e.src.empty(); });

  // Filter; key = max(S, T) with S = |src| (eos included by the caller), T = |tgt| + 1.
  int64_t n_empty = 0, n_long = 0, n_budget = 0;
  std::vector<std::pair<int64_t, int64_t>> keyed;  // (length key, input index)
  keyed.reserve(examples.size());
  for (size_t i = 0; i < examples.size(); ++i) {
    const auto& e = examples[i];
    const int64_t S = static_cast<int64_t>(e.src.size()), T = static_cast<int64_t>(e.tgt.size()) + 1;
    if (e.tgt.empty() || (!lm_ && e.src.empty())) ++n_empty;
    else if (S > max_len || T > max_len) ++n_long;
    else if (std::max(S, T) > max_tokens) ++n_budget;
    else keyed.emplace_back(std::max(S, T), static_cast<int64_t>(i));
  }
  dropped_ = n_empty + n_long + n_budget;
  examples_ = static_cast<int64_t>(keyed.size());
  if (keyed.empty())
    throw InputError("batcher: no example survives out of " + std::to_string(examples.size()) + " (" +
                     std::to_string(n_empty) + " empty, " + std::to_string(n_long) + " longer than max_len " +
                     std::to_string(max_len) + ", " + std::to_string(n_budget) + " alone over max_tokens " +
                     std::to_string(max_tokens) + ")");
  std::sort(keyed.begin(), keyed.end());  // by (key, input order)

  // Greedy cut: sorted ascending, so the newest example sets the batch's width.
  int64_t ws = 0, wt = 0, count = 0;
  auto close = [&](int64_t end) {
    first_.push_back(end), width_s_.push_back(ws), width_t_.push_back(wt);
    ws = wt = count = 0;
  };
  for (size_t k = 0; k < keyed.size(); ++k) {
    const auto& e = examples[static_cast<size_t>(keyed[k].second)];
    const int64_t S = static_cast<int64_t>(e.src.size()), T = static_cast<int64_t>(e.tgt.size()) + 1;
    if (count > 0 && (count + 1) * std::max({ws, wt, S, T}) > max_tokens) close(static_cast<int64_t>(k));
    ws = std::max(ws, S), wt = std::max(wt, T), ++count;
    src_.insert(src_.end(), e.src.begin(), e.src.end());
    tgt_.insert(tgt_.end(), e.tgt.begin(), e.tgt.end());
    src_off_.push_back(static_cast<int64_t>(src_.size()));
    tgt_off_.push_back(static_cast<int64_t>(tgt_.size()));
  }
  close(static_cast<int64_t>(keyed.size()));
  examples.clear();
  examples.shrink_to_fit();
  seek({0, 0});
}

Batch Batcher::batch(int64_t i) const {
  if (i < 0 || i >= batches_per_epoch())
    throw InputError("batcher: batch " + std::to_string(i) + " out of range [0, " +
                     std::to_string(batches_per_epoch()) + ")");
  const int64_t a = first_[i], B = first_[i + 1] - a, S = width_s_[i], T = width_t_[i];
  Batch out;
  out.sentences = B;
  const auto opts = torch::TensorOptions().dtype(torch::kInt64);
  if (!lm_) {
    out.src = torch::full({B, S}, pad_, opts);
    int64_t* p = out.src.data_ptr<int64_t>();
    for (int64_t r = 0; r < B; ++r) {
      const int64_t lo = src_off_[a + r], hi = src_off_[a + r + 1];
      std::copy(src_.begin() + lo, src_.begin() + hi, p + r * S);
      out.src_tokens += hi - lo;
    }
  }
  out.tgt_in = torch::full({B, T}, pad_, opts);
  out.tgt_out = torch::full({B, T}, pad_, opts);
  int64_t* pi = out.tgt_in.data_ptr<int64_t>();
  int64_t* po = out.tgt_out.data_ptr<int64_t>();
  for (int64_t r = 0; r < B; ++r) {
    const int64_t lo = tgt_off_[a + r], n = tgt_off_[a + r + 1] - lo;
    int64_t* in = pi + r * T;
    int64_t* o = po + r * T;
    in[0] = bos_;
    std::copy(tgt_.begin() + lo, tgt_.begin() + lo + n, in + 1);
    std::copy(tgt_.begin() + lo, tgt_.begin() + lo + n, o);
    o[n] = eos_;
    out.tgt_tokens += n + 1;
  }
  return out;
}

Batch Batcher::next() {
  Batch b = batch(order_[static_cast<size_t>(index_)]);
  if (++index_ == batches_per_epoch()) seek({epoch_ + 1, 0});
  return b;
}

BatchPosition Batcher::position() const { return {epoch_, index_}; }

void Batcher::seek(BatchPosition p) {
  const int64_t nb = batches_per_epoch();
  if (p.epoch < 0 || p.index < 0 || p.index >= nb)
    throw InputError("batcher: position (epoch " + std::to_string(p.epoch) + ", index " + std::to_string(p.index) +
                     ") out of range: epoch ≥ 0 and index in [0, " + std::to_string(nb) +
                     ") (the data or max_tokens changed since the checkpoint?)");
  if (order_.empty() || p.epoch != epoch_) {
    order_.resize(static_cast<size_t>(nb));
    std::iota(order_.begin(), order_.end(), int64_t{0});
    if (shuffle_) {
      std::mt19937_64 g(splitmix64(seed_ ^ splitmix64(static_cast<uint64_t>(p.epoch) + 0x5eed)));
      for (int64_t i = nb - 1; i > 0; --i)
        std::swap(order_[static_cast<size_t>(i)], order_[below(g, static_cast<uint64_t>(i) + 1)]);
    }
  }
  epoch_ = p.epoch, index_ = p.index;
}

int64_t Batcher::batches_per_epoch() const { return static_cast<int64_t>(width_s_.size()); }
int64_t Batcher::dropped() const { return dropped_; }
int64_t Batcher::examples() const { return examples_; }

}  // namespace stx
