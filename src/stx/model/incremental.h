// stx/model/incremental.h — the key/value cache of incremental decoding (eval only): each
// decoder layer keeps the keys and values of the positions decoded so far, and of the encoder
// output once, so that one more step costs O(t) attention instead of re-running the prefix.
#pragma once
#include <torch/torch.h>

#include <vector>

namespace stx {

struct LayerCache {
  torch::Tensor self_k, self_v;    // [N, H, t, d_h], grown by one block per step
  torch::Tensor cross_k, cross_v;  // [N, H, S, d_h], from the encoder output on the first step
};

struct DecoderCache {
  std::vector<LayerCache> layers;  // sized by the decoder on the first step
  torch::Tensor memory_pad;        // [N, S] key padding of the encoder output, or undefined
  int64_t length = 0;              // positions decoded so far (the next position's index)

  // Keeps rows `rows` (int64 [N'], may repeat: beam search forks a hypothesis) in that order.
  void reorder(const torch::Tensor& rows);
};

}  // namespace stx
