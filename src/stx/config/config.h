// stx/config/config.h — the resolved configuration: model, training and data sections, with
// the key names of docs/design.md. Loading, overrides and validation live in stx/config/config_io.h.
#pragma once
#include <array>
#include <cstdint>
#include <string>

namespace stx {

enum class Arch { Encoder, Decoder, EncoderDecoder };
// post: x ← Norm(x + G(x)); pre: x ← x + G(Norm(x)) + final norm; deepnorm: x ← Norm(αx + G(x))
// with β-scaled init (Wang et al. 2022); post-init: Post-LN with layer l's weights divided by
// N−l+1 (DeepNet §3). The later stabilizers (docs/model.md, docs/reference.md#stabilizers):
// rezero x ← x + α_l·G(x); layerscale x ← x + λ_l ⊙ G(N(x)); peri-ln x ← x + N(G(N(x)));
// mix-ln Post-LN in the first ⌊p·L⌋ layers, Pre-LN above; ln-scaling Pre-LN with the norm's
// output × 1/√l; depth-scaled Pre-LN with the branch × a/√L; t-fixup x ← x + G(x), no norm, scaled
// init (Huang et al. 2020); ds-init Post-LN with layer l's uniform init bound × l^(−e) (Zhang et al. 2019);
// admin x ← N(ω ⊙ x + G(x)) with ω from a profiling pass (Liu et al. 2020); normformer Pre-LN with
// a norm after self-attention and after the FFN activation, head and residual scales (Shleifer et
// al. 2021); sub-ln Pre-LN with a norm before out_proj and fc2 and γ-scaled init (Wang et al. 2022, Magneto).
enum class Scheme {
  Post,
  Pre,
  DeepNorm,
  PostInit,
  ReZero,
  LayerScale,
  PeriLN,
  MixLN,
  LNScaling,
  DepthScaled,
  TFixup,
  DSInit,
  Admin,
  NormFormer,
  SubLN
};
// dyt: Dynamic Tanh γ ⊙ tanh(α·x) + β (Zhu et al. 2025).
enum class NormKind { LayerNorm, RMSNorm, None, DyT };
enum class Activation { ReLU, GELU };
enum class QKInit { Xavier, Zero };
enum class Positions { Sinusoidal, Learned, None };
enum class GammaInit { Sigma, One };
enum class Task { Translation, LM };                        // data.task: translation | lm
enum class TokenizerKind { SentencePiece, Bytes };          // data.tokenizer: spm | bytes (data/tokens.h)
enum class OptimizerKind { Adam, AdamW, SGD };              // train.optimizer: adam | adamw | sgd
enum class WeightDecayMode { Coupled, Independent };        // train.weight_decay_mode: coupled | independent
enum class ScheduleKind { InverseSqrt, Cosine, Constant };  // train.schedule: inverse-sqrt | cosine | constant
enum class OnDivergence { Stop, Skip, Rollback };           // train.on_divergence: stop | skip | rollback
enum class DeviceKind { CPU, CUDA };                        // train.device: cpu | cuda
enum class DType { Float32, Float64 };                      // train.dtype: float32 | float64

struct ModelConfig {
  Arch arch = Arch::EncoderDecoder;
  int64_t vocab_size = 8000;
  int64_t d_model = 512;
  int64_t n_heads = 8;
  int64_t d_ff = 2048;
  int64_t encoder_layers = 6;
  int64_t decoder_layers = 6;
  Scheme scheme = Scheme::Post;
  bool sigma_reparam = false;
  GammaInit gamma_init = GammaInit::Sigma;
  NormKind norm = NormKind::LayerNorm;
  double norm_eps = 1e-5;
  double dyt_alpha = 0.5;         // Dynamic Tanh: initial α
  double layerscale_init = 0.0;   // LayerScale ε; 0: CaiT's rule by depth (0.1 ≤ 18, 1e-5 ≤ 24, 1e-6 beyond)
  double mix_ln_ratio = 0.25;     // Mix-LN: the first ⌊p·L⌋ layers are Post-LN
  double residual_scale = 1.0;    // depth-scaled: a in the branch multiplier a/√L
  double ds_init_exponent = 0.5;  // DS-Init: bound × l^(−e); the paper 0.5, its reference code's 0.25
  bool qk_norm = false;           // QK-LayerNorm: per-head LayerNorm of q and k
  double attn_softcap = 0.0;      // attention logits z ← c·tanh(z/c) (0: off; Gemma 2 uses 50)
  double logit_softcap = 0.0;     // output logits z ← c·tanh(z/c) (0: off; Gemma 2 uses 30)
  Activation activation = Activation::ReLU;
  QKInit qk_init = QKInit::Xavier;
  bool bias = true;
  bool tie_embeddings = true;
  Positions positions = Positions::Sinusoidal;
  bool embed_scale = true;
  double dropout = 0.1;
  double attention_dropout = 0.0;
  int64_t max_len = 1024;
  int64_t pad_id = 0;  // key-padding mask token; -1: no padding token

