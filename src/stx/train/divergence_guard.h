// stx/train/divergence_guard.h — detects a diverging run before it wastes hours: a non-finite
// loss or gradient norm, or a loss spike, i.e. a loss whose z-score against the last `window`
// accepted losses exceeds `zscore` (z = (loss − mean)/std, needs window/2 losses first).
// What happens next is train.on_divergence (stop | skip | rollback), decided by the trainer.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <deque>
#include <string>

namespace stx {

class DivergenceGuard {
 public:
  enum class Verdict { Ok, NonFinite, Spike };
  DivergenceGuard(int64_t window, double zscore) : window_(window), zscore_(zscore) {}

  // Judges a step's loss and gradient norm; does not record them.
  Verdict check(double loss, double grad_norm) const;
  // Records an accepted step's loss in the window.
  void accept(double loss);
  // A one-line reason for the last non-Ok verdict of check(loss, grad_norm).
  std::string describe(Verdict v, double loss, double grad_norm) const;

  nlohmann::json state() const;  // the window, for checkpoints
  void load(const nlohmann::json& j);

 private:
  double mean() const;
  double stddev() const;
  int64_t window_;
  double zscore_;
  std::deque<double> losses_;
};

}  // namespace stx
