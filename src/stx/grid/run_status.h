// stx/grid/run_status.h — the state of one run of a grid, read from its directory
// (metrics.jsonl, checkpoint_last.safetensors, config.yaml and the grid's own
// sweep_status.json), and the label of a run that ended (grid/outcome.h: trains, too slow,
// stalls, spiked and recovered, diverges). A run ended when the divergence guard stopped it
// (`stx train` exited 1; step and cause from the last {"event":"divergence"} line of
// metrics.jsonl) or when it logged all N steps. The label's H is the unigram entropy of the run's
// own training split and tokenizer (config.yaml's data section, spm.tgt.model; data/unigram.h),
// log₂ V (config.yaml's model.vocab_size) where it cannot be computed.
// A run that has not ended is not-started (no checkpoint), interrupted (a checkpoint, fewer
// than N steps: the sweep resumes it) or failed (the child crashed or was killed without a
// sweep signal, e.g. out of memory: a rerun of the sweep retries it).
#pragma once
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stx/grid/outcome.h"
#include "stx/report/metrics_schema.h"

namespace stx::grid {

struct RunResult {
  std::string name, scheme;
  int64_t depth = 0;
  Outcome outcome = Outcome::NotStarted;
  bool guard_stop = false;                     // the divergence guard stopped it (outcome diverges)
  int64_t step = 0;                            // last step logged (guard stop: the step that diverged)
  std::string cause;                           // guard stop: the guard's cause; failed: how the child ended
  int exit_code = -1;                          // of the last `stx train` child (-1: unknown)
  double seconds = 0;                          // wall time of all the run's children together
  int64_t divergence_events = 0;               // skipped/rolled-back updates included
  int64_t last_event_step = 0;                 // step of the last divergence event (0: none)
  int64_t vocab_size = 0;                      // the run's tokenizer's (config.yaml), 0 if unknown
  bool bytes = false;                          // data.tokenizer: bytes (bits per token = per byte)
  double unigram_bits = NAN;                   // the H the label used (NaN: not needed or unknown)
  bool unigram_is_log2v = false;               // ... log₂ V: the entropy could not be computed
  std::optional<double> first_loss, end_loss;  // nats: the first logged train loss, the mean of the
                                               // last 10 % (at least one) of them
  std::optional<double> valid_loss, valid_nll, valid_bleu;  // the last validation line
  int64_t valid_step = 0;
  std::optional<double> final_bits;   // f of the outcome rules (bits per token)
  std::optional<int64_t> spike_step;  // the first logged spike (outcome.h), if any

  bool ended() const { return is_label(outcome); }
};

// Reads a run directory (absent: NotStarted). `steps` is the sweep's N.
RunResult read_run(const std::string& dir, const std::string& scheme, int64_t depth, int64_t steps);

// Fills the loss numbers of `r` from metrics records and, if it finished or the guard stopped it
// (r.guard_stop), sets its label with H = r.unigram_bits.
// Returns whether the records show all `steps` steps done.
bool classify(RunResult& r, const std::vector<metrics::Record>& records, int64_t steps);

// H of the run in `dir` (data/unigram.h, from its config.yaml and spm.tgt.model), or log₂ V of
// its config.yaml where the entropy cannot be computed (then *is_log2v is set; NaN without a
// config.yaml).
double run_unigram_bits(const std::string& dir, bool* is_log2v = nullptr);

// DIR/run/sweep_status.json, written atomically after each child exits:
// {"exit_code","outcome","guard_stop","step","cause","seconds"}; "outcome" is outcome.h's string.
void write_status(const std::string& dir, const RunResult& r);

// "12:34" or "1:02:03": a wall time for results and reports.
std::string duration_text(double seconds);

// The short form of a divergence cause for a table cell ("non-finite", "loss spike").
std::string short_cause(const std::string& cause);

// A grid's line for one run. Ended: its label and `loss` (or the guard's step and cause), then
// `extra` and its wall time. Not ended: its state, or why it is not run (`skipped`).
std::string result_line(const RunResult& r, const std::string& loss, const std::string& extra,
                        const std::string& skipped);

}  // namespace stx::grid
