// stx/eval/decode.cpp — greedy and beam-search translation, temperature/top-k sampling.
// Each step feeds only the newest token through the decoder with a key/value cache
// (model/incremental.h) that follows the surviving rows, and projects that position. Beam search, as fairseq's
// SequenceGenerator selects candidates: each step ranks the 2k best extensions of all live
// hypotheses of a source by cumulative log-probability; an eos extension among the first k is
// finished (scored sum / len^α), the first k non-eos extensions stay live. A source is done
// when k hypotheses have finished and the k-th best of them scores at least the best live
// hypothesis's sum / len^α at the same length (Hugging Face's early_stopping=False rule; fairseq
// stops at k finished, which gives up on longer hypotheses too early under lenpen), or at the
// length limit, where every live hypothesis is forced to finish with eos. With k = 1 this is
// exactly greedy decoding.
#include "stx/eval/decode.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <string>

#include "stx/core/error.h"

namespace stx {
namespace {

constexpr int64_t kBatchRows = 64;  // decoder rows per batch (sources × beam)
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Eval mode and no autograd for a scope; the training flag is restored on exit.
class EvalScope {
 public:
  explicit EvalScope(TransformerImpl& m) : m_(m), was_training_(m.is_training()) { m_.eval(); }
  ~EvalScope() {
    if (was_training_) m_.train(true);
  }

