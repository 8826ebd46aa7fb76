// tests/helpers.h — small shared helpers for the C++ tests.
#pragma once
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <string>

#include "stx/config/config.h"
#include "stx/core/error.h"
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

// The InputError message of f(), or "" when it does not throw one.
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// max |a − b| over all elements, as a double.
inline double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b);

// a equals b to `tol` relative to max(1, max |b|), with equal shapes.
inline void expect_close(const torch::Tensor& a, const torch::Tensor& b, double tol, const std::string& what) {
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  const double err = max_abs_diff(a, b), scale = b.abs().max().item<double>();
  EXPECT_LE(err, tol * std::max(1.0, scale)) << what << ": max |a − b| = " << err;
}

inline double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

}  // namespace stx::test
