// stx/theory/deepnet_update_model.cpp — the model runs of the deepnet-update experiment
// (deepnet_update.cpp): model config, byte-text batches, Adam curves and the SGD first step.
#include "stx/theory/deepnet_update_model.h"

#include <algorithm>
#include <cmath>

#include "stx/model/depth_constants.h"
#include "stx/model/init.h"
#include "stx/model/transformer.h"
#include "stx/probe/model_update.h"

namespace stx::theory::deepnet_update {

namespace {

ModelConfig model_config(const Setup& s, Scheme scheme, int64_t depth, bool theorem_setting) {
  ModelConfig m;
  m.arch = s.arch;
  m.vocab_size = 256;
  m.d_model = s.d, m.d_ff = s.d_ff, m.n_heads = s.heads;
  m.encoder_layers = m.decoder_layers = depth;
  m.scheme = scheme;
  m.bias = !theorem_setting;
  m.dropout = 0;
  m.max_len = 2 * s.T + 2;
  m.pad_id = -1;  // the text has no byte 0: no padding
  if (scheme == Scheme::TFixup || scheme == Scheme::ReZero) m.norm = NormKind::None;  // norm-free schemes
  return m;
}

// Decoder-only: next-byte LM, input bytes[p, p+T), target bytes[p+1, p+T+1).
// Encoder-decoder ("continue the text"): src bytes[p, p+T), decoder input bytes[p+T−1, p+2T−1),
// target bytes[p+T, p+2T).
struct Batch {
  torch::Tensor src, tin, tout;
};
Batch make_batch(const torch::Tensor& bytes, const torch::Tensor& starts, const Setup& s) {
  std::vector<torch::Tensor> src, tin, tout;
  const bool ed = s.arch == Arch::EncoderDecoder;
  for (int64_t i = 0; i < starts.size(0); ++i) {
    const int64_t p = starts[i].item<int64_t>(), q = ed ? p + s.T : p + 1;
    if (ed) src.push_back(bytes.slice(0, p, p + s.T));
    tin.push_back(bytes.slice(0, q - 1, q - 1 + s.T));
    tout.push_back(bytes.slice(0, q, q + s.T));
  }
  return {ed ? torch::stack(src) : torch::Tensor(), torch::stack(tin), torch::stack(tout)};
}
Batch random_batch(const torch::Tensor& bytes, const Setup& s, int64_t B, at::Generator& g) {
  return make_batch(bytes, torch::randint(0, bytes.size(0) - 2 * s.T - 2, {B}, g, torch::kInt64), s);
}
// The fixed probe batch: evenly spaced windows of the text.
Batch probe_batch(const torch::Tensor& bytes, const Setup& s) {
  const int64_t span = bytes.size(0) - 2 * s.T - 2;
  return make_batch(bytes, torch::arange(s.probe_B, torch::kInt64) * (span / s.probe_B), s);
}

torch::Tensor loss_of(Transformer& model, const Batch& b, Taps* taps = nullptr) {
  auto logits = model->forward(b.src, b.tin, taps);
  return torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}), b.tout.reshape({-1}));
}

}  // namespace

Curve train_adam(const Setup& s, const torch::Tensor& bytes, Scheme scheme, int64_t depth) {
  Transformer model(model_config(s, scheme, depth, false));
  initialize(*model, s.seed);
  model->train();
  const auto pb = probe_batch(bytes, s);
  probe::ModelUpdate probe(model, pb.src, pb.tin);
  torch::optim::Adam opt(model->parameters(),
                         torch::optim::AdamOptions(s.lr).betas({0.9, 0.98}).eps(1e-8).weight_decay(0));
  auto g = at::detail::createCPUGenerator(s.seed + 1000);
  auto& bottom = model->encoder ? model->encoder->layers.front() : model->decoder->layers.front();
  const double sqrt_d = std::sqrt(static_cast<double>(s.d));
  Curve c;
  for (int64_t t = 1; t <= s.steps; ++t) {
    Taps taps({"attn_layer_norm.input", "final_layer_norm.input"});
    auto loss = loss_of(model, random_batch(bytes, s, s.B, g), &taps);
    opt.zero_grad();
    loss.backward();
    double mx = 0, sum = 0;
    for (auto& [name, x] : taps.values()) {
      const double n = x.norm(2, -1).mean().item<double>() / sqrt_d;  // mean_t ‖x_t‖ / √d
      mx = std::max(mx, n);
      sum += n;
    }
    double g2 = 0;
    for (auto& p : bottom->parameters())
      if (p.grad().defined()) g2 += p.grad().pow(2).sum().item<double>();
    opt.step();
    const auto m = probe.measure();
    c.dF.push_back(m.from_start);
    c.inc.push_back(m.from_previous);
    c.loss.push_back(loss.item<double>());
    c.ln_max.push_back(mx);
    c.ln_mean.push_back(sum / std::max<size_t>(1, taps.values().size()));
    c.grad_bottom.push_back(std::sqrt(g2));
  }
  return c;
}

std::pair<double, double> sgd_first_step(const Setup& s, const torch::Tensor& bytes, Scheme scheme, int64_t depth,
                                         uint64_t seed) {
  Transformer model(model_config(s, scheme, depth, true));
  initialize(*model, seed);
  model->train();
  const auto pb = probe_batch(bytes, s);
  probe::ModelUpdate probe(model, pb.src, pb.tin);
  auto g = at::detail::createCPUGenerator(seed + 2000);
  model->zero_grad();
  loss_of(model, random_batch(bytes, s, s.B, g)).backward();
  const auto coef = deepnorm_coefficients(model->config());
  double bound = 0;
  torch::NoGradGuard no_grad;
  for (auto* stack : {&model->encoder, &model->decoder}) {
    if (!*stack) continue;
    const bool enc = (*stack)->side() == Side::Encoder;
    const double alpha = enc ? coef.encoder_alpha : coef.decoder_alpha;
    const double beta = enc ? coef.encoder_beta : coef.decoder_beta;
    const int64_t N = (*stack)->num_layers();
    for (int64_t l = 0; l < N; ++l) {
      auto& layer = (*stack)->layers[l];
      // v_i = w_i: the init scale of the sub-layer's weights relative to Xavier.
      const double gain = scheme == Scheme::DeepNorm ? beta : scheme == Scheme::PostInit ? 1.0 / (N - l) : 1.0;
      std::vector<torch::nn::Module*> subs{layer->self_attn.get(), layer->ffn.get()};
      if (layer->encoder_attn) subs.push_back(layer->encoder_attn.get());
      for (auto* sub : subs) {
        double d2 = 0;
        for (auto& p : sub->parameters()) {
          if (!p.grad().defined()) continue;
          auto step = p.grad() * s.sgd_lr;
          d2 += step.pow(2).sum().item<double>();
          p.sub_(step);
        }
        bound += std::sqrt(2.0) * gain / alpha * std::sqrt(d2);
      }
    }
  }
  return {probe.measure().from_start / s.sgd_lr, bound / s.sgd_lr};
}

}  // namespace stx::theory::deepnet_update