  bool has_encoder() const { return arch != Arch::Decoder; }
  bool has_decoder() const { return arch != Arch::Encoder; }
};

struct TrainConfig {
  OptimizerKind optimizer = OptimizerKind::Adam;
  double lr = 5e-4;
  std::array<double, 2> betas{0.9, 0.98};
  double eps = 1e-8;
  double weight_decay = 1e-4;
  // AdamW's decay per step: coupled p ← p·(1 − η_t·λ) (torch.optim.AdamW); independent
  // p ← p·(1 − (η_t/η)·λ), the schedule's factor only (Loshchilov & Hutter 2019; Wortsman et al. 2023 §3.2.2)
  WeightDecayMode weight_decay_mode = WeightDecayMode::Coupled;
  double momentum = 0.9;
  ScheduleKind schedule = ScheduleKind::InverseSqrt;
  int64_t warmup_steps = 4000;
  int64_t max_steps = 1000;
  int64_t max_tokens = 4096;
  double clip_norm = 0.0;
  double z_loss = 0.0;  // + c·log²Z of the output softmax per token (0: off; PaLM uses 1e-4)
  double label_smoothing = 0.1;
  int64_t log_every = 10;
  int64_t eval_every = 200;
  int64_t checkpoint_every = 200;
  int64_t seed = 1;
  bool checkpoint_activations = false;
  bool doctor = false;  // stx doctor's verdict and watch in every training line (docs/doctor.md)
  OnDivergence on_divergence = OnDivergence::Stop;
  DeviceKind device = DeviceKind::CPU;
  DType dtype = DType::Float32;        // parameters, optimizer state and activations (float64: an ablation of rounding)
  int64_t update_freq = 1;             // batches per update (gradient accumulation)
  int64_t spike_window = 100;          // divergence guard: losses in the z-score window
  double spike_zscore = 8.0;           // a loss this many standard deviations above the window mean is a spike (0: off)
  int64_t max_skips = 10;              // on_divergence skip: consecutive skipped updates before stopping
  int64_t max_rollbacks = 5;           // on_divergence rollback: rollbacks before stopping
  double rollback_lr_factor = 0.5;     // on_divergence rollback: lr multiplier per rollback
  int64_t probe_sentences = 8;         // ΔF / entropy / LN-norm probe batch: first N valid examples
  int64_t valid_bleu_sentences = 200;  // greedy BLEU on the first N valid sentences at each eval (0: off)
  int64_t valid_sentences = 0;         // validation loss on the first N valid examples (0: all)
  double bucket_mb = 25.0;             // data parallel: gradient all-reduce bucket size cap (MB; DDP's default)
  int64_t dist_timeout_s = 600;        // data parallel: a collective waiting longer than this fails the job
};

struct DataConfig {
  Task task = Task::Translation;
  std::string corpus = "bible-es-en";
  std::string src_lang = "es";
  std::string tgt_lang = "en";
  TokenizerKind tokenizer = TokenizerKind::SentencePiece;
  int64_t spm_vocab_size = 8000;  // spm only
  bool joint_vocab = true;        // one SentencePiece model for both sides (translation)
};

struct Config {
  ModelConfig model;
  TrainConfig train;
  DataConfig data;
};

// Names as written in configs ("encoder-decoder", "deepnorm", …).
std::string to_string(Arch);
std::string to_string(Scheme);
std::string to_string(NormKind);
std::string to_string(Activation);
std::string to_string(QKInit);
std::string to_string(Positions);
std::string to_string(GammaInit);
std::string to_string(Task);
std::string to_string(TokenizerKind);
std::string to_string(OptimizerKind);
std::string to_string(ScheduleKind);
std::string to_string(OnDivergence);
std::string to_string(DeviceKind);
std::string to_string(DType);

}  // namespace stx
