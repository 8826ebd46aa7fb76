#include "stx/model/admin_pass.h"

#include <functional>

namespace stx {

std::vector<AdminRecord> admin_profile(TransformerImpl& model, const torch::Tensor& src, const torch::Tensor& tgt) {
  torch::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  AdminProfile enc{"encoder"}, dec{"decoder"};
  auto attach = [](Stack& s, AdminProfile* p) {
    if (!s) return;
    for (auto& layer : s->layers) layer->admin_profile = p;
  };
  attach(model.encoder, &enc);
  attach(model.decoder, &dec);
  struct Detach {  // also on an exception
    std::function<void()> f;
    ~Detach() { f(); }
  } detach{[&] {
    attach(model.encoder, nullptr);
    attach(model.decoder, nullptr);
    model.train(was_training);
  }};
  model.forward(src, tgt);
  auto out = enc.records;
  out.insert(out.end(), dec.records.begin(), dec.records.end());
  return out;
}

std::vector<AdminRecord> admin_profile_random(TransformerImpl& model, int64_t batch, int64_t len) {
  const auto& cfg = model.config();
  auto draw = [&] {
    const bool pad = cfg.pad_id >= 0;
    auto t = torch::randint(cfg.vocab_size - (pad ? 1 : 0), {batch, len}, torch::kLong);
    if (pad) t = t + t.ge(cfg.pad_id).to(torch::kLong);  // skip the pad id
    return t;
  };
  torch::Tensor src, tgt;
  if (cfg.has_encoder()) src = draw();
  if (cfg.has_decoder()) tgt = draw();
  return admin_profile(model, src, tgt);
}

}  // namespace stx
