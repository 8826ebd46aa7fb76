// stx/probe/logit_bound.cpp — see logit_bound.h.
#include "stx/probe/logit_bound.h"

#include <cmath>
#include <limits>

namespace stx::probe {

namespace {

const auto kF64 = torch::kFloat64;

// [W b] of a linear (its effective weight), [out, in + 1] float64; b = 0 without bias.
torch::Tensor augmented_weight(LinearImpl& lin) {
  auto w = lin.effective_weight().detach().to(kF64);
  auto b = lin.bias.defined() ? lin.bias.detach().to(kF64) : torch::zeros({w.size(0)}, w.options());
  return torch::cat({w, b.unsqueeze(1)}, 1);
}

// ‖X'_b‖₂ per sentence [B]: X' = [x, 1] on real tokens (mask [B, T]), zero rows elsewhere
// (NaN for all when x is not finite: a diverged model).
torch::Tensor input_norms(const torch::Tensor& x, const torch::Tensor& mask) {
  auto m = mask.to(kF64).unsqueeze(-1);  // [B, T, 1]
  auto xa = torch::cat({torch::where(m > 0, x.detach().to(kF64), torch::zeros_like(m)), m}, -1);
  if (!torch::isfinite(xa).all().item<bool>()) return torch::full({x.size(0)}, NAN, xa.options());
  return torch::linalg_svdvals(xa).select(-1, 0);
}

void put(nlohmann::json& vec, int64_t layer, double v) {
  if (vec.is_null()) vec = nlohmann::json::array();
  while (static_cast<int64_t>(vec.size()) <= layer) vec.push_back(nullptr);
  vec[layer] = v;
}

}  // namespace

torch::Tensor entropy_lower_bound(const torch::Tensor& sigma, const torch::Tensor& keys) {
  auto t = keys.to(kF64).clamp_min(2);
  auto beta = torch::exp(-sigma * torch::sqrt(t / (t - 1)));  // β = e^{−𝛔√(T/(T−1))}
  auto z = (t - 1) * beta;
  auto f = torch::log1p(z) + sigma * torch::sqrt(t * (t - 1)) * beta / (1 + z);
  return torch::where(keys.to(kF64) < 2, torch::zeros_like(f), f);
}

torch::Tensor head_logit_norms(AttentionImpl& attn, int64_t heads) {
  torch::NoGradGuard ng;
  auto aq = augmented_weight(*attn.q_proj), ak = augmented_weight(*attn.k_proj);  // [d, d+1]
  const int64_t d = aq.size(0), dh = d / heads;
  if (!torch::isfinite(aq).all().item<bool>() || !torch::isfinite(ak).all().item<bool>())  // a diverged model
    return torch::full({heads}, NAN, aq.options());
  auto rq = std::get<1>(torch::linalg_qr(aq.view({heads, dh, -1}).transpose(1, 2), "reduced"));  // [H, dh, dh]
  auto rk = std::get<1>(torch::linalg_qr(ak.view({heads, dh, -1}).transpose(1, 2), "reduced"));
  return torch::linalg_svdvals(torch::matmul(rq, rk.transpose(1, 2))).select(-1, 0) /
         std::sqrt(static_cast<double>(dh));
}

nlohmann::json logit_bound(TransformerImpl& model, const Taps& taps, const torch::Tensor& src_mask,
                           const torch::Tensor& tgt_mask) {
  torch::NoGradGuard ng;
  nlohmann::json out = nlohmann::json::object();
  const int64_t heads = model.config().n_heads;
  const auto& tv = taps.values();
  for (auto* stack : {&model.encoder, &model.decoder}) {
    if (!*stack) continue;
    const bool dec = stack == &model.decoder;
    const std::string sname = dec ? "decoder" : "encoder";
    const auto& qmask = dec ? tgt_mask : src_mask;
    for (int64_t l = 0; l < (*stack)->num_layers(); ++l) {
      auto& layer = (*stack)->layers[l];
      for (bool cross : {false, true}) {
        auto attn = cross ? layer->encoder_attn : layer->self_attn;
        if (!attn) continue;
        const std::string mod = cross ? "encoder_attn" : "self_attn";
        const auto pre = sname + ".layers." + std::to_string(l) + "." + mod + ".";
        auto qi = tv.find(pre + "queries_in");
        if (qi == tv.end() || !qmask.defined()) continue;
        const auto& kmask = cross ? src_mask : qmask;
        auto ki = cross ? tv.find(pre + "keys_in") : qi;
        if (ki == tv.end() || !kmask.defined()) continue;
        auto sig_h = head_logit_norms(*attn, heads);  // [H]
        auto& s = out["attn_sigma_kq"][sname][mod];
        put(s["mean"], l, sig_h.mean().item<double>());
        put(s["max_head"], l, sig_h.max().item<double>());
        if (attn->q_norm) continue;  // QK-LayerNorm: the logits are not x W_q W_kᵀ yᵀ, no bound
        auto sq = input_norms(qi->second, qmask), sk = cross ? input_norms(ki->second, kmask) : sq;
        auto bar = sig_h.view({1, -1, 1}) * (sq * sk).view({-1, 1, 1});  // 𝛔 [B, H, 1]
        auto nk = kmask.to(kF64).sum(1).view({-1, 1});                   // real keys [B, 1]
        const int64_t Tq = qmask.size(1);
        // Keys a query row sees: every real key; causal: the real keys up to and including it.
        auto keys = !cross && dec ? kmask.to(kF64).cumsum(1) : nk.expand({nk.size(0), Tq});
        auto bound = entropy_lower_bound(bar, keys.unsqueeze(1));  // [B, H, Tq]
        auto w = qmask.to(kF64).unsqueeze(1);
        auto per_head = (bound * w).sum(torch::IntArrayRef{0, 2}) / std::max(1.0, qmask.sum().item<double>());
        auto& b = out["attn_entropy_bound"][sname][mod];
        put(b["mean"], l, per_head.mean().item<double>());
        put(b["min_head"], l, per_head.min().item<double>());
      }
    }
  }
  return out;
}

}  // namespace stx::probe
