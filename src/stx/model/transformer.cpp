#include "stx/model/transformer.h"

#include "stx/core/error.h"
#include "stx/kernels/tied_projection.h"
#include "stx/model/depth_constants.h"

namespace stx {

TransformerImpl::TransformerImpl(const ModelConfig& cfg) : cfg_(cfg) {
  const auto c = deepnorm_coefficients(cfg);
  const bool untied = !cfg.tie_embeddings;
  if (cfg.has_encoder())
    encoder = register_module("encoder", Stack(cfg, Side::Encoder, c.encoder_alpha, nullptr,
                                               /*output_head=*/untied && !cfg.has_decoder()));
  if (cfg.has_decoder()) {
    Table shared = cfg.has_encoder() && cfg.tie_embeddings ? encoder->embed_tokens : nullptr;
    decoder = register_module("decoder", Stack(cfg, Side::Decoder, c.decoder_alpha, shared, /*output_head=*/untied));
  }
}

torch::Tensor TransformerImpl::hidden(const torch::Tensor& src, const torch::Tensor& tgt, Taps* taps) {
  if (cfg_.has_encoder() && !src.defined())
    throw InputError("this " + to_string(cfg_.arch) + " model needs input 'src'");
  if (cfg_.has_decoder() && !tgt.defined())
    throw InputError("this " + to_string(cfg_.arch) + " model needs input 'tgt'");
  if (!cfg_.has_decoder()) return encoder->forward(src, {}, {}, taps);
  if (!cfg_.has_encoder()) return decoder->forward(tgt, {}, {}, taps);
  auto memory = encoder->forward(src, {}, {}, taps);
  return decoder->forward(tgt, memory, encoder->padding_mask(src), taps);
}

torch::Tensor TransformerImpl::project(const torch::Tensor& h) {
  auto& out = output_stack();
  const auto& E = out->embed_tokens->weight;
  auto z = out->output_projection         ? out->output_projection->forward(h)
           : tied_projection_available(h) ? tied_projection(h, E)  // backward on stx's band kernel
                                          : torch::matmul(h, E.t());
  const double c = cfg_.logit_softcap;  // Gemma 2 soft-capping: z ← c·tanh(z/c)
  return c > 0 ? torch::tanh(z / c) * c : z;
}

torch::Tensor TransformerImpl::forward(const torch::Tensor& src, const torch::Tensor& tgt, Taps* taps) {
  auto logits = project(hidden(src, tgt, taps));
  if (taps) taps->record("logits", logits);
  return logits;
}

void TransformerImpl::set_layer_path(LayerPath p) {
  for (auto* s : {&encoder, &decoder})
    if (*s)
      for (auto& l : (*s)->layers) l->set_composed(p == LayerPath::Composed);
}

PathChoice TransformerImpl::layer_path(const torch::Tensor& like) const {
  PathChoice r{LayerPath::Fused, ""};
  for (const auto* s : {&encoder, &decoder})
    if (*s)
      for (const auto& l : (*s)->layers) {
        auto c = l->path_choice(like);
        if (c.path == LayerPath::Composed) return c;
        r.why = c.why;
      }
  return r;
}

std::vector<std::pair<std::string, torch::Tensor>> TransformerImpl::state() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (auto& p : named_parameters(/*recurse=*/true)) out.emplace_back(p.key(), p.value());
  for (auto& b : named_buffers(/*recurse=*/true)) out.emplace_back(b.key(), b.value());
  return out;
}

}  // namespace stx
