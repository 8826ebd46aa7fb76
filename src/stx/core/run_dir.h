// stx/core/run_dir.h — a `stx train` run directory: the names of its files and the refusals of a
// fresh start or a resume, in one place (the trainer, `stx train --nproc`, the launcher, sweeps
// and experiments all ask it). Files (docs/training.md):
//   config.yaml                  the run's resolved config (what --resume starts from)
//   metrics.jsonl                one JSON line per log / validation / event (docs/metrics.md)
//   hosts.jsonl                  one JSON line per start or resume of the run (rank 0's): the
//                                step it started from and its machine (core/host_record.h)
//   checkpoint_last.safetensors  the latest state (train/checkpoint.h), written atomically
//   checkpoint_prev.safetensors  the state before it (--resume-prev when the last is corrupt)
//   checkpoint_best.safetensors  the state with the lowest validation loss
//   probe.safetensors            F(x, θ₀) of the ΔF probe batch
//   spm.{src,tgt}.model          the run's SentencePiece model(s)
//   .stx.lock                    held by the process that writes the run (core/dir_lock.h)
#pragma once
#include <memory>
#include <string>

namespace stx {

class DirLock;

class RunDir {
 public:
  static constexpr const char* kLast = "checkpoint_last.safetensors";
  static constexpr const char* kPrev = "checkpoint_prev.safetensors";
  static constexpr const char* kBest = "checkpoint_best.safetensors";
  static constexpr const char* kCorrupt = "checkpoint_last.corrupt.safetensors";
  static constexpr const char* kConfig = "config.yaml";
  static constexpr const char* kMetrics = "metrics.jsonl";
  static constexpr const char* kProbe = "probe.safetensors";
  static constexpr const char* kHosts = "hosts.jsonl";

  explicit RunDir(std::string dir) : dir_(std::move(dir)) {}

  const std::string& dir() const { return dir_; }
  std::string file(const std::string& name) const;  // dir/name
  std::string last() const { return file(kLast); }
  std::string prev() const { return file(kPrev); }
  std::string best() const { return file(kBest); }
  std::string config() const { return file(kConfig); }
  std::string metrics() const { return file(kMetrics); }
  std::string probe() const { return file(kProbe); }
  std::string hosts() const { return file(kHosts); }

  bool holds_run() const;  // has checkpoint_last
  bool has_prev() const;

  // A fresh start refuses a directory that holds a run; a resume one that does not (and, with
  // `prev`, one without checkpoint_prev). InputError, one line.
  void check_start(bool resume, bool prev = false) const;

  // Creates the directory (and parents); InputError if it cannot. Remembers whether it did.
  void create();
  // create(), then take the directory's lock for as long as this RunDir (or a copy) lives, and
  // say on stderr which temporary files of a killed writer were removed (core/dir_lock.h).
  // InputError when another process holds it.
  void own();
  // After a failed start: removes the directory again if create() made it and nothing but its
  // lock file was written into it. Never throws.
  void discard_if_unused() noexcept;

  // Before a new checkpoint_last is written: the current one becomes checkpoint_prev (a hard
  // link, or a copy where links fail), so that a checkpoint_last exists at every moment.
  void keep_previous() const;
  // --resume-prev: the corrupt checkpoint_last is kept as checkpoint_last.corrupt.safetensors and
  // checkpoint_prev becomes checkpoint_last (prev stays).
  void restore_previous() const;

 private:
  std::string dir_;
  bool created_ = false;
  std::shared_ptr<DirLock> lock_;
};

}  // namespace stx
