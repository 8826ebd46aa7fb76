// stx/kernels/fused_node.h — the fused sub-layers' autograd node (fused_sublayer.h), made by hand
// instead of through torch::autograd::Function: the node holds the sub-layer's saved state as a
// plain C++ struct and has an edge only to what needs a gradient from it.
//
// Why not Function::apply: it would pack every input (some 26 per attention sub-layer, most of them
// absent, or parameters detached for direct gradients), save each tensor as a SavedVariable and wrap
// each output — ~4–5 % of the d64 × 24 step by its call stacks (docs/performance.md).
// The forward runs below autograd (as Function::apply runs its forward), and when any input
// needs a gradient one FusedNode<S> is recorded on y with edges to the node's inputs — with
// direct gradients (direct_grads.h) only x (and the cross-attention's memory). Double backward
// (create_graph) is refused: the backward is hand-written, not made of differentiable ops.
//
// SavedVariable's check survives as a version check: a node refuses to run backward when an input
// it was given (x or a parameter) was modified in place after its forward (it holds their version
// counters, not the tensors).
#pragma once
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace stx {

// S: a sub-layer's saved state with
//   static constexpr const char* kName;
//   torch::autograd::variable_list backward(const torch::Tensor& dy);  // one gradient per edge
template <class S>
class FusedNode final : public torch::autograd::Node {
 public:
  // Edges to inputs[0, edges); every defined input's version counter is watched (with direct
  // gradients the parameters have no edge, but the state still reads them).
  FusedNode(S state, const std::vector<torch::Tensor>& inputs, size_t edges) : state_(std::move(state)) {
    torch::autograd::edge_list next;
    next.reserve(edges);
    for (size_t i = 0; i < inputs.size(); ++i) {
      const auto& t = inputs[i];
      if (i < edges) next.push_back(t.defined() ? torch::autograd::impl::gradient_edge(t) : torch::autograd::Edge());
      if (!t.defined()) continue;
      const auto& counter = t.unsafeGetTensorImpl()->version_counter();
      if (counter.enabled()) versions_.emplace_back(counter, counter.current_version());  // inference tensors: none
    }
    set_next_edges(std::move(next));
  }

  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    std::lock_guard<std::mutex> lock(mutex_);  // as CppNode::apply: the state is written in backward
    TORCH_CHECK(!released_, display_name(),
                ": trying to backward through the graph a second time; pass retain_graph=true the first time");
    TORCH_CHECK(!torch::GradMode::is_enabled(), display_name(),
                ": double backward (create_graph=true) is not supported by the fused sub-layers; run the layers "
                "composed (kernels reference)");
    for (const auto& [counter, v] : versions_)
      TORCH_CHECK(counter.current_version() == v, display_name(),
                  ": an input of this node (x or a parameter) was modified by an in-place operation after the "
                  "forward (version ",
                  v, ", now ", counter.current_version(), ")");
    // Undefined when y reached the loss through no path: zeros, as Function materializes them.
    return state_.backward(grads[0].defined() ? grads[0] : input_metadata(0).zeros_like());
  }

  std::string name() const override { return display_name(); }

  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    state_ = S();
    versions_.clear();
    released_ = true;
  }

 private:
  static std::string display_name() { return std::string("stx::") + S::kName; }
  S state_;
  std::vector<std::pair<c10::VariableVersion, uint32_t>> versions_;  // the counters, not the tensors: no memory held
  bool released_ = false;
};

// Records y's node when autograd is on and any of inputs[0, edges) requires a gradient; else the
// state is dropped (inference keeps no activations).
template <class S>
void record_fused_node(const torch::Tensor& y, S&& state, const std::vector<torch::Tensor>& inputs, size_t edges) {
  if (!torch::GradMode::is_enabled()) return;
  bool any = false;
  for (size_t i = 0; i < edges; ++i) any = any || (inputs[i].defined() && inputs[i].requires_grad());
  if (!any) return;
  std::shared_ptr<torch::autograd::Node> node(new FusedNode<S>(std::forward<S>(state), inputs, edges),
                                              torch::autograd::deleteNode);
  torch::autograd::set_history(y, node);
}

}  // namespace stx
