// stx/model/recomputing.h — whether a layer's forward is being re-run for its backward by
// activation recomputation (recompute.h). Stateful parts of a forward (σReparam's power iteration,
// linear.h) must not advance a second time; this flag is the one thing they need from it.
#pragma once

namespace stx {

// True while a layer is being recomputed for its backward (on this thread).
bool recomputing_activations();

// Marks the recomputation for its lifetime (also on an exception).
class RecomputingScope {
 public:
  RecomputingScope();
  ~RecomputingScope();
  RecomputingScope(const RecomputingScope&) = delete;
  RecomputingScope& operator=(const RecomputingScope&) = delete;
};

}  // namespace stx
