// The fused sub-layers' hand-made autograd node (kernels/fused_node.h): what Function::apply gave
// them and the node must keep — edges only where a gradient is wanted, no node without one, the
// in-place check SavedVariable made (on the parameters too when they have no edge), the refusal of
// a second backward and of a double one.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "stx/kernels/direct_grads.h"
#include "stx/kernels/fused_sublayer.h"

namespace stx {
namespace {

struct Ffn {
  torch::Tensor x, w1, b1, w2, b2, nw, nb;
  Ffn() {
    torch::manual_seed(3);
    const auto o = torch::TensorOptions().dtype(torch::kDouble);
    x = torch::randn({2, 3, 8}, o).requires_grad_();
    w1 = (torch::randn({16, 8}, o) * 0.3).requires_grad_();
    b1 = (torch::randn({16}, o) * 0.1).requires_grad_();
    w2 = (torch::randn({8, 16}, o) * 0.3).requires_grad_();
    b2 = (torch::randn({8}, o) * 0.1).requires_grad_();
    nw = (1 + torch::randn({8}, o) * 0.1).requires_grad_();
    nb = (torch::randn({8}, o) * 0.1).requires_grad_();
  }
  torch::Tensor operator()(bool pre = false) const {
    FusedJoin j;
    j.pre = pre;
    const JoinWeights jw{nw, nb, {}, {}, {}, {}, {}, {}, {}};
    const Features ask{pre ? Feature::PreJoin : Feature::PostJoin,
                       Feature::LayerNorm,
                       Feature::ReLU,
                       Feature::Bias,
                       Feature::CPU,
                       Feature::Float64};
    return fused_ffn_sublayer(ask, x, j, jw, FFNBranch{false, w1, b1, w2, b2, {}});
  }
};

bool available(const Ffn&) { return !fused_ffn_implements().empty(); }

TEST(FusedNode, EdgesToEveryInputOrOnlyXWithDirectGradients) {
  Ffn f;
  if (!available(f)) GTEST_SKIP() << "built without BLAS";
  auto y = f();
  ASSERT_TRUE(y.grad_fn());
  EXPECT_NE(y.grad_fn()->name().find("FFNSublayer"), std::string::npos) << y.grad_fn()->name();
  EXPECT_EQ(y.grad_fn()->num_outputs(), 17u);  // x, the join's 9, the inner norm's 3, w1, b1, w2, b2
  y.sum().backward();
  for (const auto* p : {&f.x, &f.w1, &f.b1, &f.w2, &f.b2, &f.nw, &f.nb}) EXPECT_TRUE(p->grad().defined());
  {
    DirectGradsScope direct(true);
    auto yd = f();
    EXPECT_EQ(yd.grad_fn()->num_outputs(), 1u);  // x only: the parameters' gradients go into .grad()
  }
}

TEST(FusedNode, NoNodeWithoutGradients) {
  Ffn f;
  if (!available(f)) GTEST_SKIP() << "built without BLAS";
  {
    torch::NoGradGuard no_grad;
    EXPECT_FALSE(f().grad_fn());
  }
  for (auto* p : {&f.x, &f.w1, &f.b1, &f.w2, &f.b2, &f.nw, &f.nb}) p->requires_grad_(false);
  auto y = f();
  EXPECT_FALSE(y.grad_fn());
  EXPECT_FALSE(y.requires_grad());
  f.w2.requires_grad_(true);  // one parameter is enough
  y = f();
  ASSERT_TRUE(y.grad_fn());
  y.sum().backward();
  EXPECT_TRUE(f.w2.grad().defined());
  EXPECT_FALSE(f.w1.grad().defined());
}

TEST(FusedNode, RefusesAnInputModifiedInPlaceAfterTheForward) {
  for (const bool pre : {false, true}) {
    Ffn f;
    if (!available(f)) GTEST_SKIP() << "built without BLAS";
    auto y = f(pre);
    {
      torch::NoGradGuard no_grad;
      f.w1.mul_(2);  // as an optimizer step between forward and backward would
    }
    try {
      y.sum().backward();
      ADD_FAILURE() << "backward ran on a modified input (pre " << pre << ")";
    } catch (const c10::Error& e) {
      EXPECT_NE(std::string(e.what()).find("in-place"), std::string::npos) << e.what();
    }
  }
}

// With direct gradients the parameters have no edge, but the node still reads them: an in-place
// change to one between forward and backward is refused too.
TEST(FusedNode, RefusesAModifiedParameterWithDirectGradients) {
  Ffn f;
  if (!available(f)) GTEST_SKIP() << "built without BLAS";
  torch::Tensor y;
  {
    DirectGradsScope direct(true);
    y = f();
  }
  ASSERT_EQ(y.grad_fn()->num_outputs(), 1u);
  {
    torch::NoGradGuard no_grad;
    f.w2.add_(1);
  }
  EXPECT_THROW(y.sum().backward(), c10::Error);
}

TEST(FusedNode, RefusesDoubleBackward) {
  Ffn f;
  if (!available(f)) GTEST_SKIP() << "built without BLAS";
  auto y = f();
  EXPECT_THROW(torch::autograd::grad({y.sum()}, {f.x}, {}, true, /*create_graph=*/true), c10::Error);
  auto g = torch::autograd::grad({y.sum()}, {f.x}, {}, true, /*create_graph=*/false);  // first order still runs
  EXPECT_TRUE(g[0].defined());
}

TEST(FusedNode, RefusesASecondBackwardUnlessRetained) {
  Ffn f;
  if (!available(f)) GTEST_SKIP() << "built without BLAS";
  auto y = f();
  y.sum().backward({}, /*retain_graph=*/true);
  const auto g1 = f.w1.grad().clone();
  y.sum().backward();  // retained: runs again, the same gradient added
  EXPECT_TRUE(torch::allclose(f.w1.grad(), 2 * g1, 1e-12, 1e-12));
  EXPECT_THROW(y.sum().backward(), c10::Error);  // released now
}

}  // namespace
}  // namespace stx
