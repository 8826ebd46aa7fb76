// stx/doctor/doctor_signals.h — what `stx doctor` reads from the first steps of a run
// (docs/doctor.md states these definitions and the papers behind them).
//
// A metrics.jsonl training line (docs/metrics.md) is reduced to a Line of scalars; the signals
// are read at the probe horizon K (the last training line at or before step K); the four
// marked slog are on the scale slog(x) = sign(x)·log10(1 + |x|), because a run on its way to
// diverging logs values up to 1e13 that would swamp a linear model:
//   loss               slog of the training loss at K in bits per token         (baseline)
//   grad_norm          log10 ‖g‖ at K                                          (baseline)
//   grad_reach         log10 of the gradient reach at K, bottom norm floored (metrics_signals.h)
//                                                                Xiong et al. 2020, Fig. 3
//   delta_f_step       log10 ‖F(θ_K) − F(θ_K')‖ per update, K' the line before  DeepNet §3
//   attn_logit         slog of the largest attention logit at K  Dehghani et al.; Wortsman et al.
//   attn_logit_growth  slog of (largest logit at K − at the first line)      Wortsman et al. §3.1
//   entropy_min        the lowest layer attention entropy at K (nats)          Zhai et al. §3
//   entropy_max        the highest layer attention entropy at K: a layer left at near-uniform
//                      attention is one whose attention has not started to learn
//   log_z_drift        slog of (max log Z of the output at K − at the first line)  Wortsman et al. §3.2
//   ln_input           log10 of the largest norm input ‖z‖/√d at K             Xiong et al. Lemma 2
//   lr_peak            log10 train.lr (the schedule's peak)                    Wortsman et al. §3.2
//   lr_fraction        the logged rate at K ÷ train.lr (warm-up done: 1)       Xiong et al. §3.3
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stx/report/metrics_schema.h"

namespace stx::doctor {

struct Line {
  int64_t step = 0;
  double lr = 0, loss = 0, grad_norm = 0;  // loss in nats per token, as logged (NaN if not finite)
  std::optional<double> grad_reach, delta_f, delta_f_step, attn_logit, entropy_min, entropy_max, log_z_max, ln_input,
      param_norm;
};

// A training line of metrics.jsonl (nullopt for validation and event lines).
std::optional<Line> line_of(const metrics::Record& record);
nlohmann::json to_json(const Line& l);
Line line_from_json(const nlohmann::json& j);

// The first steps of a run: its training lines up to a step, and a divergence the guard
// reported up to that step.
struct Early {
  std::vector<Line> lines;
  std::optional<int64_t> diverged_step;
  std::string cause;
};
Early early_of(const std::vector<metrics::Record>& records, int64_t upto);

// The signals, in this order (docs/doctor.md).
const std::vector<std::string>& signal_names();
constexpr double kMissing = 1e300;
double slog(double x);    // sign(x)·log10(1 + |x|)
double unslog(double s);  // its inverse  // a signal the run does not log (e.g. no norm: ln_input)

struct Signals {
  int64_t step = 0;       // of the line read
  std::vector<double> x;  // signal_names() order; kMissing where absent
};
// The signals at horizon K; nullopt when fewer than two training lines are at or before K
// (the doctor needs a first line and a later one).
std::optional<Signals> signals_at(const std::vector<Line>& lines, int64_t horizon, double peak_lr);

}  // namespace stx::doctor
