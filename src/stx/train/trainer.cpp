// stx/train/trainer.cpp — the training loop of trainer.h. Order of one update (fairseq):
// gather train.update_freq batches → forward/backward each with loss/Σtokens → ‖g‖ (and the
// per-layer norms on diagnostic steps) → divergence guard → clip → optimizer step at
// lr = schedule(step)·lr_scale → log / validate / checkpoint.
#include "stx/train/trainer.h"

#include <fmt/format.h>
#include <unistd.h>

#include <ATen/CPUGeneratorImpl.h>

#include <chrono>
#include <csignal>
#include <memory>
#include <mutex>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include <sys/resource.h>

#include "stx/core/atomic_file.h"
#include "stx/core/device.h"
#include "stx/core/error.h"
#include "stx/parallel/grad_sync.h"
#include "stx/config/config_io.h"
#include "stx/io/safetensors.h"
#include "stx/model/init.h"
#include "stx/probe/diagnostics.h"
#include "stx/probe/logit_bound.h"
#include "stx/probe/model_update.h"
#include "stx/report/metrics_log.h"
#include "stx/train/checkpoint.h"
#include "stx/train/divergence_guard.h"
#include "stx/train/loss.h"
#include "stx/train/run_data.h"
#include "stx/train/schedule.h"
#include "stx/core/signals.h"
#include "stx/train/validate.h"

namespace stx {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

// Sums since the last log line (part of the checkpoint so a resumed log equals an uninterrupted one).
struct Window {
  double loss = 0, nll = 0;
  int64_t tokens = 0, sentences = 0, updates = 0;
  nlohmann::json to_json() const { return {{"loss", loss}, {"nll", nll}, {"tokens", tokens}, {"sentences", sentences}, {"updates", updates}}; }
  void from_json(const nlohmann::json& j) {
    loss = j.at("loss"), nll = j.at("nll"), tokens = j.at("tokens"), sentences = j.at("sentences"), updates = j.at("updates");
  }
};

class Trainer {
 public:
  explicit Trainer(const TrainOptions& o)
      : o_(o), cfg_(o.config), guard_(cfg_.train.spike_window, cfg_.train.spike_zscore) {}

  TrainOutcome run();

 private:
  std::string path(const std::string& name) const { return (fs::path(o_.run_dir) / name).string(); }
  void setup();
  void save_last();
  void rollback_to_last();
  nlohmann::json train_state() const;
  TrainOutcome handle_divergence(DivergenceGuard::Verdict v, double loss, double gnorm);
  void log_step(const nlohmann::json& grads, double lr, double seconds);
  void validate_now();
  void progress(double lr, bool force);
  bool main() const { return !world_ || world_->is_main(); }
  int rank() const { return world_ ? world_->rank() : 0; }
  int world_size() const { return world_ ? world_->size() : 1; }

