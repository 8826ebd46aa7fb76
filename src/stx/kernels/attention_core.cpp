#include "stx/kernels/attention_core.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "stx/kernels/band_gemm.h"
#include "stx/kernels/blas.h"
#include "stx/kernels/kernels.h"
#include "stx/kernels/none_tensor.h"
#include "stx/kernels/softcap_rows.h"
#include "stx/kernels/softmax_rows.h"

namespace stx {

bool attention_core_available(const torch::Tensor& q) {
#ifdef STX_HAVE_BLAS
  return q.device().is_cpu() && (q.scalar_type() == torch::kFloat || q.scalar_type() == torch::kDouble);
#else
  return false;
#endif
}

#ifdef STX_HAVE_BLAS
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

using blas::gemm;

// Per-thread scratch that outlives a call: the core runs once per layer and pass, and allocating
// its few KB each time was 0.9 % of a 1,000-layer step in glibc's malloc (slot 0: packed B,
// 1: one head's dropout-scaled probabilities, 2: one row of shifted scores).
template <typename T>
std::vector<T>& scratch(int slot) {
  thread_local std::vector<T> buffers[3];
  return buffers[slot];
}

template <typename T>
T* scratch_of(int slot, int64_t n) {
  auto& b = scratch<T>(slot);
  if (b.size() < static_cast<size_t>(n)) b.resize(static_cast<size_t>(n));
  return b.data();
}

// A head's products, by stx's band kernel (band_gemm.h: the causal band only) or one dense BLAS
// call each (kernels.h: head_products()). Row-major operands; `pack` is the band kernel's
// packed B, reused from product to product.
template <typename T>
struct HeadProductsOf {
  bool own = head_products() == HeadProducts::Band;
  std::vector<T>& pack = scratch<T>(0);

