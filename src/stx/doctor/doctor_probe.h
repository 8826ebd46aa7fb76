// stx/doctor/doctor_probe.h — the doctor's probe: the first K updates of the real run (the
// config's own schedule: warm-up and decay of train.max_steps), trained in a temporary
// directory with the diagnostics logged, then read (doctor_signals.h).
#pragma once
#include <cstdint>

#include "stx/config/config.h"
#include "stx/doctor/doctor_signals.h"

namespace stx::doctor {

// K: 5 % of train.max_steps, at least two logging intervals.
int64_t default_horizon(const Config& c);

struct ProbeResult {
  Early early;
  int64_t horizon = 0;
  double seconds = 0;
};

// Trains the first `horizon` updates of `c` (logging at least twice by then: log_every is
// lowered to horizon/2 when larger; validation and checkpoints are skipped — neither changes
// the updates) and returns the early lines. Throws InputError on bad input.
ProbeResult probe(const Config& c, int64_t horizon, bool quiet);

}  // namespace stx::doctor
