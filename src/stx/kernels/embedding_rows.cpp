// stx/kernels/embedding_rows.cpp — see embedding_rows.h.
#include "stx/kernels/embedding_rows.h"

#include <algorithm>
#include <numeric>
#include <vector>

namespace stx {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class EmbeddingRows : public torch::autograd::Function<EmbeddingRows> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& E, const torch::Tensor& tokens, double scale,
                               torch::Tensor grad) {
    const auto tok = tokens.contiguous();
    auto x = E.index_select(0, tok.view(-1));
    if (scale != 1.0) x.mul_(scale);  // as torch::embedding(E, tok) * scale
    ctx->save_for_backward({tok});
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["grad"] = grad;
    auto sizes = tok.sizes().vec();
    sizes.push_back(E.size(1));
    return x.view(sizes);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    const auto tok = ctx->get_saved_variables()[0].view(-1);
    const double scale = ctx->saved_data["scale"].toDouble();
    auto g = ctx->saved_data["grad"].toTensor();
    const int64_t N = tok.numel(), d = g.size(1);
    auto dx = grad_out[0].reshape({N, d});
    if (scale != 1.0) dx = dx * scale;  // MulBackward's grad · s
    dx = dx.contiguous();
    const int64_t* t = tok.data_ptr<int64_t>();
    std::vector<int64_t> order(static_cast<size_t>(N));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return t[a] < t[b]; });
    AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "embedding_rows_backward", [&] {
      using T = scalar_t;
      const T* dp = dx.data_ptr<T>();
      T* gp = g.data_ptr<T>();
      std::vector<T> sum(static_cast<size_t>(d));
      for (size_t i = 0; i < order.size();) {  // one token's rows: Σ in n order from zero, then .grad() + Σ
        const int64_t row = t[order[i]];
        std::fill(sum.begin(), sum.end(), T(0));
        for (; i < order.size() && t[order[i]] == row; ++i)
          for (int64_t j = 0; j < d; ++j) sum[j] += dp[order[i] * d + j];
        for (int64_t j = 0; j < d; ++j) gp[row * d + j] += sum[j];
      }
    });
    return {torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor embedding_rows(const torch::Tensor& E, const torch::Tensor& tokens, double scale,
                             const torch::Tensor& grad) {
  return EmbeddingRows::apply(E, tokens, scale, grad);
}

}  // namespace stx
