// stx/bench/flops.cpp — see flops.h. Counting (2 FLOPs per multiply-add, matrix products only):
//
//   Linear d_in→d_out on R rows, y = x Wᵀ:
//     forward  y  = x·Wᵀ     R×d_out×d_in         2·R·d_in·d_out
//     backward dx = dy·W     R×d_in×d_out         2·R·d_in·d_out
//              dW = dyᵀ·x    d_out×d_in×R         2·R·d_in·d_out      → 6·R·d_in·d_out
//   Attention core, B·H heads, Tq queries, Tk keys, head width d_h = d/H:
//     forward  S = Q·Kᵀ, O = P·V;  backward dP = dO·Vᵀ, dV = Pᵀ·dO, dQ = dS·K, dK = dSᵀ·Q
//     6 batched products of 2·B·H·Tq·Tk·d_h each                          → 12·B·Tq·Tk·d
//     (the causal mask is applied to full T×T scores, so no halving.)
//   One layer on R = B·T rows: q,k,v,out projections 4·(6·R·d²), FFN 6·R·d·d_ff·2,
//     self-attention 12·B·T²·d; cross-attention (decoder with an encoder) adds q,out on the
//     decoder rows, k,v on the memory rows and 12·B·T·S·d.
//   Output projection (tied h·Eᵀ or untied): 6·R·d·V.
// So a decoder-only step is 3·[L·R·(8d² + 4·d·d_ff + 4·T·d) + 2·R·d·V] — the "6·params·tokens"
// rule plus the attention scores. Not counted: elementwise work (norms, softmax, dropout,
// activation, residual adds, the loss, the optimizer: O(R·d) or O(params) each), the embedding
// gather, and σReparam's power-iteration matrix–vector products.
#include "stx/bench/flops.h"

#include <map>
#include <tuple>

namespace stx::bench {

namespace {

class Builder {
 public:
  void add(const std::string& what, int64_t batch, int64_t m, int64_t n, int64_t k, bool ta, bool tb, int64_t count) {
    auto key = std::make_tuple(batch, m, n, k, ta, tb);
    auto it = index_.find(key);
    if (it != index_.end()) {  // the same product under another role: one entry, both names
      auto& g = out_[it->second];
      g.count += count;
      if (g.what.find(what) == std::string::npos) g.what += " + " + what;
      return;
    }
    index_[key] = out_.size();
    out_.push_back(Gemm{what, batch, m, n, k, ta, tb, count});
  }
  // y = x Wᵀ on R rows: forward, input gradient, weight gradient.
  void linear(int64_t rows, int64_t d_in, int64_t d_out, int64_t count) {
    const auto name = "linear " + std::to_string(d_in) + "->" + std::to_string(d_out);
    add(name + " fwd", 1, rows, d_out, d_in, false, true, count);
    add(name + " dx", 1, rows, d_in, d_out, false, false, count);
    add(name + " dW", 1, d_out, d_in, rows, true, false, count);
  }
  // softmax(Q Kᵀ/√d_h)·V for `bh` heads: two forward and four backward batched products.
  void attention(int64_t bh, int64_t tq, int64_t tk, int64_t dh, int64_t count) {
    add("attn Q.K^T fwd", bh, tq, tk, dh, false, true, count);
    add("attn P.V fwd", bh, tq, dh, tk, false, false, count);
    add("attn dO.V^T", bh, tq, tk, dh, false, true, count);
    add("attn P^T.dO", bh, tk, dh, tq, true, false, count);
    add("attn dS.K", bh, tq, dh, tk, false, false, count);
    add("attn dS^T.Q", bh, tk, dh, tq, true, false, count);
  }
  std::vector<Gemm> take() { return std::move(out_); }

 private:
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, bool, bool>, size_t> index_;
  std::vector<Gemm> out_;
};

}  // namespace

std::vector<Gemm> step_gemms(const ModelConfig& c, int64_t B, int64_t T) {
  Builder b;
  const int64_t d = c.d_model, R = B * T, bh = B * c.n_heads, dh = c.d_model / c.n_heads;
  auto layers = [&](int64_t L, bool cross) {
    if (L <= 0) return;
    b.linear(R, d, d, 4 * L);  // q, k, v, out (self-attention)
    b.attention(bh, T, T, dh, L);
    if (cross) {  // q/out on the decoder rows, k/v on the memory rows (also R = B·T here)
      b.linear(R, d, d, 4 * L);
      b.attention(bh, T, T, dh, L);
    }
    b.linear(R, d, c.d_ff, L);  // fc1
    b.linear(R, c.d_ff, d, L);  // fc2
  };
  if (c.has_encoder()) layers(c.encoder_layers, false);
  if (c.has_decoder()) layers(c.decoder_layers, c.arch == Arch::EncoderDecoder);
  b.linear(R, d, c.vocab_size, 1);  // output projection (tied or not)
  return b.take();
}

double total_flops(const std::vector<Gemm>& gemms) {
  double s = 0;
  for (const auto& g : gemms) s += g.flops();
  return s;
}

double decoder_step_flops(const ModelConfig& c, int64_t B, int64_t T) {
  const double d = static_cast<double>(c.d_model), ff = static_cast<double>(c.d_ff), R = static_cast<double>(B * T);
  const double L = static_cast<double>(c.decoder_layers), V = static_cast<double>(c.vocab_size);
  return 3.0 * (L * R * (8 * d * d + 4 * d * ff + 4 * static_cast<double>(T) * d) + 2 * R * d * V);
}

}  // namespace stx::bench
