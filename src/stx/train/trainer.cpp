// stx/train/trainer.cpp — the training loop of trainer.h, in named parts.
// Setup: join the world → open the run directory → finalize the config → build the model →
// restore (or start) the run. One update (fairseq): gather train.update_freq batches →
// forward/backward each with loss/Σtokens → reduce over ranks → ‖g‖ (and the per-layer norms on
// diagnostic steps) → divergence guard → clip → optimizer step at lr = schedule(step)·lr_scale →
// log / validate / checkpoint as the cadence says.
#include "stx/train/trainer.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "stx/config/config_io.h"
#include "stx/core/atomic_file.h"
#include "stx/core/device.h"
#include "stx/core/error.h"
#include "stx/core/host_record.h"
#include "stx/core/run_dir.h"
#include "stx/core/signals.h"
#include "stx/io/safetensors.h"
#include "stx/model/init.h"
#include "stx/parallel/grad_sync.h"
#include "stx/probe/diagnostics.h"
#include "stx/probe/logit_bound.h"
#include "stx/probe/model_update.h"
#include "stx/report/metrics_log.h"
#include "stx/train/admin_start.h"
#include "stx/train/checkpoint.h"
#include "stx/train/divergence_guard.h"
#include "stx/train/memory_estimate.h"
#include "stx/train/progress_line.h"
#include "stx/train/run_data.h"
#include "stx/train/schedule.h"
#include "stx/train/train_state.h"
#include "stx/train/train_step.h"
#include "stx/train/validate.h"

namespace stx {

namespace {

using Clock = std::chrono::steady_clock;

struct UpdateSums {
  double loss = 0, nll = 0;  // Σ label-smoothed loss and Σ nll over the update's target tokens
  int64_t tokens = 0, sentences = 0;
};

class Trainer {
 public:
  explicit Trainer(const TrainOptions& o)
      : o_(o), cfg_(o.config), dir_(o.run_dir), guard_(cfg_.train.spike_window, cfg_.train.spike_zscore) {
    if (o_.resume_prev) o_.resume = true;  // continuing from checkpoint_prev is a resume
    const auto& t = cfg_.train;
    cadence_ = {t.log_every, t.eval_every, t.checkpoint_every, t.max_steps};
  }

  TrainOutcome run();

 private:
  // Setup, in this order.
  void join_world();
  void open_run_dir();
  void finalize_config();
  void build_model();
  void restore();
  // One update.
  std::vector<Batch> gather(UpdateSums& sums);
  void forward_backward(const std::vector<Batch>& batches, UpdateSums& sums);
  void reduce(UpdateSums& sums);
  double grad_norm(bool diag, const nlohmann::json& grads);
  double apply(double gnorm);
  void after_update(bool diag, nlohmann::json& grads, double gnorm, double lr);
  // The rest.
  TrainState state_now() const;
  void save_last();
  void rollback_to_last();
  TrainOutcome handle_divergence(DivergenceGuard::Verdict v, double loss, double gnorm);
  void log_step(const nlohmann::json& grads, double lr, double seconds);
  void validate_now();
  void progress(double lr, bool force) {
    if (!o_.quiet) progress_.show(st_.step, cfg_.train.max_steps, last_loss_, lr, speed_, force);
  }
  bool main() const { return !world_ || world_->is_main(); }
  int rank() const { return world_ ? world_->rank() : 0; }
  int world_size() const { return world_ ? world_->size() : 1; }

