// stx/kernels/fused_linear.h — what the fused sub-layer nodes (fused_sublayer.cpp,
// fused_cross_attention.cpp) share: their products (stx's band kernel or BLAS), a linear layer's
// forward and gradients, and their direct gradient targets across the node (direct_grads.h).
// Only for translation units built with BLAS (STX_HAVE_BLAS); in an unnamed namespace, each
// including file gets its own copy.
#pragma once
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <vector>

#include "stx/kernels/band_gemm.h"
#include "stx/kernels/blas.h"
#include "stx/kernels/column_sums.h"
#include "stx/kernels/direct_grads.h"
#include "stx/kernels/fused_join.h"
#include "stx/kernels/kernels.h"

#ifdef STX_HAVE_BLAS
namespace stx {
namespace {

using torch::autograd::variable_list;

template <typename T>
T* ptr(const torch::Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

constexpr int64_t kRowGrain = 16384;  // elements per parallel_for chunk, as residual_norm.cpp

// The sub-layer's products: stx's band kernel (band_gemm.h) for small products on one thread,
// where it skips BLAS's packing of A and its β = 0 pass over C; else BLAS, whose cache blocking
// and threads win on large ones (docs/performance.md). kernels.h: head_products() switches.
inline bool on_band(int64_t m, int64_t n, int64_t k) {
  return head_products() == HeadProducts::Band && at::get_num_threads() == 1 && k <= 256 && m * n * k <= (1 << 24);
}

template <typename T>
void product(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
             int64_t ldb, T beta, T* c, int64_t ldc) {
  if (on_band(m, n, k)) band::gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  else blas::gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// y [N, out] = x [N, in] · Wᵀ + b (b null: none). On the band kernel the bias is added as each
// tile is stored; on BLAS it is written first and the product added to it, as addmm does. The
// sum is acc + b either way.
template <typename T>
void linear_forward(const T* x, int64_t N, int64_t in, const T* W, const T* b, int64_t out, T* y) {
  if (on_band(N, out, in)) return band::gemm(false, true, N, out, in, T(1), x, in, W, in, T(0), y, out, b);
  if (b)
    for (int64_t n = 0; n < N; ++n) std::copy(b, b + out, y + n * out);
  blas::gemm(false, true, N, out, in, T(1), x, in, W, in, b ? T(1) : T(0), y, out);
}

// y = linear(x) over [N, in] rows, as a new [N, out] tensor.
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& W, const torch::Tensor& b) {
  const int64_t in = W.size(1), out = W.size(0), N = x.numel() / in;
  auto y = torch::empty({N, out}, x.options());
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "fused_linear", [&] {
    using T = scalar_t;
    linear_forward<T>(x.data_ptr<T>(), N, in, W.data_ptr<T>(), ptr<T>(b), out, y.data_ptr<T>());
  });
  return y;
}

// Gradients of y = linear(x) for dy [N, out]: dW = dyᵀ x and db = Σ dy (when has_bias) as new
// tensors or added to `into`; dx = dy·W written to `dx` (beta 0) or added to it (beta 1); dx
// undefined: not computed.
void linear_grad(const torch::Tensor& dy, const torch::Tensor& x, const torch::Tensor& W, bool has_bias,
                 torch::Tensor& dW, torch::Tensor& db, torch::Tensor* dx, bool accumulate, const GradsInto& into) {
  const int64_t in = W.size(1), out = W.size(0), N = x.numel() / in;
  const bool direct = !into.w.empty();
  if (!direct) dW = torch::empty_like(W);
  if (!direct && has_bias) db = torch::empty({out}, W.options());
  if (dx && !accumulate) *dx = torch::empty({N, in}, x.options());
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "fused_linear_backward", [&] {
    using T = scalar_t;
    const T *dyp = dy.data_ptr<T>(), *xp = x.data_ptr<T>();
    if (direct) {  // g += dyᵀ x block by block, g_b += Σ dy
      const auto parts = static_cast<int64_t>(into.w.size());
      const int64_t rows = out / parts;
      // On the band kernel β = 1: its tile stores acc + g, AccumulateGrad's g + dW to the bit.
      // BLAS may sum in another order for β = 1 or for a part of the rows (OpenBLAS's small-matrix
      // kernels): there the product is autograd's, into scratch, and g + dW is added as before.
      const bool band = on_band(out, in, N);
      T* scratch = nullptr;
      if (!band) {
        dW = torch::empty_like(W);
        scratch = dW.data_ptr<T>();
        product(true, false, out, in, N, T(1), dyp, out, xp, in, T(0), scratch, in);
      }
      for (int64_t i = 0; i < parts; ++i) {
        T* g = into.w[i].data_ptr<T>();
        if (band) product(true, false, rows, in, N, T(1), dyp + i * rows, out, xp, in, T(1), g, in);
        else
          for (int64_t e = 0; e < rows * in; ++e) g[e] += scratch[i * rows * in + e];
        if (has_bias) column_sums<T>(dyp + i * rows, nullptr, N, rows, into.b[i].data_ptr<T>(), nullptr, out, true);
      }
      dW = torch::Tensor();
    } else {
      product(true, false, out, in, N, T(1), dyp, out, xp, in, T(0), dW.data_ptr<T>(), in);
      if (has_bias) column_sums<T>(dyp, nullptr, N, out, db.data_ptr<T>(), nullptr);
    }
    if (dx)
      product(false, false, N, in, out, T(1), dyp, out, W.data_ptr<T>(), in, accumulate ? T(1) : T(0),
              dx->data_ptr<T>(), in);
  });
}

// The parts of the direct targets g (direct_grads.h) that one product's gradients go into.
GradsInto into(const std::vector<torch::Tensor>& g, std::initializer_list<size_t> w, std::initializer_list<size_t> b) {
  GradsInto r;
  if (g.empty()) return r;
  for (size_t i : w) r.w.push_back(g[i]);
  for (size_t i : b)
    if (g[i].defined()) r.b.push_back(g[i]);
  return r;
}

}  // namespace
}  // namespace stx
#endif
