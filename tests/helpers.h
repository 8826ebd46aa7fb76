// tests/helpers.h — small shared helpers for the C++ tests.
#pragma once
#include <torch/torch.h>

#include "stx/config/config.h"
#include "stx/model/init.h"
#include "stx/model/transformer.h"

namespace stx::test {

// A tiny model config for exhaustive checks.
inline ModelConfig tiny(Arch arch, Scheme scheme, NormKind norm = NormKind::LayerNorm, bool sigma = false) {
  ModelConfig m;
  m.arch = arch;
  m.vocab_size = 11;
  m.d_model = 8;
  m.n_heads = 2;
  m.d_ff = 12;
  m.encoder_layers = 3;
  m.decoder_layers = 2;
  m.scheme = scheme;
  m.norm = norm;
  m.sigma_reparam = sigma;
  m.dropout = 0;
  m.max_len = 16;
  m.pad_id = 0;
  return m;
}

// Random ids in [1, V) with trailing padding (id 0) in the last row.
inline torch::Tensor tokens(int64_t B, int64_t T, int64_t V, uint64_t seed) {
  auto g = at::detail::createCPUGenerator(seed);
  auto t = torch::randint(1, V, {B, T}, g, torch::kInt64);
  if (B > 1 && T > 2) t.index_put_({B - 1, torch::indexing::Slice(T - 2)}, 0);
  return t;
}

inline std::string name(Arch a) { return to_string(a); }

}  // namespace stx::test
