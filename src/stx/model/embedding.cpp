#include "stx/model/embedding.h"

#include <cmath>

#include "stx/core/error.h"
#include "stx/kernels/direct_grads.h"
#include "stx/kernels/dropout.h"
#include "stx/kernels/embedding_rows.h"
#include "stx/kernels/kernels.h"

namespace stx {

using torch::indexing::Slice;

torch::Tensor sinusoidal_positions(int64_t T, int64_t d) {
  auto p = torch::arange(T, torch::kFloat64).unsqueeze(1);               // [T, 1]
  auto two_i = torch::arange(0, d, 2, torch::kFloat64);                  // 2i
  auto angle = p / torch::pow(10000.0, two_i / static_cast<double>(d));  // [T, ⌈d/2⌉]
  auto P = torch::zeros({T, d}, torch::kFloat64);
  P.index_put_({Slice(), Slice(0, d, 2)}, torch::sin(angle));
  P.index_put_({Slice(), Slice(1, d, 2)}, torch::cos(angle).index({Slice(), Slice(0, d / 2)}));
  return P.to(torch::kFloat32);
}

Embedder::Embedder(const ModelConfig& cfg)
    : scale_(cfg.embed_scale ? std::sqrt(static_cast<double>(cfg.d_model)) : 1.0),
      positions_(cfg.positions),
      dropout_(cfg.dropout),
      max_len_(cfg.max_len) {
  if (positions_ == Positions::Sinusoidal) sinusoid_ = sinusoidal_positions(cfg.max_len, cfg.d_model);
}

torch::Tensor Embedder::operator()(const torch::Tensor& tokens, const torch::Tensor& E, const torch::Tensor& P,
                                   bool training, int64_t offset) {
  const int64_t T = tokens.size(1);
  if (offset + T > max_len_)
    throw InputError("sequence length " + std::to_string(offset + T) +
                     " exceeds model.max_len = " + std::to_string(max_len_));
  torch::Tensor x;
  const auto g = kernels() == Kernels::Fused && E.device().is_cpu() &&
                         (E.scalar_type() == torch::kFloat || E.scalar_type() == torch::kDouble)
                     ? direct_grad_targets(E, {E})
                     : std::vector<torch::Tensor>{};
  if (!g.empty()) {
    x = embedding_rows(E, tokens, scale_, g[0]);  // E.grad() + Σ s·dx per token (kernels/embedding_rows.h)
  } else {
    x = torch::embedding(E, tokens);
    if (scale_ != 1.0) x = x * scale_;
  }
  if (positions_ == Positions::Learned) x = x + P.index({Slice(offset, offset + T)});
  if (positions_ == Positions::Sinusoidal) {
    if (sinusoid_.device() != x.device() || sinusoid_.scalar_type() != x.scalar_type())
      sinusoid_ = sinusoid_.to(x.device(), x.scalar_type());
    x = x + sinusoid_.index({Slice(offset, offset + T)});
  }
  return stx::dropout(x, dropout_, training);
}

}  // namespace stx
