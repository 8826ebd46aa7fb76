// stx/config/config_validate.cpp — validate() of config_io.h: the sizes and combinations every
// command checks before it builds anything; the first problem is an InputError naming the key,
// the value as written and what is allowed.
#include <fmt/format.h>

#include <cmath>

#include "stx/config/config_io.h"
#include "stx/config/schemes.h"
#include "stx/core/error.h"

namespace stx {

namespace {
// A number as the user would write it: the shortest text that reads back to it (-1, 0.1, 1e-05).
template <class T>
std::string as_written(T v) {
  return fmt::format("{}", v);
}
}  // namespace

void validate(const Config& c) {
  auto fail = [](const std::string& key, const std::string& value, const std::string& why) {
    throw InputError("config key '" + key + "': invalid value '" + value + "' (" + why + ")");
  };
  auto positive = [&](const std::string& key, int64_t v) {
    if (v <= 0) fail(key, as_written(v), "must be a positive integer");
  };
  const auto& m = c.model;
  positive("model.vocab_size", m.vocab_size);
  positive("model.d_model", m.d_model);
  positive("model.n_heads", m.n_heads);
  positive("model.d_ff", m.d_ff);
  positive("model.max_len", m.max_len);
  if (m.has_encoder()) positive("model.encoder_layers", m.encoder_layers);
  if (m.has_decoder()) positive("model.decoder_layers", m.decoder_layers);
  if (m.encoder_layers < 0) fail("model.encoder_layers", as_written(m.encoder_layers), "must be ≥ 0");
  if (m.decoder_layers < 0) fail("model.decoder_layers", as_written(m.decoder_layers), "must be ≥ 0");
  if (m.d_model % m.n_heads != 0)
    fail("model.n_heads", as_written(m.n_heads), "must divide model.d_model = " + as_written(m.d_model));
  if (!(m.norm_eps >= 0)) fail("model.norm_eps", as_written(m.norm_eps), "must be ≥ 0");
  if (m.dropout < 0 || m.dropout >= 1) fail("model.dropout", as_written(m.dropout), "must be in [0, 1)");
  if (m.attention_dropout < 0 || m.attention_dropout >= 1)
    fail("model.attention_dropout", as_written(m.attention_dropout), "must be in [0, 1)");
  if (m.pad_id < -1 || m.pad_id >= m.vocab_size)
    fail("model.pad_id", as_written(m.pad_id), "must be -1 (none) or a token id below model.vocab_size");
  // Which norms each scheme is defined with (docs/model.md#stabilizers).
  const auto scheme = to_string(m.scheme);
  if (m.scheme == Scheme::ReZero && m.norm != NormKind::None)
    fail("model.norm", to_string(m.norm),
         "is not allowed with scheme rezero: ReZero (Bachlechner et al. 2020) has no norm; set model.norm: none");
  if (m.scheme == Scheme::TFixup && m.norm != NormKind::None)
    fail("model.norm", to_string(m.norm),
         "is not allowed with scheme t-fixup: T-Fixup (Huang et al. 2020) removes the norms; set model.norm: none");
  const bool norm_free_ok = m.scheme == Scheme::Post || m.scheme == Scheme::PostInit || m.scheme == Scheme::ReZero ||
                            m.scheme == Scheme::TFixup;
  if (m.norm == NormKind::None && !norm_free_ok)
    fail("model.norm", "none",
         "scheme '" + scheme +
             "' needs a norm; norm: none is allowed with scheme post, post-init (e.g. with sigma_reparam), rezero or "
             "t-fixup");
  if (m.norm == NormKind::DyT && (m.scheme == Scheme::MixLN || post_style_layer(m.scheme, 0.0, 0, 1)))
    fail("model.norm", "dyt",
         "is not allowed with scheme '" + scheme +
             "': Dynamic Tanh (Zhu et al. 2025) is defined as the norm of Pre-LN-style sub-layers; "
             "use it with pre, layerscale, peri-ln, ln-scaling, depth-scaled, normformer or sub-ln");
  if (!(m.dyt_alpha > 0) || !std::isfinite(m.dyt_alpha))
    fail("model.dyt_alpha", as_written(m.dyt_alpha), "must be a finite number > 0");
  if (!(m.layerscale_init >= 0) || !std::isfinite(m.layerscale_init))
    fail("model.layerscale_init", as_written(m.layerscale_init), "must be ≥ 0 (0: CaiT's rule by depth)");
  if (!(m.mix_ln_ratio >= 0 && m.mix_ln_ratio <= 1))
    fail("model.mix_ln_ratio", as_written(m.mix_ln_ratio), "must be in [0, 1]");
  if (!(m.residual_scale > 0) || !std::isfinite(m.residual_scale))
    fail("model.residual_scale", as_written(m.residual_scale), "must be a finite number > 0");
  if (!(m.ds_init_exponent >= 0) || !std::isfinite(m.ds_init_exponent))
    fail("model.ds_init_exponent", as_written(m.ds_init_exponent), "must be ≥ 0 (the paper 0.5, its code 0.25)");
  if (!(m.attn_softcap >= 0) || !std::isfinite(m.attn_softcap))
    fail("model.attn_softcap", as_written(m.attn_softcap), "must be ≥ 0 (0: off)");
  if (!(m.logit_softcap >= 0) || !std::isfinite(m.logit_softcap))
    fail("model.logit_softcap", as_written(m.logit_softcap), "must be ≥ 0 (0: off)");
  if (m.sigma_reparam && m.qk_init == QKInit::Zero)
    fail("model.qk_init", "zero",
         "is not allowed with model.sigma_reparam: true (W/σ(W) is undefined at W = 0); "
         "use qk_init: xavier (with sigma_reparam, a zero γ gives uniform attention instead)");
  const auto& t = c.train;
  if (!(t.lr > 0)) fail("train.lr", as_written(t.lr), "must be > 0");
  for (int i = 0; i < 2; ++i)
    if (t.betas[i] < 0 || t.betas[i] >= 1) fail("train.betas", as_written(t.betas[i]), "each must be in [0, 1)");
  if (!(t.eps > 0)) fail("train.eps", as_written(t.eps), "must be > 0");
  if (t.weight_decay < 0) fail("train.weight_decay", as_written(t.weight_decay), "must be ≥ 0");
  if (t.weight_decay_mode == WeightDecayMode::Independent && t.optimizer != OptimizerKind::AdamW)
    fail("train.weight_decay_mode", "independent",
         "applies to train.optimizer adamw (decoupled decay); adam and sgd add λ·p to the gradient (use coupled)");
  if (t.momentum < 0 || t.momentum >= 1) fail("train.momentum", as_written(t.momentum), "must be in [0, 1)");
  if (t.warmup_steps < 0) fail("train.warmup_steps", as_written(t.warmup_steps), "must be ≥ 0");
  positive("train.max_steps", t.max_steps);
  positive("train.max_tokens", t.max_tokens);
  if (!(t.z_loss >= 0) || !std::isfinite(t.z_loss)) fail("train.z_loss", as_written(t.z_loss), "must be ≥ 0 (0: off)");
  if (t.clip_norm < 0) fail("train.clip_norm", as_written(t.clip_norm), "must be ≥ 0 (0 disables clipping)");
  if (t.label_smoothing < 0 || t.label_smoothing >= 1)
    fail("train.label_smoothing", as_written(t.label_smoothing), "must be in [0, 1)");
  positive("train.log_every", t.log_every);
  positive("train.update_freq", t.update_freq);
  if (t.spike_window < 2) fail("train.spike_window", as_written(t.spike_window), "must be ≥ 2");
  if (t.spike_zscore < 0)
    fail("train.spike_zscore", as_written(t.spike_zscore), "must be ≥ 0 (0 disables spike detection)");
  if (t.max_skips < 0) fail("train.max_skips", as_written(t.max_skips), "must be ≥ 0");
  if (t.max_rollbacks < 0) fail("train.max_rollbacks", as_written(t.max_rollbacks), "must be ≥ 0");
  if (!(t.rollback_lr_factor > 0 && t.rollback_lr_factor <= 1))
    fail("train.rollback_lr_factor", as_written(t.rollback_lr_factor), "must be in (0, 1]");
  positive("train.probe_sentences", t.probe_sentences);
  if (t.valid_bleu_sentences < 0) fail("train.valid_bleu_sentences", as_written(t.valid_bleu_sentences), "must be ≥ 0");
  if (t.valid_sentences < 0)
    fail("train.valid_sentences", as_written(t.valid_sentences), "must be ≥ 0 (0: the whole split)");
  positive("train.eval_every", t.eval_every);
  if (!(t.bucket_mb > 0))
    fail("train.bucket_mb", as_written(t.bucket_mb), "must be > 0 (MB per gradient all-reduce bucket)");
  positive("train.dist_timeout_s", t.dist_timeout_s);
  positive("train.checkpoint_every", t.checkpoint_every);
  if (c.data.spm_vocab_size <= 0)
    fail("data.spm_vocab_size", as_written(c.data.spm_vocab_size), "must be a positive integer");
}

std::string training_warning(const Config& c) {
  const auto& t = c.train;
  if (t.warmup_steps <= t.max_steps) return "";
  return fmt::format(
      "train.warmup_steps {} > train.max_steps {}: the learning rate stops at {:.3g} of train.lr, still warming up",
      t.warmup_steps, t.max_steps, static_cast<double>(t.max_steps) / static_cast<double>(t.warmup_steps));
}

}  // namespace stx
