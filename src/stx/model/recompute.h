// stx/model/recompute.h — activation recomputation per layer ("activation checkpointing"; Chen et al. 2016, "Training
// deep nets with sublinear memory cost"; train.checkpoint_activations). The forward of a layer
// runs without building a graph and keeps only its inputs; the backward re-runs the layer with
// the random-number state of the first run (the same dropout masks) and the same autocast mode,
// then backpropagates through the recomputed graph. Memory: the L layer inputs plus one layer's
// activations instead of every layer's activations; cost: one more forward per step. The
// results are those of the plain forward/backward, bit for bit (tests/test_recompute.cpp).
#pragma once
#include <torch/torch.h>

#include "stx/model/layer.h"
#include "stx/model/recomputing.h"

namespace stx {

// layer(x, self_pad, memory, memory_pad) with the layer's activations recomputed in backward.
torch::Tensor checkpointed_layer(LayerImpl& layer, const torch::Tensor& x, const torch::Tensor& self_pad,
                                 const torch::Tensor& memory, const torch::Tensor& memory_pad);

}  // namespace stx