  TrainOptions o_;
  Config cfg_;
  std::optional<RunData> data_;
  torch::Device device_{torch::kCPU};
  Transformer model_{nullptr};
  std::optional<Optimizer> opt_;
  std::optional<probe::ModelUpdate> probe_;
  std::optional<MetricsLog> log_;
  std::unique_ptr<parallel::World> world_;     // data parallel only
  std::unique_ptr<parallel::GradSync> sync_;
  bool stop_all_ = false;                  // some rank was asked to stop (all-reduced each update)
  Schedule schedule_;
  DivergenceGuard guard_;
  int64_t step_ = 0, last_checkpoint_step_ = 0, skips_in_row_ = 0, rollbacks_ = 0;
  double speed_ = 0, lr_scale_ = 1.0, best_valid_ = INFINITY, last_loss_ = NAN;
  Window win_;
  Clock::time_point t_start_ = Clock::now(), t_window_ = Clock::now();
  int64_t start_step_ = 0;
};

nlohmann::json Trainer::train_state() const {
  const auto pos = data_->train->position();
  return {{"step", step_},          {"data", {{"epoch", pos.epoch}, {"index", pos.index}}},
          {"guard", guard_.state()}, {"lr_scale", lr_scale_},
          {"best_valid", std::isfinite(best_valid_) ? nlohmann::json(best_valid_) : nlohmann::json(nullptr)},
          {"window", win_.to_json()}, {"skips_in_row", skips_in_row_}, {"rollbacks", rollbacks_},
          {"world_size", world_size()}};
}

// Collective in a data-parallel job: every rank's generator state goes into rank 0's file.
void Trainer::save_last() {
  std::vector<torch::Tensor> rank_rngs;
  if (world_) {
    torch::Tensor mine;
    {
      auto gen = at::detail::getDefaultCPUGenerator();
      std::lock_guard<std::mutex> lock(gen.mutex());
      mine = gen.get_state();
    }
    auto all = world_->all_gather(mine);
    rank_rngs.assign(all.begin() + 1, all.end());
  }
  if (main()) save_checkpoint(path("checkpoint_last.safetensors"), *model_, *opt_, cfg_, train_state(), rank_rngs);
  last_checkpoint_step_ = step_;
}

void Trainer::setup() {
  const bool fresh = !o_.resume;
  if (o_.world) {
    device_ = resolve_device(cfg_.train.device);
    if (device_.is_cuda()) device_ = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(o_.world->local_rank));
    world_ = std::make_unique<parallel::World>(*o_.world, std::chrono::seconds(cfg_.train.dist_timeout_s), device_);
    if (!world_->is_main()) o_.quiet = true;
  }
  if (fresh && fs::exists(path("checkpoint_last.safetensors")))
    throw InputError(o_.run_dir + " already holds a run (checkpoint_last.safetensors); pass --resume to continue it or choose another --out");
  if (!fresh && !fs::exists(path("checkpoint_last.safetensors")))
    throw InputError("--resume: " + o_.run_dir + " has no checkpoint_last.safetensors to resume from");
  std::optional<Checkpoint> ck;
  if (!fresh) ck = read_checkpoint(path("checkpoint_last.safetensors"));
  std::error_code ec;
  fs::create_directories(o_.run_dir, ec);
  if (ec) throw InputError("cannot create the run directory " + o_.run_dir + ": " + ec.message());

  if (ck) {  // refuse an incompatible config before any work (the vocabulary comes from the run)
    const int saved = ck->train_state.value("world_size", 1);
    if (saved != world_size())
      throw InputError("cannot resume " + o_.run_dir + ": it was trained by " + std::to_string(saved) +
                       " process(es) and this job has " + std::to_string(world_size()) +
                       " (the batches of an update and their order depend on it); resume with --nproc " + std::to_string(saved));
    cfg_.model.vocab_size = ck->config.model.vocab_size;
    cfg_.model.pad_id = ck->config.model.pad_id;
    const auto why = resume_incompatibility(ck->config, cfg_);
    if (!why.empty()) throw InputError("cannot resume " + o_.run_dir + ": " + why);
  }
  // Data and vocabulary (a resumed run keeps its own SentencePiece models; in a data-parallel
  // job rank 0 prepares them and the others then read the run's copies).
  if (main()) data_.emplace(load_run_data(cfg_, o_.run_dir, /*reuse_run_vocab=*/!fresh, o_.quiet));
  if (world_) world_->barrier();
  if (!main()) data_.emplace(load_run_data(cfg_, o_.run_dir, /*reuse_run_vocab=*/true, true));
  if (ck && data_->vocab.vocab_size != cfg_.model.vocab_size)
    throw InputError("cannot resume " + o_.run_dir + ": its SentencePiece model has " + std::to_string(data_->vocab.vocab_size) +
                     " pieces but the checkpoint's model.vocab_size is " + std::to_string(cfg_.model.vocab_size));
  cfg_.model.vocab_size = data_->vocab.vocab_size;
  cfg_.model.pad_id = data_->vocab.pad_id;
  validate(cfg_);