 private:
  TransformerImpl& m_;
  bool was_training_;
  torch::NoGradGuard no_grad_;
};

torch::Device device_of(TransformerImpl& m) {
  auto params = m.parameters();
  return params.empty() ? torch::Device(torch::kCPU) : params.front().device();
}

void check_id(int64_t id, int64_t V, const std::string& what) {
  if (id < 0 || id >= V)
    throw InputError(what + " = " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(V) + ")");
}

void check_ids(const std::vector<int32_t>& ids, int64_t V, const std::string& what) {
  for (size_t i = 0; i < ids.size(); ++i) check_id(ids[i], V, what + " token " + std::to_string(i));
}

// Log-probabilities [N, V] (float64, CPU) of the token after `last` [N, t] given the cached
// earlier positions (memory/memory_pad: the encoder output, read on the first step).
torch::Tensor next_log_probs(TransformerImpl& model, const torch::Tensor& last, const torch::Tensor& memory,
                             const torch::Tensor& memory_pad, DecoderCache& cache) {
  auto h = model.decoder->step(last, memory, memory_pad, cache);
  auto logits = model.project(h.select(1, h.size(1) - 1));
  return torch::log_softmax(logits.to(torch::kFloat64), -1).to(torch::kCPU);
}

// Tokens the decoder may never emit: bos and padding (the options' and the model's).
void forbid_specials(torch::Tensor& lp, const std::vector<int64_t>& ids) {
  for (int64_t id : ids)
    if (id >= 0 && id < lp.size(1)) lp.select(1, id).fill_(kNegInf);
}

struct Chunk {
  torch::Tensor memory, memory_pad;  // [B, S, d], [B, S] or undefined
  std::vector<int64_t> limit;        // max output tokens (before the forced eos) per source
};

std::vector<std::vector<int32_t>> greedy(TransformerImpl& model, const Chunk& c, const DecodeOptions& o,
                                         const std::vector<int64_t>& forbidden) {
  const int64_t B = c.memory.size(0);
  const auto dev = c.memory.device();
  std::vector<std::vector<int32_t>> out(B);
  std::vector<int64_t> active(B);  // chunk rows still decoding, in prefix row order
  std::iota(active.begin(), active.end(), 0);
  auto last = torch::full({B, 1}, o.bos_id, torch::dtype(torch::kInt64).device(dev));
  DecoderCache cache;
  for (int64_t step = 0; !active.empty(); ++step) {
    auto lp = next_log_probs(model, last, c.memory, c.memory_pad, cache);
    forbid_specials(lp, forbidden);
    auto best = lp.argmax(1);
    auto best_a = best.accessor<int64_t, 1>();
    std::vector<int64_t> keep, next_active, next_tok;
    for (size_t i = 0; i < active.size(); ++i) {
      const int64_t r = active[i];
      const int64_t tok = step >= c.limit[r] ? o.eos_id : best_a[i];  // eos forced at the limit
      if (tok == o.eos_id) continue;
      out[r].push_back(static_cast<int32_t>(tok));
      keep.push_back(static_cast<int64_t>(i));
      next_active.push_back(r);
      next_tok.push_back(tok);
    }
    if (keep.empty()) break;
    if (keep.size() < active.size()) cache.reorder(torch::tensor(keep, torch::kInt64).to(dev));
    last = torch::tensor(next_tok, torch::kInt64).to(dev).unsqueeze(1);
    active = std::move(next_active);
  }
  return out;
}

std::vector<std::vector<int32_t>> beam_search(TransformerImpl& model, const Chunk& c, const DecodeOptions& o,
                                              const std::vector<int64_t>& forbidden) {
  const int64_t B = c.memory.size(0), k = o.beam;
  const int64_t V = model.config().vocab_size;
  const auto dev = c.memory.device();
  struct Finished {
    double score;
    std::vector<int32_t> tokens;
  };
  std::vector<std::vector<Finished>> finished(B);
  // Live hypotheses, grouped by source in increasing order: rows of `prefix`.
  std::vector<int64_t> owner(B);
  std::iota(owner.begin(), owner.end(), 0);
  std::vector<double> score(B, 0.0);
  auto prefix = torch::full({B, 1}, o.bos_id, torch::dtype(torch::kInt64).device(dev));
  DecoderCache cache;
  for (int64_t step = 0; !owner.empty(); ++step) {
    auto lp = next_log_probs(model, prefix.narrow(1, step, 1), c.memory, c.memory_pad, cache);
    forbid_specials(lp, forbidden);
    auto cand = lp + torch::tensor(score, torch::kFloat64).unsqueeze(1);  // cumulative scores [N, V]
    const double len_norm = std::pow(static_cast<double>(step + 1), o.length_penalty);
    auto prefix_cpu = prefix.to(torch::kCPU);
    auto prefix_a = prefix_cpu.accessor<int64_t, 2>();
    auto cand_a = cand.accessor<double, 2>();
    auto hyp_tokens = [&](int64_t row) {  // the prefix of `row` without bos
      std::vector<int32_t> t;
      for (int64_t j = 1; j < prefix_a.size(1); ++j) t.push_back(static_cast<int32_t>(prefix_a[row][j]));
      return t;
    };
    std::vector<int64_t> src_rows, new_owner, new_tok;
    std::vector<double> new_score;
    for (size_t begin = 0; begin < owner.size();) {
      const int64_t s = owner[begin];
      size_t end = begin;
      while (end < owner.size() && owner[end] == s) ++end;
      const int64_t n = static_cast<int64_t>(end - begin);
      auto& fin = finished[s];
      if (step >= c.limit[s]) {  // length limit: every live hypothesis ends with eos
        for (size_t r = begin; r < end; ++r) {
          auto t = hyp_tokens(static_cast<int64_t>(r));
          fin.push_back({cand_a[static_cast<int64_t>(r)][o.eos_id] / len_norm, std::move(t)});
        }
        begin = end;
        continue;
      }
      auto flat = cand.narrow(0, static_cast<int64_t>(begin), n).reshape({-1});
      auto top = flat.topk(std::min<int64_t>(2 * k, flat.size(0)));
      auto val = std::get<0>(top).accessor<double, 1>();
      auto idx = std::get<1>(top).accessor<int64_t, 1>();
      int64_t live = 0;
      for (int64_t rank = 0; rank < val.size(0); ++rank) {
        if (val[rank] == kNegInf || (live == k && rank >= k)) break;
        const int64_t row = static_cast<int64_t>(begin) + idx[rank] / V, tok = idx[rank] % V;
        if (tok == o.eos_id) {
          if (rank < k) fin.push_back({val[rank] / len_norm, hyp_tokens(row)});
        } else if (live < k) {
          ++live;
          src_rows.push_back(row);
          new_owner.push_back(s);
          new_tok.push_back(tok);
          new_score.push_back(val[rank]);
        }
      }
      bool done = live == 0;
      if (!done && static_cast<int64_t>(fin.size()) >= k) {
        std::vector<double> sc;
        for (auto& f : fin) sc.push_back(f.score);
        std::nth_element(sc.begin(), sc.begin() + (k - 1), sc.end(), std::greater<double>());
        done = sc[k - 1] >= new_score[new_score.size() - live] / len_norm;  // the best new live one
      }
      if (done) {  // drop this source's new live rows
        while (!new_owner.empty() && new_owner.back() == s) {
          src_rows.pop_back(), new_owner.pop_back(), new_tok.pop_back(), new_score.pop_back();
        }
      }
      begin = end;
    }
    if (new_owner.empty()) break;
    auto rows_t = torch::tensor(src_rows, torch::kInt64).to(dev);
    auto tok_t = torch::tensor(new_tok, torch::kInt64).to(dev).unsqueeze(1);
    prefix = torch::cat({prefix.index_select(0, rows_t), tok_t}, 1);
    cache.reorder(rows_t);
    owner = std::move(new_owner);
    score = std::move(new_score);
  }
  std::vector<std::vector<int32_t>> out(B);
  for (int64_t s = 0; s < B; ++s) {
    const Finished* best = nullptr;
    for (auto& f : finished[s])
      if (!best || f.score > best->score) best = &f;
    if (best) out[s] = best->tokens;
  }
  return out;
}

std::vector<std::vector<int32_t>> decode(TransformerImpl& model, const std::vector<std::vector<int32_t>>& sources,
                                         const DecodeOptions& o, bool use_beam_search) {
  const auto& cfg = model.config();
  if (cfg.arch != Arch::EncoderDecoder)
    throw InputError("translation needs an encoder-decoder model, but model.arch is " + to_string(cfg.arch));
  if (o.beam < 1) throw InputError("beam size must be at least 1, got " + std::to_string(o.beam));
  if (o.max_len_a < 0 || o.max_len_b < 0)
    throw InputError("max_len_a and max_len_b must be non-negative, got " + std::to_string(o.max_len_a) + " and " +
                     std::to_string(o.max_len_b));
  const int64_t V = cfg.vocab_size;
  check_id(o.bos_id, V, "bos_id");
  check_id(o.eos_id, V, "eos_id");
  if (o.eos_id == o.bos_id || o.eos_id == o.pad_id || o.eos_id == cfg.pad_id)
    throw InputError("eos_id = " + std::to_string(o.eos_id) + " must differ from bos_id and pad_id");
  for (size_t i = 0; i < sources.size(); ++i) {
    if (sources[i].empty()) throw InputError("source sentence " + std::to_string(i) + " is empty");
    if (static_cast<int64_t>(sources[i].size()) > cfg.max_len)
      throw InputError("source sentence " + std::to_string(i) + " has " + std::to_string(sources[i].size()) +
                       " tokens, more than model.max_len = " + std::to_string(cfg.max_len));
    check_ids(sources[i], V, "source sentence " + std::to_string(i));
  }
  const std::vector<int64_t> forbidden{o.bos_id, o.pad_id, cfg.pad_id};

  EvalScope scope(model);
  const auto dev = device_of(model);
  // Longest first, so a batch holds similar lengths. Without a padding id in the model, the
  // encoder cannot mask padding: only sources of equal length share a batch then.
  std::vector<size_t> order(sources.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sources[a].size() > sources[b].size(); });
  const bool can_pad = cfg.pad_id >= 0;
  const size_t per_batch = static_cast<size_t>(std::max<int64_t>(1, kBatchRows / o.beam));
  std::vector<std::vector<int32_t>> result(sources.size());
  for (size_t begin = 0; begin < order.size();) {
    size_t end = begin;
    while (end < order.size() && end - begin < per_batch &&
           (can_pad || sources[order[end]].size() == sources[order[begin]].size()))
      ++end;
    const int64_t B = static_cast<int64_t>(end - begin);
    const int64_t S = static_cast<int64_t>(sources[order[begin]].size());
    std::vector<int64_t> flat(static_cast<size_t>(B * S), can_pad ? cfg.pad_id : 0);
    Chunk c;
    for (int64_t b = 0; b < B; ++b) {
      const auto& s = sources[order[begin + b]];
      std::copy(s.begin(), s.end(), flat.begin() + b * S);
      // Output tokens before eos; the decoder then sees at most 1 + limit ≤ max_len positions.
      c.limit.push_back(std::min(o.max_len_a * static_cast<int64_t>(s.size()) + o.max_len_b, cfg.max_len - 1));
    }
    auto src = torch::tensor(flat, torch::kInt64).view({B, S}).to(dev);
    c.memory = model.encoder->forward(src, {}, {}, nullptr);
    c.memory_pad = model.encoder->padding_mask(src);
    auto out = use_beam_search ? beam_search(model, c, o, forbidden) : greedy(model, c, o, forbidden);
    for (int64_t b = 0; b < B; ++b) result[order[begin + b]] = std::move(out[b]);
    begin = end;
  }
  return result;
}

}  // namespace

