// stx/model/embedding.h — x₀ = E[tok] · (√d if embed_scale) + P[pos], then dropout.
// Sinusoidal P[p, 2i] = sin(p / 10000^(2i/d)), P[p, 2i+1] = cos(p / 10000^(2i/d)) (Vaswani et
// al. 2017), learned P (embed_positions.weight), or none.
#pragma once
#include <torch/torch.h>

#include "stx/config/config.h"

namespace stx {

// The sinusoidal table [T, d] (float64 computation, returned as float32).
torch::Tensor sinusoidal_positions(int64_t T, int64_t d);

// A named weight matrix (embed_tokens, embed_positions, output_projection without σReparam).
class TableImpl : public torch::nn::Module {
 public:
  TableImpl(int64_t rows, int64_t cols) { weight = register_parameter("weight", torch::empty({rows, cols})); }
  torch::Tensor weight;
};
TORCH_MODULE(Table);

// Computes x₀ from tokens with the given tables (positions may be undefined). Not a module:
// the stack owns the tables so that their names are {stack}.embed_tokens.weight etc.
class Embedder {
 public:
  explicit Embedder(const ModelConfig& cfg);
  // offset: position of tokens[:, 0] (incremental decoding; 0 otherwise).
  torch::Tensor operator()(const torch::Tensor& tokens, const torch::Tensor& E, const torch::Tensor& P, bool training,
                           int64_t offset = 0);

 private:
  torch::Tensor sinusoid_;  // cached table [max_len, d]
  double scale_;
  Positions positions_;
  double dropout_;
  int64_t max_len_;
};

}  // namespace stx
