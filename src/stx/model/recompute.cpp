#include "stx/model/recompute.h"

#include <ATen/autocast_mode.h>

#include "stx/kernels/none_tensor.h"
#include "stx/model/recomputing.h"

namespace stx {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The default generator of x's device: dropout draws from it.
at::Generator generator_of(const torch::Tensor& x) { return at::globalContext().defaultGenerator(x.device()); }

class LayerCheckpoint : public torch::autograd::Function<LayerCheckpoint> {
 public:
  // `layer` travels as an integer: the autograd context stores IValues only; the model outlives
  // the step's graph.
  static variable_list forward(AutogradContext* ctx, torch::Tensor x, torch::Tensor memory, torch::Tensor self_pad,
                               torch::Tensor memory_pad, int64_t layer) {
    ctx->save_for_backward({x, memory});
    ctx->saved_data["self_pad"] = self_pad;  // packed
    ctx->saved_data["memory_pad"] = memory_pad;
    ctx->saved_data["layer"] = layer;
    ctx->saved_data["rng"] = generator_of(x).get_state();
    ctx->saved_data["autocast"] = at::autocast::is_autocast_enabled(at::kCUDA);
    // Function::forward runs with gradients off: no graph is kept for the layer.
    return {reinterpret_cast<LayerImpl*>(layer)->forward(x, unpack_none(self_pad), unpack_none(memory),
                                                         unpack_none(memory_pad))};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    auto saved = ctx->get_saved_variables();
    auto x = saved[0].detach().requires_grad_(true);
    auto memory = unpack_none(saved[1]);
    if (memory.defined()) memory = memory.detach().requires_grad_(true);
    auto* layer = reinterpret_cast<LayerImpl*>(ctx->saved_data["layer"].toInt());
    auto gen = generator_of(x);
    const auto now = gen.get_state();
    gen.set_state(ctx->saved_data["rng"].toTensor());
    const bool autocast_was = at::autocast::is_autocast_enabled(at::kCUDA);
    at::autocast::set_autocast_enabled(at::kCUDA, ctx->saved_data["autocast"].toBool());
    torch::Tensor y;
    {
      torch::AutoGradMode grad(true);
      RecomputingScope recomputing;
      y = layer->forward(x, unpack_none(ctx->saved_data["self_pad"].toTensor()), memory,
                         unpack_none(ctx->saved_data["memory_pad"].toTensor()));
    }
    at::autocast::set_autocast_enabled(at::kCUDA, autocast_was);
    gen.set_state(now);
    // Parameter gradients accumulate into .grad here (as in PyTorch's reentrant checkpoint);
    // the inputs' gradients go back to the outer graph.
    torch::autograd::backward({y}, {grad_out[0]});
    return {x.grad(), memory.defined() ? memory.grad() : torch::Tensor(), torch::Tensor(), torch::Tensor(),
            torch::Tensor()};
  }
};

}  // namespace

torch::Tensor checkpointed_layer(LayerImpl& layer, const torch::Tensor& x, const torch::Tensor& self_pad,
                                 const torch::Tensor& memory, const torch::Tensor& memory_pad) {
  return LayerCheckpoint::apply(x, pack_none(memory), pack_none(self_pad), pack_none(memory_pad),
                                reinterpret_cast<int64_t>(&layer))[0];
}

}  // namespace stx