  TrainOptions o_;
  Config cfg_;
  RunDir dir_;
  Cadence cadence_;
  std::optional<Checkpoint> resume_from_;  // resume: the checkpoint read by open_run_dir
  std::optional<RunData> data_;
  torch::Device device_{torch::kCPU};
  Transformer model_{nullptr};
  std::optional<Optimizer> opt_;
  std::optional<TrainStep> step_;
  std::optional<probe::ModelUpdate> probe_;
  std::optional<MetricsLog> log_;
  MemoryEstimate memory_;
  std::unique_ptr<parallel::World> world_;  // data parallel only
  std::unique_ptr<parallel::GradSync> sync_;
  bool stop_all_ = false;  // some rank was asked to stop (all-reduced each update)
  Schedule schedule_;
  DivergenceGuard guard_;
  TrainState st_;
  int64_t last_checkpoint_step_ = 0;
  double speed_ = 0, last_loss_ = NAN;
  ProgressLine progress_;
  Clock::time_point t_window_ = Clock::now();
};

// ---- setup --------------------------------------------------------------------------------

void Trainer::join_world() {
  if (!o_.world) return;
  device_ = resolve_device(to_string(cfg_.train.device));
  if (device_.is_cuda()) device_ = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(o_.world->local_rank));
  world_ = std::make_unique<parallel::World>(*o_.world, std::chrono::seconds(cfg_.train.dist_timeout_s), device_);
  if (!world_->is_main()) o_.quiet = true;
}

void Trainer::open_run_dir() {
  if (main()) dir_.own();  // one writer, before anything in the directory is read or written
  dir_.check_start(o_.resume, o_.resume_prev);
  if (o_.resume_prev && main()) {
    read_checkpoint(dir_.prev());  // verified before anything moves
    dir_.restore_previous();
  }
  if (world_ && o_.resume_prev) world_->barrier();
  if (o_.resume) resume_from_ = read_last_checkpoint(dir_);
  dir_.create();
}

void Trainer::finalize_config() {
  // Refuse an incompatible config before any work (the vocabulary comes from the run).
  if (resume_from_) adopt_resumed_config(*resume_from_, cfg_, world_size(), dir_);
  check_memory(cfg_, memory_ = estimate_training_memory(cfg_));  // before the data and the model
  // Data and vocabulary (a resumed run keeps its own SentencePiece models; in a data-parallel
  // job rank 0 prepares them and the others then read the run's copies).
  const bool fresh = !o_.resume;
  if (main()) data_.emplace(load_run_data(cfg_, dir_.dir(), /*reuse_run_vocab=*/!fresh, o_.quiet));
  if (world_) world_->barrier();
  if (!main()) data_.emplace(load_run_data(cfg_, dir_.dir(), /*reuse_run_vocab=*/true, true));
  if (resume_from_ && data_->vocab.vocab_size != cfg_.model.vocab_size)
    throw InputError("cannot resume " + dir_.dir() + ": its SentencePiece model has " +
                     std::to_string(data_->vocab.vocab_size) + " pieces but the checkpoint's model.vocab_size is " +
                     std::to_string(cfg_.model.vocab_size));
  cfg_.model.vocab_size = data_->vocab.vocab_size;
  cfg_.model.pad_id = data_->vocab.pad_id;
  validate(cfg_);
}

void Trainer::build_model() {
  if (!world_) device_ = resolve_device(to_string(cfg_.train.device));
  torch::manual_seed(cfg_.train.seed);
  model_ = Transformer(cfg_.model);
  initialize(*model_, static_cast<uint64_t>(cfg_.train.seed));  // on the CPU: the same θ₀ on any device
  if (cfg_.model.scheme == Scheme::Admin && !o_.resume)         // Admin's ω on the first batch (admin_start.h)
    profile_admin_at_start(*model_, *data_->train, dir_.dir(), main(), o_.quiet);
  model_->to(device_, cfg_.train.dtype == DType::Float64 ? torch::kFloat64 : torch::kFloat32);
  model_->set_checkpoint_activations(cfg_.train.checkpoint_activations);
  for (auto* t : {&data_->probe.src, &data_->probe.tgt_in, &data_->probe_src_mask, &data_->probe_tgt_mask})
    if (t->defined()) *t = t->to(device_);
  if (world_)
    parallel::broadcast_module(*world_, *model_);  // θ₀ is the same everywhere by construction; make sure, as DDP does
  // The dropout stream, independent of init; one per rank (rank 0's is the single-process one).
  torch::manual_seed(static_cast<uint64_t>(cfg_.train.seed + 1) +
                     static_cast<uint64_t>(rank()) * 0x9E3779B97F4A7C15ull);
  NamedTensors params;
  for (auto& p : model_->named_parameters(true)) params.emplace_back(p.key(), p.value());
  opt_.emplace(params, cfg_.train);
  step_.emplace(*model_, *opt_, cfg_, device_);
  if (const auto c = model_->layer_path(model_->parameters().front()); main() && !o_.quiet)  // the gate's choice
    std::cerr << "layers: " << (c.path == LayerPath::Fused ? "fused" : "composed") << " (" << c.why << ")\n";
  schedule_ = Schedule{cfg_.train.schedule, cfg_.train.lr, cfg_.train.warmup_steps, cfg_.train.max_steps};
}

void Trainer::restore() {
  // ΔF probe (rank 0): the first probe_sentences validation examples, F(x, θ₀) snapshotted once per run.
  if (main()) probe_.emplace(model_, data_->probe.src, data_->probe.tgt_in);
  // The run's config as it now is (a resume may change the keys resume_incompatibility allows,
  // e.g. train.max_steps; the next resume starts from these).
  if (main()) write_text_atomically(dir_.config(), config_to_yaml(cfg_));
  if (!resume_from_) {
    if (main()) save_safetensors(dir_.probe(), {{"f0", probe_->reference().to(torch::kCPU)}}, {}, Checksums::On);
  } else {
    restore_checkpoint(*resume_from_, *model_, *opt_, dir_.last(), rank());
    st_ = TrainState::from_json(resume_from_->train_state, dir_.last());
    data_->train->seek(st_.data);
    guard_.load(st_.guard);
    if (main()) {
      auto saved = load_safetensors(dir_.probe());
      const auto* f0 = saved.find("f0");
      if (!f0) throw InputError(dir_.probe() + ": no tensor 'f0'");
      probe_->set_reference(f0->to(device_), probe_->hidden());
    }
    last_checkpoint_step_ = st_.step;
    resume_from_.reset();  // its tensors are in the model and optimizer now
  }
  if (world_) {
    std::vector<std::pair<std::string, torch::Tensor>> ps;
    for (auto& p : model_->named_parameters())
      if (p.value().requires_grad()) ps.emplace_back(p.key(), p.value());
    sync_ = std::make_unique<parallel::GradSync>(*world_, std::move(ps), cfg_.train.bucket_mb);
    step_->set_direct_grads(false);  // the Reducer hooks each parameter's AccumulateGrad
    if (main() && !o_.quiet) std::cerr << sync_->summary(cfg_.train.update_freq, cfg_.train.max_tokens) << "\n";
  }
  if (main()) {
    log_.emplace(dir_.metrics(), o_.resume ? st_.step : 0);
    if (const auto s = log_->repair().describe(dir_.metrics(), st_.step); o_.resume && !s.empty())
      std::cerr << s << "\n";
    // Which machine trained which steps: one line per start (rank 0's), kept across resumes.
    record_host(dir_.hosts(),
                {{"step", st_.step},
                 {"resumed", o_.resume},
                 {"world_size", world_size()},
                 {"device", to_string(cfg_.train.device)},
                 {"memory_estimate_mb", memory_.total() / 1e6}},
                o_.resume);
  }
  if (!o_.resume) save_last();  // step 0: resume and rollback always have a checkpoint
}

// ---- checkpoints --------------------------------------------------------------------------

TrainState Trainer::state_now() const {
  TrainState s = st_;
  s.data = data_->train->position();
  s.guard = guard_.state();
  s.world_size = world_size();
  return s;
}

// Collective in a data-parallel job: every rank's generator state goes into rank 0's file.
void Trainer::save_last() {
  const auto rank_rngs = world_ ? parallel::other_ranks_generator_states(*world_) : std::vector<torch::Tensor>{};
  if (main()) {
    dir_.keep_previous();
    save_checkpoint(dir_.last(), *model_, *opt_, cfg_, state_now().to_json(), rank_rngs);
  }
  last_checkpoint_step_ = st_.step;
}

void Trainer::rollback_to_last() {
  auto ck = read_last_checkpoint(dir_, "cannot roll back: ");
  restore_checkpoint(ck, *model_, *opt_, dir_.last(), rank());
  st_.rewind_to(TrainState::from_json(ck.train_state, dir_.last()));
  data_->train->seek(st_.data);
  guard_.load(st_.guard);
}

TrainOutcome Trainer::handle_divergence(DivergenceGuard::Verdict v, double loss, double gnorm) {
  const auto cause = guard_.describe(v, loss, gnorm);
  const auto action = cfg_.train.on_divergence;
  if (log_)
    log_->write({{"step", st_.step + 1}, {"event", "divergence"}, {"cause", cause}, {"action", to_string(action)}});
  opt_->zero_grad();
  if (action == OnDivergence::Skip && ++st_.skips_in_row <= cfg_.train.max_skips) {
    if (!o_.quiet) std::cerr << fmt::format("\nstep {}: {}; update skipped\n", st_.step + 1, cause);
    return {TrainOutcome::Kind::Finished, st_.step, ""};
  }
  if (action == OnDivergence::Rollback && ++st_.rollbacks <= cfg_.train.max_rollbacks) {
    st_.lr_scale *= cfg_.train.rollback_lr_factor;
    rollback_to_last();
    if (!o_.quiet)
      std::cerr << fmt::format("\nstep {}: {}; rolled back to step {} with lr × {}\n", st_.step + 1, cause, st_.step,
                               st_.lr_scale);
    return {TrainOutcome::Kind::Finished, st_.step, ""};
  }
  return {TrainOutcome::Kind::Diverged, st_.step + 1,
          fmt::format("diverged at step {}: {} (on_divergence: {}); the last good checkpoint is {} (step {})",
                      st_.step + 1, cause, to_string(action), dir_.last(), last_checkpoint_step_)};
}

// ---- logging ------------------------------------------------------------------------------

void Trainer::log_step(const nlohmann::json& grads, double lr, double seconds) {
  const auto& w = st_.window;
  nlohmann::json r = {{"step", st_.step},
                      {"loss", w.loss / w.tokens},
                      {"nll", w.nll / w.tokens},
                      {"ppl", std::exp(w.nll / w.tokens)},
                      {"lr", lr},
                      {"tokens_per_s", w.tokens / seconds},
                      {"sentences", w.sentences},
                      {"epoch", data_->train->position().epoch}};
  r.update(grads);
  Taps taps = probe::probe_taps();
  const auto upd = probe_->measure(&taps);
  r["delta_f"] = upd.from_start;
  r["delta_f_step"] = upd.from_previous;
  r.update(probe::norm_and_entropy(taps, cfg_.model.d_model, data_->probe_src_mask, data_->probe_tgt_mask));
  r.update(probe::logit_bound(*model_, taps, data_->probe_src_mask, data_->probe_tgt_mask));
  r.update(probe::weight_stats(*model_));
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  r["peak_rss_mb"] = static_cast<double>(ru.ru_maxrss) / 1024.0;  // the process's peak resident memory so far
  if (o_.on_log) o_.on_log(r);
  log_->write(r);
}

void Trainer::validate_now() {
  auto v = validate_run(*model_, *data_, cfg_);
  nlohmann::json r = {{"step", st_.step}, {"valid_loss", v.loss}, {"valid_nll", v.nll}, {"valid_ppl", std::exp(v.nll)}};
  if (v.bleu) r["valid_bleu"] = *v.bleu;
  log_->write(r);
  if (!o_.quiet)
    std::cerr << fmt::format("\nstep {}: valid loss {:.4f} ppl {:.2f}{}\n", st_.step, v.loss, std::exp(v.nll),
                             v.bleu ? fmt::format(" BLEU {:.2f}", *v.bleu) : "");
  if (v.loss < st_.best_valid) {
    st_.best_valid = v.loss;
    save_checkpoint(dir_.best(), *model_, *opt_, cfg_, state_now().to_json());
  }
}

// ---- one update ---------------------------------------------------------------------------

// The update's batches: this rank's share, every N-th of N·update_freq; `sums` counts all of them.
std::vector<Batch> Trainer::gather(UpdateSums& sums) {
  std::vector<Batch> batches;
  for (int64_t k = 0; k < cfg_.train.update_freq * world_size(); ++k) {
    Batch b = data_->train->next();
    sums.tokens += b.tgt_tokens, sums.sentences += b.sentences;
    if (k % world_size() == rank()) batches.push_back(std::move(b));
  }
  return batches;
}

// Forward/backward of each batch with loss / Σ tokens of the whole update.
void Trainer::forward_backward(const std::vector<Batch>& batches, UpdateSums& sums) {
  step_->begin();
  for (size_t i = 0; i < batches.size(); ++i) {
    LossSums ls = step_->forward(batches[i]);
    auto loss = ls.loss / static_cast<double>(sums.tokens);
    if (sync_ && i + 1 == batches.size()) sync_->backward(loss);  // this backward all-reduces
    else loss.backward();
    sums.loss += ls.loss.item<double>(), sums.nll += ls.nll.item<double>();
  }
}

// Data parallel: Σ over ranks of the gradients and loss sums, and whether any rank must stop.
void Trainer::reduce(UpdateSums& sums) {
  if (!world_) return;
  auto s = torch::tensor({sums.loss, sums.nll, stop_signal() ? 1.0 : 0.0}, torch::kFloat64);
  world_->all_reduce_sum(s);
  sums.loss = s[0].item<double>(), sums.nll = s[1].item<double>();
  stop_all_ = s[2].item<double>() > 0;
}

double Trainer::grad_norm(bool diag, const nlohmann::json& grads) {
  return diag ? grads.value("grad_norm", 0.0) : step_->grad_norm();
}

// Clip and step (train_step.h); returns the learning rate.
double Trainer::apply(double gnorm) {
  const double lr = schedule_.at(st_.step + 1) * st_.lr_scale;
  step_->apply(gnorm, lr);
  return lr;
}

void Trainer::after_update(bool diag, nlohmann::json& grads, double gnorm, double lr) {
  const auto& t = cfg_.train;
  if (diag) {
    grads["grad_norm_clipped"] = t.clip_norm > 0 && gnorm > t.clip_norm;
    if (main()) log_step(grads, lr, std::chrono::duration<double>(Clock::now() - t_window_).count());
    st_.window = LogWindow{};
    t_window_ = Clock::now();
    progress(lr, /*force=*/true);
  } else {
    progress(lr, false);
  }
  const auto t_aside = Clock::now();  // validation and checkpoints do not count in tokens_per_s
  if (cadence_.validates(st_.step) && main()) validate_now();
  if (cadence_.saves(st_.step)) save_last();
  t_window_ += Clock::now() - t_aside;
}

TrainOutcome Trainer::run() {
  try {
    join_world();
    open_run_dir();
    finalize_config();
    build_model();
    restore();
  } catch (const InputError&) {
    dir_.discard_if_unused();  // a failed start leaves no empty run directory behind
    throw;
  }
  install_stop_handlers();
  progress_.start(st_.step);
  t_window_ = Clock::now();
  while (st_.step < cfg_.train.max_steps) {
    if (o_.stop_after && st_.step >= *o_.stop_after) {
      if (!o_.quiet) std::cerr << "\n";
      return {TrainOutcome::Kind::Finished, st_.step, fmt::format("stopped after {} steps (probe)", st_.step)};
    }
    if (stop_all_ || (!world_ && stop_signal())) {
      const int sig = stop_signal() ? stop_signal() : SIGTERM;  // data parallel: maybe another rank's
      save_last();
      return {
          TrainOutcome::Kind::Interrupted, st_.step,
          fmt::format("stopped by signal {} after step {}; checkpoint written; continue with --resume", sig, st_.step),
          sig};
    }
    UpdateSums sums;
    const auto batches = gather(sums);
    const auto t0 = Clock::now();
    forward_backward(batches, sums);
    reduce(sums);
    const double loss = sums.loss / static_cast<double>(sums.tokens);
    const bool diag = cadence_.logs(st_.step + 1);
    nlohmann::json grads = diag ? probe::gradient_norms(*model_) : nlohmann::json::object();
    const double gnorm = grad_norm(diag, grads);
    if (auto v = guard_.check(loss, gnorm); v != DivergenceGuard::Verdict::Ok) {
      auto out = handle_divergence(v, loss, gnorm);
      if (out.kind == TrainOutcome::Kind::Diverged) return out;
      continue;
    }
    st_.skips_in_row = 0;
    const double lr = apply(gnorm);
    guard_.accept(loss);
    ++st_.step;
    last_loss_ = loss;
    auto& w = st_.window;
    w.loss += sums.loss, w.nll += sums.nll, w.tokens += sums.tokens, w.sentences += sums.sentences, ++w.updates;
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    speed_ = speed_ > 0 ? 0.9 * speed_ + 0.1 * sums.tokens / dt : sums.tokens / dt;  // tokens/s, smoothed
    after_update(diag, grads, gnorm, lr);
  }
  if (!o_.quiet) std::cerr << "\n";
  return {TrainOutcome::Kind::Finished, st_.step,
          fmt::format("finished {} steps; best valid loss {:.4f}; run in {}", st_.step, st_.best_valid, dir_.dir())};
}

}  // namespace

TrainOutcome train(const TrainOptions& o) {
  Trainer t(o);
  return t.run();
}

}  // namespace stx