  T* packed(int64_t k, int64_t n) {
    const auto size = static_cast<size_t>(k * band::padded_cols(n, sizeof(T) == 8));
    if (pack.size() < size) pack.resize(size);
    return pack.data();
  }
  // C [m × n] = α A Bᵀ, B [n × k] (Q Kᵀ, dO Vᵀ); causal: only j ≤ i with the band kernel, C[i, j > i]
  // left as it was (the softmax and its backward mask those entries; zeroing them was 1.3 % of a
  // d64 step).
  void a_bt(bool causal, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b, int64_t ldb,
            T* c, int64_t ldc) {
    if (!own) return gemm(false, true, m, n, k, alpha, a, lda, b, ldb, T(0), c, ldc);
    T* bp = packed(k, n);
    band::pack_bt(k, n, b, ldb, bp);
    band::band_gemm(causal ? band::Band::kCausalScores : band::Band::kFull, m, n, k, alpha, a, lda, 1, bp,
                    band::padded_cols(n, sizeof(T) == 8), T(0), c, ldc);
  }
  // C [m × n] = α A B, A [m × k], B [k × n] (P V, dS K); lower: A is zero above its diagonal.
  void a_b(bool lower, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b, int64_t ldb, T* c,
           int64_t ldc) {
    if (!own) return gemm(false, false, m, n, k, alpha, a, lda, b, ldb, T(0), c, ldc);
    in_place_b(k, n, b, ldb);
    band::band_gemm(lower ? band::Band::kPUpTo : band::Band::kFull, m, n, k, alpha, a, lda, 1, b, ldb, T(0), c, ldc);
  }
  // C [m × n] = α Aᵀ B, A [k × m], B [k × n] (Pᵀ dO, dSᵀ Q); lower: A is zero above its diagonal.
  void at_b(bool lower, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b, int64_t ldb,
            T* c, int64_t ldc) {
    if (!own) return gemm(true, false, m, n, k, alpha, a, lda, b, ldb, T(0), c, ldc);
    in_place_b(k, n, b, ldb);
    band::band_gemm(lower ? band::Band::kPFrom : band::Band::kFull, m, n, k, alpha, a, 1, lda, b, ldb, T(0), c, ldc);
  }
  // B as the band kernel reads it: in place when d_head is whole vectors, else packed.
  void in_place_b(int64_t k, int64_t n, const T*& b, int64_t& ldb) {
    const int64_t ldp = band::padded_cols(n, sizeof(T) == 8);
    if (ldp == n) return;
    T* bp = packed(k, n);
    band::pack_b(k, n, b, ldb, bp);
    b = bp, ldb = ldp;
  }
};

// Where head h of batch row b lives in a [B, T, ·] tensor: element (b, t, h·d_h + c) is at
// ptr + b·batch + t·ld + h·d_h + c.
template <typename T>
struct Heads {
  T* ptr;
  int64_t ld, batch, d_head;
  T* at(int64_t b, int64_t h) const { return ptr + b * batch + h * d_head; }
};

template <typename T>
Heads<T> heads_of(const torch::Tensor& t, int64_t offset, int64_t d_head) {
  return {t.data_ptr<T>() + offset, t.stride(1), t.stride(0), d_head};
}

// The heads of q, k and v: three tensors, or (packed) the column blocks 0, d, 2d of one
// [B, T, 3d] tensor. Used for the inputs and, with the same layout, for their gradients.
template <typename T>
struct QKVHeads {
  Heads<T> q, k, v;
};

template <typename T>
QKVHeads<T> qkv_heads(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, bool packed, int64_t d,
                      int64_t d_head) {
  if (packed) return {heads_of<T>(q, 0, d_head), heads_of<T>(q, d, d_head), heads_of<T>(q, 2 * d, d_head)};
  return {heads_of<T>(q, 0, d_head), heads_of<T>(k, 0, d_head), heads_of<T>(v, 0, d_head)};
}

// A [B, T, n] tensor the kernels can address in place: unit stride along features.
torch::Tensor addressable(const torch::Tensor& t) { return t.stride(2) == 1 ? t : t.contiguous(); }

// f(b, h) for every head of every batch row, in order. (Running heads on LibTorch's threads,
// each gemm then one single-threaded BLAS call, measured no faster at d512 × 8 heads, with
// OpenBLAS, which splits each product over both cores itself, and with MKL: docs/performance.md.)
template <typename F>
void each_head(int64_t B, int64_t H, const F& f) {
  for (int64_t i = 0; i < B * H; ++i) f(i / H, i % H);
}

// The forward pass on addressable q, k, v (packed: k, v undefined): returns out [B, Tq, d] and
// fills `saved` (P, the dropout noise, the blind rows; soft-capped at c = saved.softcap > 0: tanh(S/c)).
torch::Tensor core_forward(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                           torch::Tensor key_pad, int64_t heads, bool causal, double p, AttentionCoreSaved& saved) {
  const double cap = saved.softcap;
  const bool packed = !k.defined();
  const auto& kv = packed ? q : k;
  const int64_t B = q.size(0), Tq = q.size(1), Tk = kv.size(1);
  const int64_t d = packed ? q.size(2) / 3 : q.size(2), dh = d / heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  torch::Tensor keep, key_bias;  // [B, Tk]: 1 / 0 and 0 / −inf at visible / padded keys
  if (key_pad.defined() && !key_pad.any().item<bool>()) key_pad = torch::Tensor();  // nothing padded
  if (key_pad.defined()) {
    const auto pad = key_pad.to(torch::kBool);
    keep = pad.logical_not().to(q.scalar_type()).contiguous();
    key_bias = torch::zeros_like(keep).masked_fill_(pad, -std::numeric_limits<double>::infinity());
  }

  auto S = torch::empty({B, heads, Tq, Tk}, q.options());
  auto out = torch::empty({B, Tq, d}, q.options());
  torch::Tensor noise, capped = cap > 0 ? torch::empty_like(S) : torch::Tensor();
  std::vector<std::vector<int64_t>> blind_of(B * heads);  // per head, merged in order below
  AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "attention_core", [&] {
    using T = scalar_t;
    const auto in = qkv_heads<T>(q, k, v, packed, d, dh);
    const auto Q = in.q, K = in.k, V = in.v, O = heads_of<T>(out, 0, dh);
    T* s = S.data_ptr<T>();
    const T* kp = keep.defined() ? keep.data_ptr<T>() : nullptr;
    const T* bp = keep.defined() ? key_bias.data_ptr<T>() : nullptr;
    HeadProductsOf<T> mul;
    // P (and D) is zero above its diagonal when causal, except in a blind row (uniform): then dense.
    auto lower = [&](int64_t head) { return causal && blind_of[head].empty(); };
    // The dropout mask as torch::dropout draws it after the softmax (same generator calls, same
    // mask: nothing between draws), here before the heads, so that each head goes S → P → D → out
    // while its scores are in cache (D = P ∘ mask/(1 − p) in a per-head buffer; a whole-tensor
    // S * noise was 6 MB written and read back at d64 × 24).
    const T* np = nullptr;
    if (p > 0) {
      noise = torch::empty_like(S).bernoulli_(1 - p);
      noise.div_(1 - p);
      np = noise.data_ptr<T>();
    }
    T* shifted = kp ? scratch_of<T>(2, Tk) : nullptr;
    T* dropped = np ? scratch_of<T>(1, Tq * Tk) : nullptr;
    each_head(B, heads, [&](int64_t b, int64_t h) {
      const int64_t head = b * heads + h, off = head * Tq * Tk;
      T* sh = s + off;
      mul.a_bt(causal, Tq, Tk, dh, T(scale), Q.at(b, h), Q.ld, K.at(b, h), K.ld, sh, Tk);  // q_h k_hᵀ/√d_h
      if (cap > 0) softcap_head<T>(sh, capped.data_ptr<T>() + off, Tq, Tk, causal, T(cap));
      softmax_head<T>(sh, Tq, Tk, causal, kp ? kp + b * Tk : nullptr, bp ? bp + b * Tk : nullptr, shifted, head * Tq,
                      blind_of[head]);
      const T* ph = sh;
      if (np) {
        for (int64_t j = 0; j < Tq * Tk; ++j) dropped[j] = sh[j] * np[off + j];
        ph = dropped;
      }
      mul.a_b(lower(head), Tq, dh, Tk, T(1), ph, Tk, V.at(b, h), V.ld, O.at(b, h), O.ld);  // P v_h, or D v_h
    });
  });
  std::vector<int64_t> blind;
  for (const auto& v : blind_of) blind.insert(blind.end(), v.begin(), v.end());
  saved.probs = S;
  saved.noise = noise;
  saved.capped = capped;
  saved.blind = torch::tensor(blind, torch::kLong);
  return out;
}

