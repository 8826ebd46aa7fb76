#include "stx/kernels/fused_features.h"

#include <c10/util/Exception.h>

#include <algorithm>

namespace stx {

const char* feature_name(Feature f) {
  switch (f) {
    case Feature::PostJoin: return "post-join";
    case Feature::PreJoin: return "pre-join";
    case Feature::Alpha: return "deepnorm-alpha";
    case Feature::NormScale: return "norm-scale";
    case Feature::BranchScale: return "branch-scale";
    case Feature::Gain: return "gain";
    case Feature::Skip: return "skip-weight";
    case Feature::OutNorm: return "output-norm";
    case Feature::HeadScales: return "head-scales";
    case Feature::LayerNorm: return "layernorm";
    case Feature::RMSNorm: return "rmsnorm";
    case Feature::DynamicTanh: return "dyt";
    case Feature::NoNorm: return "no-norm";
    case Feature::MixedNorms: return "mixed-norms";
    case Feature::InnerNorm: return "inner-norm";
    case Feature::QKNorm: return "qk-norm";
    case Feature::Softcap: return "attention-softcap";
    case Feature::Causal: return "causal";
    case Feature::Bias: return "bias";
    case Feature::SigmaReparam: return "sigma-reparam";
    case Feature::ReLU: return "relu";
    case Feature::GELU: return "gelu";
    case Feature::OtherActivation: return "another activation";
    case Feature::Dropout: return "dropout";
    case Feature::AttentionDropout: return "attention-dropout";
    case Feature::Taps: return "taps";
    case Feature::AdminProfile: return "admin-profiling";
    case Feature::CPU: return "cpu";
    case Feature::OtherDevice: return "a device other than the cpu";
    case Feature::Float32: return "float32";
    case Feature::Float64: return "float64";
    case Feature::OtherType: return "a type other than float32/float64";
    case Feature::SdpaCore: return "sdpa-attention-core";
    case Feature::ReferenceKernels: return "reference-kernels";
    case Feature::Composed: return "composed-requested";
    case Feature::kCount: break;
  }
  return "?";
}

Features& Features::add_named(const std::string& name, bool on) {
  if (!on) return *this;
  const auto at = std::lower_bound(named_.begin(), named_.end(), name);
  if (at == named_.end() || *at != name) named_.insert(at, name);
  return *this;
}

Features& Features::operator|=(const Features& o) {
  bits_ |= o.bits_;
  for (const auto& n : o.named_) add_named(n);
  return *this;
}

std::string Features::outside(const Features& set) const {
  std::string r;
  for (int i = 0; i < static_cast<int>(Feature::kCount); ++i)
    if (bits_.test(i) && !set.bits_.test(i)) r += (r.empty() ? "" : ", ") + std::string(feature_name(Feature(i)));
  for (const auto& n : named_) r += (r.empty() ? "" : ", ") + n;  // no kernel declares a named feature
  return r;
}

void check_implements(const char* kernel, const Features& asked, const Features& implemented) {
  TORCH_CHECK(asked.within(implemented), kernel, " does not implement: ", asked.outside(implemented),
              " (the layer must run composed; model/layer.cpp chooses the path)");
}

}  // namespace stx
