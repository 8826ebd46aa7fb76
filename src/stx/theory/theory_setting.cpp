// stx/theory/theory_setting.cpp — Xiong et al. (ICML 2020) theory setting: model, Gaussian
// inputs, tied-embedding loss, and the per-sequence W^{2,l} gradient of Theorem 1.
#include "stx/theory/theory_setting.h"

#include <cmath>

#include "stx/core/error.h"
#include "stx/model/init.h"
#include "stx/theory/stats.h"

namespace stx::theory {

const std::vector<SchemeRow>& scheme_columns(bool with_post_init) {
  auto rows = [](SchemeUse u) {
    std::vector<SchemeRow> out;
    for (auto* r : schemes_used_by(u)) out.push_back(*r);
    return out;
  };
  static const std::vector<SchemeRow> profile = rows(kUseTheoryProfile), theorem1 = rows(kUseTheory);
  return with_post_init ? profile : theorem1;
}

ModelConfig theory_model_config(const TheorySpec& s) {
  ModelConfig m;
  m.arch = Arch::Encoder;
  m.vocab_size = s.vocab;
  m.d_model = s.d;
  m.n_heads = s.heads;
  m.d_ff = s.d_ff;
  m.encoder_layers = s.layers;
  m.decoder_layers = 0;
  m.scheme = s.scheme;
  m.sigma_reparam = s.sigma_reparam;
  m.gamma_init = GammaInit::Sigma;
  m.norm = NormKind::LayerNorm;
  m.norm_eps = s.norm_eps;
  m.activation = Activation::ReLU;
  m.qk_init = QKInit::Zero;  // W^Q = W^K = 0
  m.bias = false;            // FFN(x) = ReLU(x W¹) W², attention without biases
  m.tie_embeddings = true;   // loss through x Eᵀ
  m.positions = Positions::None;
  m.dropout = 0;
  m.attention_dropout = 0;
  m.pad_id = -1;
  return m;
}

Transformer make_theory_model(const TheorySpec& s, uint64_t seed, torch::Dtype dtype) {
  auto cfg = theory_model_config(s);
  // σReparam cannot reparametrize W = 0 (σ(0) = 0, Ŵ = γW/σ = 0/0): there W^Q, W^K get their
  // Xavier draw and γ_Q = γ_K = 0 instead, so the effective Ŵ^Q = Ŵ^K = 0 as the theory requires.
  if (s.sigma_reparam) cfg.qk_init = QKInit::Xavier;
  Transformer model(cfg);
  initialize(*model, seed);
  if (s.sigma_reparam) {
    torch::NoGradGuard no_grad;
    for (auto& l : model->encoder->layers) l->self_attn->q_proj->gamma.zero_(), l->self_attn->k_proj->gamma.zero_();
  }
  model->to(dtype);
  model->eval();
  return model;
}

TheoryBatch gaussian_batch(int64_t B, int64_t n, int64_t d, int64_t vocab, uint64_t seed, torch::Dtype dtype) {
  auto g = at::detail::createCPUGenerator(seed);
  TheoryBatch b;
  b.x = torch::randn({B, n, d}, g, torch::TensorOptions().dtype(torch::kFloat64)).to(dtype);
  b.y = torch::randint(0, vocab, {B, n}, g, torch::TensorOptions().dtype(torch::kInt64));
  return b;
}

torch::Tensor sequence_losses(Transformer& model, const TheoryBatch& batch, Taps* taps) {
  auto h = model->encoder->run_layers(batch.x, {}, {}, {}, taps);  // x_{L+1} (Pre: after the final LN)
  auto logp = torch::log_softmax(model->project(h), -1);           // log softmax(x Eᵀ)
  auto nll = -logp.gather(-1, batch.y.unsqueeze(-1)).squeeze(-1);  // [B, n]
  return nll.mean(1);                                              // L̃_b = (1/n) Σ_i L_i
}

W2Grads w2_grads_per_sequence(Transformer& model, const TheoryBatch& batch, int64_t layer) {
  auto& enc = model->encoder;
  const int64_t L = enc->num_layers();
  if (layer < 0) layer += L;
  if (layer < 0 || layer >= L) throw InputError("w2_grads_per_sequence: layer out of range");
  const bool pre = model->config().scheme == Scheme::Pre;
  const std::string p = "encoder.layers." + std::to_string(layer) + ".";
  const std::string in_name = p + (pre ? "pre4" : "post3");   // the FFN's input (after its LN in Pre)
  const std::string out_name = p + (pre ? "pre5" : "post4");  // the FFN's output G(x)
  // The LN input right before the loss: Post x^{post,5}_L (top layer's final_layer_norm), Pre x_{L+1}.
  const std::string top = "encoder.layers." + std::to_string(L - 1) + ".";
  const std::string ln_name = pre ? "encoder.layer_norm.input" : top + "final_layer_norm.input";
  Taps taps({in_name, out_name, ln_name}, /*with_grad=*/true);

  auto losses = sequence_losses(model, batch, &taps);
  const auto& vals = taps.values();
  const auto& out = vals.at(out_name);
  // One backward of Σ_b L̃_b: its gradient at sequence b's FFN output is ∂L̃_b/∂G(x)_b.
  auto g = torch::autograd::grad({losses.sum()}, {out})[0].detach();  // [B, n, d]

  W2Grads r;
  torch::NoGradGuard no_grad;
  auto& ffn = enc->layers[layer]->ffn;
  auto hid = torch::relu(ffn->fc1->forward(vals.at(in_name).detach()));  // [B, n, d_F]
  auto G = torch::einsum("bnp,bnq->bpq", {g, hid});                      // ∂L̃_b/∂Ŵ, Ŵ: [d, d_F]
  auto& fc2 = ffn->fc2;
  if (fc2->reparam()) {
    auto W = fc2->weight;
    auto sigma = fc2->sigma();
    auto gamma = fc2->gamma.squeeze();
    auto uv = torch::outer(fc2->u, fc2->v);                           // ∂σ/∂W = u vᵀ
    auto inner = (G * W.unsqueeze(0)).sum({1, 2}, /*keepdim=*/true);  // ⟨∂L/∂Ŵ, W⟩
    G = (gamma / sigma) * (G - inner / sigma * uv.unsqueeze(0));
  }
  r.grad = G;
  r.norm = G.flatten(1).norm(2, 1);
  const auto d = static_cast<double>(batch.x.size(2));
  r.ln_in_sq = vals.at(ln_name).detach().pow(2).sum(-1).mean(1) / d;
  r.relu_sq = hid.pow(2).sum(-1).mean(1) / static_cast<double>(hid.size(2));
  const auto z = vals.at(ln_name).detach();
  const auto zn = z / z.norm(2, -1, /*keepdim=*/true);
  const auto n = static_cast<double>(z.size(1));
  r.token_cos = (torch::matmul(zn, zn.transpose(1, 2)).sum({1, 2}) - n) / (n * (n - 1));
  return r;
}

SlopeFit loglog_slope(const std::vector<double>& x, const std::vector<double>& mean, const std::vector<double>& se) {
  const Fit f = loglog_fit(x, mean);
  SlopeFit r{f.slope, f.intercept, 0, f.slope_se};
  double mx = 0, sxx = 0, var = 0;
  for (double xi : x) mx += std::log(xi) / static_cast<double>(x.size());
  for (double xi : x) sxx += (std::log(xi) - mx) * (std::log(xi) - mx);
  for (size_t k = 0; k < x.size(); ++k) {
    const double w = (std::log(x[k]) - mx) / sxx, rel = se[k] / mean[k];
    var += w * w * rel * rel;
  }
  r.se = std::sqrt(var);
  return r;
}

}  // namespace stx::theory