// The backward pass: dq (and dk, dv unless packed) from dout, with the state of core_forward.
void core_backward(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                   const AttentionCoreSaved& saved, int64_t heads, bool causal, const torch::Tensor& dout_in,
                   torch::Tensor& dq, torch::Tensor& dk, torch::Tensor& dv) {
  const auto& P = saved.probs;
  const auto& noise = saved.noise;
  const bool packed = !k.defined();
  const auto& kv = packed ? q : k;
  const int64_t B = q.size(0), Tq = q.size(1), Tk = kv.size(1);
  const int64_t d = packed ? q.size(2) / 3 : q.size(2), dh = d / heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  const auto dout = dout_in.contiguous();

  dq = torch::empty_like(q, at::MemoryFormat::Contiguous);
  if (!packed)
    dk = torch::empty_like(k, at::MemoryFormat::Contiguous), dv = torch::empty_like(v, at::MemoryFormat::Contiguous);
  auto dD = torch::empty_like(P);
  const auto& blind = saved.blind;  // sorted row indices
  const int64_t* blind_begin = blind.data_ptr<int64_t>();
  const int64_t* blind_end = blind_begin + blind.numel();
  AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "attention_core_backward", [&] {
    using T = scalar_t;
    const auto in = qkv_heads<T>(q, k, v, packed, d, dh), grad = qkv_heads<T>(dq, dk, dv, packed, d, dh);
    const auto Q = in.q, K = in.k, V = in.v, dQ = grad.q, dK = grad.k, dV = grad.v;
    const auto dO = heads_of<T>(dout, 0, dh);
    const T* pp = P.data_ptr<T>();
    const T* np = noise.defined() ? noise.data_ptr<T>() : nullptr;
    T* ddp = dD.data_ptr<T>();
    const T* tp = saved.capped.defined() ? saved.capped.data_ptr<T>() : nullptr;  // tanh(S/c)
    HeadProductsOf<T> mul;
    T* dropped = np ? scratch_of<T>(1, Tq * Tk) : nullptr;  // one head's D = P ∘ mask/(1 − p)
    each_head(B, heads, [&](int64_t b, int64_t h) {
      const int64_t head = b * heads + h, off = head * Tq * Tk, n = Tq * Tk;
      const T* Dh = pp + off;
      if (np) {
        for (int64_t j = 0; j < n; ++j) dropped[j] = pp[off + j] * np[off + j];
        Dh = dropped;
      }
      T* g = ddp + off;
      const int64_t row0 = head * Tq;
      const int64_t* blind_lo = std::lower_bound(blind_begin, blind_end, row0);
      const int64_t* blind_hi = std::lower_bound(blind_begin, blind_end, row0 + Tq);
      // D is zero above its diagonal when causal, unless a blind row is uniform; dS always is.
      const bool lower_d = causal && blind_lo == blind_hi;
      mul.a_bt(causal, Tq, Tk, dh, T(1), dO.at(b, h), dO.ld, V.at(b, h), V.ld, g, Tk);      // dD
      mul.at_b(lower_d, Tk, dh, Tq, T(1), Dh, Tk, dO.at(b, h), dO.ld, dV.at(b, h), dV.ld);  // dv
      if (np)
        for (int64_t j = 0; j < n; ++j) g[j] *= np[off + j];                                // dP
      softmax_backward_head<T>(g, pp + off, Tq, Tk, causal, blind_lo, blind_hi, row0);      // dS
      if (tp) softcap_backward_head<T>(g, tp + off, Tq, Tk, causal);                        // of the raw S
      mul.a_b(causal, Tq, dh, Tk, T(scale), g, Tk, K.at(b, h), K.ld, dQ.at(b, h), dQ.ld);   // dq
      mul.at_b(causal, Tk, dh, Tq, T(scale), g, Tk, Q.at(b, h), Q.ld, dK.at(b, h), dK.ld);  // dk
    });
  });
}

