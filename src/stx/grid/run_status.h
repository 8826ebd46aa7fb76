// stx/grid/run_status.h — the state of one run of a sweep, read from its directory
// (metrics.jsonl, checkpoint_last.safetensors, config.yaml and the sweep's own
// sweep_status.json), and the classification of a run that ended:
//
//   diverged  — `stx train` exited 1: the divergence guard stopped it (a non-finite loss or
//               gradient, or a loss spike; train.on_divergence). Step and cause come from the
//               last {"event":"divergence"} line of metrics.jsonl.
//   stalled   — it finished all steps but did not learn: with L_first the first logged train
//               loss and L_end the mean train loss over the last 10 % (at least one) of the
//               logged training lines, L_end ≥ 0.9·L_first (needs ≥ 2 lines); or the last
//               validation nll is ≥ ln V, the loss of the uniform guess over the V-piece
//               vocabulary (no better than knowing nothing).
//   converged — it finished all steps and is not stalled.
// A run that has not ended is not-started (no checkpoint), interrupted (a checkpoint, fewer
// than N steps: the sweep resumes it) or failed (the child crashed or was killed without a
// sweep signal, e.g. out of memory: a rerun of the sweep retries it).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace stx::grid {

enum class Outcome { NotStarted, Interrupted, Failed, Converged, Stalled, Diverged };
std::string to_string(Outcome);

struct RunResult {
  std::string name, scheme;
  int64_t depth = 0;
  Outcome outcome = Outcome::NotStarted;
  int64_t step = 0;                                         // last step logged (diverged: the step that diverged)
  std::string cause;                                        // diverged: the guard's cause; failed: how the child ended
  int exit_code = -1;                                       // of the last `stx train` child (-1: unknown)
  double seconds = 0;                                       // wall time of all the run's children together
  int64_t divergence_events = 0;                            // skipped/rolled-back updates included
  int64_t last_event_step = 0;                              // step of the last divergence event (0: none)
  int64_t vocab_size = 0;                                   // the run's tokenizer's (config.yaml), 0 if unknown
  std::optional<double> first_loss, end_loss;               // the stall test's L_first, L_end
  std::optional<double> valid_loss, valid_nll, valid_bleu;  // the last validation line
  int64_t valid_step = 0;

  bool ended() const {
    return outcome == Outcome::Converged || outcome == Outcome::Stalled || outcome == Outcome::Diverged;
  }
};

// Reads a run directory (absent: NotStarted). `steps` is the sweep's N.
RunResult read_run(const std::string& dir, const std::string& scheme, int64_t depth, int64_t steps);

// Fills the loss numbers of `r` from metrics records and, if finished, sets Converged/Stalled.
// Returns whether the records show all `steps` steps done.
bool classify(RunResult& r, const std::vector<nlohmann::json>& records, int64_t steps);

// DIR/run/sweep_status.json, written atomically after each child exits:
// {"exit_code","outcome","step","cause","seconds"}.
void write_status(const std::string& dir, const RunResult& r);

// "12:34" or "1:02:03": a wall time for results and reports.
std::string duration_text(double seconds);

// The short form of a divergence cause for a table cell ("non-finite", "loss spike").
std::string short_cause(const std::string& cause);

}  // namespace stx::grid