  if (!world_) device_ = resolve_device(cfg_.train.device);
  torch::manual_seed(cfg_.train.seed);
  model_ = Transformer(cfg_.model);
  initialize(*model_, static_cast<uint64_t>(cfg_.train.seed));  // on the CPU: the same θ₀ on any device
  model_->to(device_);
  model_->set_checkpoint_activations(cfg_.train.checkpoint_activations);
  for (auto* t : {&data_->probe.src, &data_->probe.tgt_in, &data_->probe_src_mask, &data_->probe_tgt_mask})
    if (t->defined()) *t = t->to(device_);
  if (world_) {  // θ₀ is the same everywhere by construction; make sure, as DDP does
    std::vector<torch::Tensor> all;
    for (auto& p : model_->parameters()) all.push_back(p);
    for (auto& b : model_->buffers()) all.push_back(b);
    parallel::broadcast_from_main(*world_, all);
  }
  // The dropout stream, independent of init; one per rank (rank 0's is the single-process one).
  torch::manual_seed(static_cast<uint64_t>(cfg_.train.seed + 1) + static_cast<uint64_t>(rank()) * 0x9E3779B97F4A7C15ull);
  NamedTensors params;
  for (auto& p : model_->named_parameters(true)) params.emplace_back(p.key(), p.value());
  opt_.emplace(params, cfg_.train);
  schedule_ = Schedule{cfg_.train.schedule, cfg_.train.lr, cfg_.train.warmup_steps, cfg_.train.max_steps};

  // ΔF probe (rank 0): the first probe_sentences validation examples, F(x, θ₀) snapshotted once per run.
  if (main()) probe_.emplace(model_, data_->probe.src, data_->probe.tgt_in);
  // The run's config as it now is (a resume may change the keys resume_incompatibility allows,
  // e.g. train.max_steps; the next resume starts from these).
  if (main())
    write_atomically(path("config.yaml"), [&](const std::string& tmp) { std::ofstream(tmp) << config_to_yaml(cfg_); });
  if (fresh) {
    if (main()) save_safetensors(path("probe.safetensors"), {{"f0", probe_->reference().to(torch::kCPU)}});
  } else {
    restore_checkpoint(*ck, *model_, *opt_, path("checkpoint_last.safetensors"), rank());
    const auto& st = ck->train_state;
    step_ = st.at("step");
    data_->train->seek({st.at("data").at("epoch"), st.at("data").at("index")});
    guard_.load(st.at("guard"));
    lr_scale_ = st.at("lr_scale");
    best_valid_ = st.at("best_valid").is_null() ? INFINITY : st.at("best_valid").get<double>();
    win_.from_json(st.at("window"));
    skips_in_row_ = st.value("skips_in_row", 0);
    rollbacks_ = st.value("rollbacks", 0);
    if (main()) {
      auto saved = load_safetensors(path("probe.safetensors"));
      const auto* f0 = saved.find("f0");
      if (!f0) throw InputError(path("probe.safetensors") + ": no tensor 'f0'");
      probe_->set_reference(f0->to(device_), probe_->hidden());
    }
    last_checkpoint_step_ = step_;
  }
  if (world_) {
    std::vector<torch::Tensor> ps;
    for (auto& p : model_->parameters())
      if (p.requires_grad()) ps.push_back(p);
    sync_ = std::make_unique<parallel::GradSync>(*world_, ps, cfg_.train.bucket_mb);
    if (main() && !o_.quiet)
      std::cerr << fmt::format("data parallel: {} processes, {} batches of ≤ {} tokens per update, {} gradient bucket(s), "
                               "{:.1f} MB all-reduced per update\n",
                               world_size(), world_size() * cfg_.train.update_freq, cfg_.train.max_tokens, sync_->buckets(),
                               static_cast<double>(sync_->bytes()) / 1e6);
  }
  if (main()) log_.emplace(path("metrics.jsonl"), fresh ? 0 : step_);
  if (fresh) save_last();  // step 0: resume and rollback always have a checkpoint
  start_step_ = step_;
}

TrainOutcome Trainer::handle_divergence(DivergenceGuard::Verdict v, double loss, double gnorm) {
  const auto cause = guard_.describe(v, loss, gnorm);
  const auto& action = cfg_.train.on_divergence;
  if (log_) log_->write({{"step", step_ + 1}, {"event", "divergence"}, {"cause", cause}, {"action", action}});
  opt_->zero_grad();
  if (action == "skip" && ++skips_in_row_ <= cfg_.train.max_skips) {
    if (!o_.quiet) std::cerr << fmt::format("\nstep {}: {}; update skipped\n", step_ + 1, cause);
    return {TrainOutcome::Kind::Finished, step_, ""};
  }
  if (action == "rollback" && ++rollbacks_ <= cfg_.train.max_rollbacks) {
    const double scale = lr_scale_ * cfg_.train.rollback_lr_factor;
    const int64_t r = rollbacks_;
    rollback_to_last();
    lr_scale_ = scale, rollbacks_ = r;
    if (!o_.quiet)
      std::cerr << fmt::format("\nstep {}: {}; rolled back to step {} with lr × {}\n", step_ + 1, cause, step_, lr_scale_);
    return {TrainOutcome::Kind::Finished, step_, ""};
  }
  return {TrainOutcome::Kind::Diverged, step_ + 1,
          fmt::format("diverged at step {}: {} (on_divergence: {}); the last good checkpoint is {} (step {})", step_ + 1, cause,
                      action, path("checkpoint_last.safetensors"), last_checkpoint_step_)};
}

