#include "stx/model/incremental.h"

namespace stx {

void DecoderCache::reorder(const torch::Tensor& rows) {
  auto pick = [&](torch::Tensor& t) {
    if (t.defined()) t = t.index_select(0, rows);
  };
  for (auto& l : layers) {
    pick(l.self_k), pick(l.self_v), pick(l.cross_k), pick(l.cross_v);
  }
  pick(memory_pad);
}

}  // namespace stx