class AttentionCoreFn : public torch::autograd::Function<AttentionCoreFn> {
 public:
  // Packed (self-attention on [B, T, 3d]): k and v travel as [0] tensors.
  static variable_list forward(AutogradContext* ctx, torch::Tensor q, torch::Tensor k, torch::Tensor v,
                               torch::Tensor key_pad, int64_t heads, bool causal, double p, double softcap) {
    k = unpack_none(k), v = unpack_none(v);
    q = addressable(q);
    if (k.defined()) k = addressable(k), v = addressable(v);
    AttentionCoreSaved saved;
    saved.softcap = softcap;
    auto out = core_forward(q, k, v, unpack_none(key_pad), heads, causal, p, saved);
    ctx->save_for_backward(
        {q, pack_none(k), pack_none(v), saved.probs, pack_none(saved.noise), pack_none(saved.capped)});
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["blind"] = saved.blind;
    ctx->saved_data["causal"] = causal;
    ctx->mark_non_differentiable({saved.probs});
    return {out, saved.probs};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    const auto s = ctx->get_saved_variables();
    const auto k = unpack_none(s[1]), v = unpack_none(s[2]);
    const AttentionCoreSaved saved{s[3], unpack_none(s[4]), ctx->saved_data["blind"].toTensor(), unpack_none(s[5])};
    torch::Tensor dq, dk, dv;
    core_backward(s[0], k, v, saved, ctx->saved_data["heads"].toInt(), ctx->saved_data["causal"].toBool(), grad_out[0],
                  dq, dk, dv);
    return {dq, dk, dv, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor attention_core_packed_forward(const torch::Tensor& qkv, const torch::Tensor& key_pad, int64_t heads,
                                            bool causal, double dropout, AttentionCoreSaved& saved, double softcap) {
  saved.softcap = softcap;
  return core_forward(addressable(qkv), {}, {}, key_pad, heads, causal, dropout, saved);
}

torch::Tensor attention_core_forward(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                     const torch::Tensor& key_pad, int64_t heads, bool causal, double dropout,
                                     AttentionCoreSaved& saved, double softcap) {
  saved.softcap = softcap;
  return core_forward(addressable(q), addressable(k), addressable(v), key_pad, heads, causal, dropout, saved);
}

void attention_core_backward(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             const AttentionCoreSaved& saved, int64_t heads, bool causal, const torch::Tensor& dout,
                             torch::Tensor& dq, torch::Tensor& dk, torch::Tensor& dv) {
  core_backward(addressable(q), addressable(k), addressable(v), saved, heads, causal, dout, dq, dk, dv);
}

torch::Tensor attention_core_packed_backward(const torch::Tensor& qkv, const AttentionCoreSaved& saved, int64_t heads,
                                             bool causal, const torch::Tensor& dout) {
  torch::Tensor dq, dk, dv;
  core_backward(addressable(qkv), {}, {}, saved, heads, causal, dout, dq, dk, dv);
  return dq;
}

torch::Tensor attention_core(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             const torch::Tensor& key_pad, int64_t heads, bool causal, double dropout,
                             torch::Tensor* probs, double softcap) {
  auto r = AttentionCoreFn::apply(q, k, v, pack_none(key_pad), heads, causal, dropout, softcap);
  if (probs) *probs = r[1];
  return r[0];
}

torch::Tensor attention_core_packed(const torch::Tensor& qkv, const torch::Tensor& key_pad, int64_t heads, bool causal,
                                    double dropout, torch::Tensor* probs, double softcap) {
  auto r =
      AttentionCoreFn::apply(qkv, none_tensor(), none_tensor(), pack_none(key_pad), heads, causal, dropout, softcap);
  if (probs) *probs = r[1];
  return r[0];
}

#else  // no BLAS: attention_core_available() is false and AttentionImpl keeps the reference path

torch::Tensor attention_core(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&, const torch::Tensor&,
                             int64_t, bool, double, torch::Tensor*, double) {
  TORCH_CHECK(false, "attention_core: stx was built without BLAS (kernels/blas.h)");
}
torch::Tensor attention_core_packed(const torch::Tensor&, const torch::Tensor&, int64_t, bool, double, torch::Tensor*,
                                    double) {
  TORCH_CHECK(false, "attention_core_packed: stx was built without BLAS (kernels/blas.h)");
}
torch::Tensor attention_core_packed_forward(const torch::Tensor&, const torch::Tensor&, int64_t, bool, double,
                                            AttentionCoreSaved&, double) {
  TORCH_CHECK(false, "attention_core_packed_forward: stx was built without BLAS (kernels/blas.h)");
}
torch::Tensor attention_core_forward(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&,
                                     const torch::Tensor&, int64_t, bool, double, AttentionCoreSaved&, double) {
  TORCH_CHECK(false, "attention_core_forward: stx was built without BLAS (kernels/blas.h)");
}
void attention_core_backward(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&,
                             const AttentionCoreSaved&, int64_t, bool, const torch::Tensor&, torch::Tensor&,
                             torch::Tensor&, torch::Tensor&) {
  TORCH_CHECK(false, "attention_core_backward: stx was built without BLAS (kernels/blas.h)");
}
torch::Tensor attention_core_packed_backward(const torch::Tensor&, const AttentionCoreSaved&, int64_t, bool,
                                             const torch::Tensor&) {
  TORCH_CHECK(false, "attention_core_packed_backward: stx was built without BLAS (kernels/blas.h)");
}

#endif

}  // namespace stx