void Trainer::rollback_to_last() {
  auto ck = read_checkpoint(path("checkpoint_last.safetensors"));
  restore_checkpoint(ck, *model_, *opt_, path("checkpoint_last.safetensors"), rank());
  const auto& st = ck.train_state;
  step_ = st.at("step");
  data_->train->seek({st.at("data").at("epoch"), st.at("data").at("index")});
  guard_.load(st.at("guard"));
  win_.from_json(st.at("window"));
}

void Trainer::log_step(const nlohmann::json& grads, double lr, double seconds) {
  nlohmann::json r = {{"step", step_}, {"loss", win_.loss / win_.tokens}, {"nll", win_.nll / win_.tokens},
                      {"ppl", std::exp(win_.nll / win_.tokens)}, {"lr", lr}, {"tokens_per_s", win_.tokens / seconds},
                      {"sentences", win_.sentences}, {"epoch", data_->train->position().epoch}};
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
  log_->write(r);
}

void Trainer::validate_now() {
  auto v = validate_run(*model_, *data_, cfg_);
  nlohmann::json r = {{"step", step_}, {"valid_loss", v.loss}, {"valid_nll", v.nll}, {"valid_ppl", std::exp(v.nll)}};
  if (v.bleu) r["valid_bleu"] = *v.bleu;
  log_->write(r);
  if (!o_.quiet)
    std::cerr << fmt::format("\nstep {}: valid loss {:.4f} ppl {:.2f}{}\n", step_, v.loss, std::exp(v.nll),
                             v.bleu ? fmt::format(" BLEU {:.2f}", *v.bleu) : "");
  if (v.loss < best_valid_) {
    best_valid_ = v.loss;
    save_checkpoint(path("checkpoint_best.safetensors"), *model_, *opt_, cfg_, train_state());
  }
}

void Trainer::progress(double lr, bool force) {
  if (o_.quiet) return;
  static const bool tty = isatty(STDERR_FILENO);
  if (!tty && !force) return;
  const double el = std::chrono::duration<double>(Clock::now() - t_start_).count();
  const double per = (step_ - start_step_) > 0 ? el / static_cast<double>(step_ - start_step_) : 0;
  const int64_t eta = static_cast<int64_t>(per * static_cast<double>(cfg_.train.max_steps - step_));
  const auto line = fmt::format("step {}/{}  loss {:.4f}  lr {:.2e}  {:.0f} tok/s  ETA {}:{:02d}:{:02d}", step_,
                                cfg_.train.max_steps, last_loss_, lr, speed_, eta / 3600, eta / 60 % 60, eta % 60);
  std::cerr << (tty ? "\r" + line + "   " : line + "\n") << std::flush;
}

