// stx/theory/grad_profile_model.cpp — one N-N encoder-decoder of the grad-profile experiment
// (grad_profile.cpp): model config, byte-text batches, and the per-layer W^{2,l} gradient norms.
#include "stx/theory/grad_profile_model.h"

#include <algorithm>

#include "stx/model/init.h"
#include "stx/model/transformer.h"

namespace stx::theory::grad_profile {

namespace {

struct Batch {
  torch::Tensor src, tgt_in, tgt_out;
};
Batch text_batch(const torch::Tensor& bytes, int64_t B, int64_t T, uint64_t seed) {
  auto g = at::detail::createCPUGenerator(seed);
  auto offs = torch::randint(0, bytes.size(0) - 2 * T, {B, 1}, g, torch::kInt64);
  auto idx = offs + torch::arange(2 * T, torch::kInt64).unsqueeze(0);  // [B, 2T]
  auto w = bytes.index({idx});
  Batch b;
  b.src = w.slice(1, 0, T);
  b.tgt_out = w.slice(1, T, 2 * T);
  b.tgt_in = torch::cat({torch::zeros({B, 1}, torch::kInt64), b.tgt_out.slice(1, 0, T - 1)}, 1);  // BOS = 0
  return b;
}

ModelConfig profile_config(const Settings& st, const SchemeRow& c, int64_t N) {
  ModelConfig m;
  m.arch = Arch::EncoderDecoder;
  m.vocab_size = 256;
  m.d_model = st.d;
  m.n_heads = st.heads;
  m.d_ff = st.d_ff;
  m.encoder_layers = m.decoder_layers = N;
  c.apply(m);
  m.qk_init = QKInit::Xavier;
  m.bias = true;
  m.tie_embeddings = true;
  m.positions = Positions::Sinusoidal;
  m.embed_scale = true;
  m.dropout = m.attention_dropout = 0;
  m.max_len = std::max<int64_t>(1024, st.T + 1);
  m.pad_id = -1;  // byte 0 never occurs in the text; it serves as BOS
  return m;
}

}  // namespace

Profile measure_profile(const Settings& st, const SchemeRow& c, int64_t N, const torch::Tensor& bytes, uint64_t base) {
  Profile p;
  for (int s2 = 0; s2 < 2; ++s2) p.avg[s2].assign(N, {}), p.mean[s2].assign(N, {});
  for (int64_t s = 0; s < st.S; ++s) {
    const uint64_t seed = base + static_cast<uint64_t>(s);
    Transformer model(profile_config(st, c, N));
    initialize(*model, seed);
    model->eval();  // no dropout; σReparam: no power iteration (u, v exact at init)
    // Only the W^{2,l} gradients are needed: other parameters skip their weight gradients.
    for (auto& t : model->parameters()) t.set_requires_grad(false);
    std::vector<torch::Tensor*> W[2];
    for (int64_t l = 0; l < N; ++l) {
      W[0].push_back(&model->encoder->layers[l]->ffn->fc2->weight);
      W[1].push_back(&model->decoder->layers[l]->ffn->fc2->weight);
    }
    for (int s2 = 0; s2 < 2; ++s2)
      for (auto* w : W[s2]) w->set_requires_grad(true);
    std::vector<torch::Tensor> sum[2];
    std::vector<double> norms[2];
    for (int s2 = 0; s2 < 2; ++s2) sum[s2].assign(N, {}), norms[s2].assign(N, 0.0);
    for (int64_t k = 0; k < st.K; ++k) {
      auto b = text_batch(bytes, st.B, st.T, (seed * 7919ULL + static_cast<uint64_t>(k)) ^ 0xB17E5ULL);
      for (int s2 = 0; s2 < 2; ++s2)
        for (auto* w : W[s2])
          if (w->grad().defined()) w->mutable_grad().zero_();
      auto logits = model->forward(b.src, b.tgt_in);
      auto loss = torch::nn::functional::cross_entropy(logits.reshape({-1, 256}), b.tgt_out.reshape({-1}));
      loss.backward();
      torch::NoGradGuard ng;
      for (int s2 = 0; s2 < 2; ++s2)
        for (int64_t l = 0; l < N; ++l) {
          auto g = W[s2][l]->grad();
          sum[s2][l] = sum[s2][l].defined() ? sum[s2][l] + g : g.clone();
          norms[s2][l] += g.norm().item<double>() / static_cast<double>(st.K);
        }
    }
    for (int s2 = 0; s2 < 2; ++s2)
      for (int64_t l = 0; l < N; ++l) {
        p.avg[s2][l].push_back(sum[s2][l].norm().item<double>() / static_cast<double>(st.K));
        p.mean[s2][l].push_back(norms[s2][l]);
      }
  }
  return p;
}

}  // namespace stx::theory::grad_profile
