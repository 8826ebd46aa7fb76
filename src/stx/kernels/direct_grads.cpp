// stx/kernels/direct_grads.cpp — see direct_grads.h.
#include "stx/kernels/direct_grads.h"

namespace stx {
namespace {
thread_local bool t_direct = false;  // autograd records a node on the thread that runs its forward
}

DirectGradsScope::DirectGradsScope(bool on) : previous_(t_direct) { t_direct = on; }
DirectGradsScope::~DirectGradsScope() { t_direct = previous_; }

bool direct_grads_on() { return t_direct; }

std::vector<torch::Tensor> direct_grad_targets(const torch::Tensor& x, at::ArrayRef<torch::Tensor> params) {
  if (!t_direct || !torch::GradMode::is_enabled() || !x.requires_grad()) return {};
  std::vector<torch::Tensor> out;
  out.reserve(params.size());
  for (const auto& p : params) {
    if (!p.defined()) continue;
    if (!p.is_leaf() || !p.requires_grad()) return {};  // σReparam's W/σ, a frozen parameter
    const auto& g = p.grad();
    if (g.defined() && (g.layout() != torch::kStrided || !g.is_contiguous() || g.scalar_type() != p.scalar_type() ||
                        g.device() != p.device() || g.sizes() != p.sizes()))
      return {};
  }
  // Every parameter here is used by the node, so autograd would give each a .grad() in this
  // backward: where there is none yet (a run's first step, the first after a resume) it is made
  // now, zero, so that the first step takes the same path as every later one (a resumed run
  // then repeats an uninterrupted one bit for bit).
  for (const auto& p : params) {
    if (p.defined() && !p.grad().defined()) {
      p.mutable_grad() = torch::zeros_like(p, torch::MemoryFormat::Contiguous);
    }
    out.push_back(p.defined() ? p.grad() : torch::Tensor());
  }
  return out;
}

}  // namespace stx