TrainOutcome Trainer::run() {
  setup();
  install_stop_handlers();
  t_start_ = t_window_ = Clock::now();
  const auto& t = cfg_.train;
  while (step_ < t.max_steps) {
    if (stop_all_ || (!world_ && stop_signal())) {
      const int sig = stop_signal() ? stop_signal() : SIGTERM;  // data parallel: maybe another rank's
      save_last();
      return {TrainOutcome::Kind::Interrupted, step_,
              fmt::format("stopped by signal {} after step {}; checkpoint written; continue with --resume", sig, step_), sig};
    }
    // Gather the update's batches (this rank's share: every N-th of N·update_freq), then
    // forward/backward each with loss / Σ tokens of the whole update.
    std::vector<Batch> batches;
    int64_t tokens = 0, sentences = 0;
    for (int64_t k = 0; k < t.update_freq * world_size(); ++k) {
      Batch b = data_->train->next();
      tokens += b.tgt_tokens, sentences += b.sentences;
      if (k % world_size() == rank()) batches.push_back(std::move(b));
    }
    const auto t0 = Clock::now();
    model_->train();
    opt_->zero_grad();
    double loss_sum = 0, nll_sum = 0;
    for (size_t i = 0; i < batches.size(); ++i) {
      const Batch& b = batches[i];
      auto on = [&](const torch::Tensor& x) { return x.defined() ? x.to(device_) : x; };
      LossSums ls;
      {
        AutocastScope autocast(device_);  // bf16 on CUDA
        auto logits = model_->forward(on(b.src), on(b.tgt_in));
        ls = label_smoothed_loss(logits, on(b.tgt_out), t.label_smoothing, cfg_.model.pad_id);
      }
      if (sync_ && i + 1 == batches.size()) sync_->before_backward();  // this backward all-reduces
      (ls.loss / static_cast<double>(tokens)).backward();
      loss_sum += ls.loss.item<double>(), nll_sum += ls.nll.item<double>();
    }
    if (sync_) sync_->finish();  // Σ over ranks of the gradients of Σ loss / Σ tokens of the update
    if (world_) {  // the update's loss sums, and whether any rank was asked to stop
      auto sums = torch::tensor({loss_sum, nll_sum, stop_signal() ? 1.0 : 0.0}, torch::kFloat64);
      world_->all_reduce_sum(sums);
      loss_sum = sums[0].item<double>(), nll_sum = sums[1].item<double>();
      stop_all_ = sums[2].item<double>() > 0;
    }
    const double loss = loss_sum / static_cast<double>(tokens);
    const bool diag = (step_ + 1) % t.log_every == 0;
    nlohmann::json grads = diag ? probe::gradient_norms(*model_) : nlohmann::json::object();
    const auto flat_grad = opt_->flat_grad();  // every gradient in one tensor (optimizer.h), if so
    const double gnorm = diag               ? grads.value("grad_norm", 0.0)
                         : flat_grad.defined() ? flat_grad.norm().item<double>()
                                               : probe::global_grad_norm(*model_);
    if (auto v = guard_.check(loss, gnorm); v != DivergenceGuard::Verdict::Ok) {
      auto out = handle_divergence(v, loss, gnorm);
      if (out.kind == TrainOutcome::Kind::Diverged) return out;
      continue;
    }
    skips_in_row_ = 0;
    if (t.clip_norm > 0 && gnorm > t.clip_norm) {  // torch.nn.utils.clip_grad_norm_
      const double c = t.clip_norm / (gnorm + 1e-6);
      torch::NoGradGuard ng;
      if (flat_grad.defined()) {
        flat_grad.mul_(c);
      } else {
        for (auto& p : model_->parameters())
          if (p.grad().defined()) p.grad().mul_(c);
      }
    }
    const double lr = schedule_.at(step_ + 1) * lr_scale_;
    opt_->step(lr);
    guard_.accept(loss);
    ++step_;
    last_loss_ = loss;
    win_.loss += loss_sum, win_.nll += nll_sum, win_.tokens += tokens, win_.sentences += sentences, ++win_.updates;
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    speed_ = speed_ > 0 ? 0.9 * speed_ + 0.1 * tokens / dt : tokens / dt;  // tokens/s, smoothed
    if (diag) {
      grads["grad_norm_clipped"] = t.clip_norm > 0 && gnorm > t.clip_norm;
      if (main()) log_step(grads, lr, std::chrono::duration<double>(Clock::now() - t_window_).count());
      win_ = Window{};
      t_window_ = Clock::now();
      progress(lr, /*force=*/true);
    } else {
      progress(lr, false);
    }
    const auto t_aside = Clock::now();  // validation and checkpoints do not count in tokens_per_s
    if ((step_ % t.eval_every == 0 || step_ == t.max_steps) && main()) validate_now();
    if (step_ % t.checkpoint_every == 0 || step_ == t.max_steps) save_last();
    t_window_ += Clock::now() - t_aside;
  }
  if (!o_.quiet) std::cerr << "\n";
  return {TrainOutcome::Kind::Finished, step_,
          fmt::format("finished {} steps; best valid loss {:.4f}; run in {}", step_, best_valid_, o_.run_dir)};
}

}  // namespace

TrainOutcome train(const TrainOptions& o) {
  Trainer t(o);
  return t.run();
}

}  // namespace stx