std::vector<std::vector<int32_t>> translate(TransformerImpl& model, const std::vector<std::vector<int32_t>>& sources,
                                            const DecodeOptions& o) {
  return decode(model, sources, o, /*use_beam_search=*/o.beam > 1);
}

namespace detail {
std::vector<std::vector<int32_t>> translate_beam_search(TransformerImpl& model,
                                                        const std::vector<std::vector<int32_t>>& sources,
                                                        const DecodeOptions& o) {
  return decode(model, sources, o, /*use_beam_search=*/true);
}
}  // namespace detail

std::vector<int32_t> sample(TransformerImpl& model, const std::vector<int32_t>& prompt, const SampleOptions& o) {
  const auto& cfg = model.config();
  if (cfg.arch != Arch::Decoder)
    throw InputError("sampling needs a decoder-only model, but model.arch is " + to_string(cfg.arch));
  if (!(o.temperature >= 0)) throw InputError("temperature must be non-negative, got " + std::to_string(o.temperature));
  if (o.top_k < 0) throw InputError("top_k must be non-negative, got " + std::to_string(o.top_k));
  if (o.max_new_tokens < 0)
    throw InputError("max_new_tokens must be non-negative, got " + std::to_string(o.max_new_tokens));
  const int64_t V = cfg.vocab_size;
  check_id(o.bos_id, V, "bos_id");
  check_id(o.eos_id, V, "eos_id");
  check_ids(prompt, V, "prompt");
  const int64_t P = static_cast<int64_t>(prompt.size()) + 1;
  if (P > cfg.max_len)
    throw InputError("prompt of " + std::to_string(prompt.size()) +
                     " tokens plus bos exceeds model.max_len = " + std::to_string(cfg.max_len));

  EvalScope scope(model);
  const auto dev = device_of(model);
  auto gen = at::detail::createCPUGenerator(o.seed);  // own generator: the global one is untouched
  std::vector<int64_t> ids{o.bos_id};
  for (int32_t t : prompt) ids.push_back(t);
  // bos + prompt + output fit in max_len positions.
  const int64_t n_new = std::min(o.max_new_tokens, cfg.max_len - P);
  std::vector<int32_t> out;
  DecoderCache cache;
  auto x = torch::tensor(ids, torch::kInt64).unsqueeze(0).to(dev);  // bos + prompt first, then one token a step
  for (int64_t step = 0; step < n_new; ++step) {
    auto h = model.decoder->step(x, {}, {}, cache);
    auto logits = model.project(h.select(1, h.size(1) - 1))[0].to(torch::kCPU, torch::kFloat64);
    logits[o.bos_id] = kNegInf;
    if (cfg.pad_id >= 0 && cfg.pad_id != o.eos_id) logits[cfg.pad_id] = kNegInf;
    int64_t tok;
    if (o.temperature == 0) {
      tok = logits.argmax().item<int64_t>();
    } else {
      auto scaled = logits / o.temperature;
      if (o.top_k > 0 && o.top_k < V) {  // keep exactly the k largest logits
        auto keep = std::get<1>(scaled.topk(o.top_k));
        auto masked = torch::full_like(scaled, kNegInf);
        masked.index_put_({keep}, scaled.index({keep}));
        scaled = masked;
      }
      auto probs = torch::softmax(scaled, -1);
      tok = torch::multinomial(probs, 1, /*replacement=*/false, gen).item<int64_t>();
    }
    if (tok == o.eos_id) break;
    out.push_back(static_cast<int32_t>(tok));
    x = torch::full({1, 1}, tok, torch::dtype(torch::kInt64).device(dev));
  }
  return out;
}

}  // namespace stx
