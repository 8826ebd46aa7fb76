// stx/train/memory_estimate.h — how much memory a training run will need, computed from the
// config before anything is allocated, and the refusal of a run that cannot fit (docs/training.md
// #memory). Bytes, float32 on the CPU:
//   state        P·(4 + 4 + s): parameters, gradients, optimizer state (s = 8 Adam, 4 SGD)
//   activations  T·Σ_layers (c_d·d + c_ff·d_ff + c_att·h·n)·4 saved for backward, T tokens a
//                step of sequences ≤ n; with activation checkpointing T·L·c_ckpt·d·4 plus one
//                layer's full set
//   logits       T·V·c_V·4 (logits, softmax, their gradient)
//   probe        the diagnostic forward with taps on train.probe_sentences sequences
//   fixed        the process as it is when asked (LibTorch, BLAS, the corpus), position tables
// The coefficients are measured (peak RSS of short runs; tests/cli/test_run_dir.py checks the
// estimate against three other shapes).
#pragma once
#include <string>

#include "stx/config/config.h"

namespace stx {

struct MemoryEstimate {
  double params = 0;                                                                                  // count
  double state = 0, activations = 0, activations_checkpointed = 0, logits = 0, probe = 0, fixed = 0;  // bytes
  double resident = 0;               // the process's resident memory when estimated
  double layers = 0, per_layer = 0;  // layers in all; bytes that grow with each, as configured
  double total(bool checkpointed) const;
  double total() const;  // as configured
  bool checkpointing = false;
};

// For cfg as it will train (model.vocab_size final), from a process now `resident` bytes large.
MemoryEstimate estimate_memory(const Config& cfg, double resident);

// The same before the run's data is read: model.vocab_size as its tokenizer will set it (256
// bytes and the special tokens, or data.spm_vocab_size pieces), from this process as it is now.
MemoryEstimate estimate_training_memory(const Config& cfg);

// This process's resident memory now (/proc/self/statm).
double resident_bytes();

// Bytes this process may still add: the smallest of MemAvailable and the cgroup's limit less its
// usage; STX_MEMORY_MB, when set, caps the process's whole size (this function returns it less
// the resident memory). `source` names the one that decided.
double available_memory(std::string* source);

// InputError (exit 2) when the estimate exceeds what is available, with the estimate, what is
// available, and the settings that would fit (tokens per step, activation checkpointing, depth).
void check_memory(const Config& cfg, const MemoryEstimate& e);

}  // namespace stx
