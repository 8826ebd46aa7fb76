// stx/sweep/sweep_report.h — the outputs of `stx sweep` in DIR: sweep.md (the command, a table
// in the style of DeepNet Table 1 — rows the residual schemes, columns the depths, each cell the
// final validation loss, or BLEU for translation, or "diverged @ step (cause)" — the per-run
// details, the legend and the figures) and sweep.json (all the numbers). Both written atomically.
#pragma once
#include <string>
#include <vector>

#include "stx/grid/run_status.h"
#include "stx/sweep/sweep_plan.h"

namespace stx::sweep {

using grid::duration_text;
using grid::Outcome;
using grid::RunResult;
using grid::short_cause;

struct Report {
  std::string command;  // the exact command line that produced it
  const Plan* plan = nullptr;
  std::vector<RunResult> runs;       // one per (scheme, depth) of the plan
  std::vector<std::string> figures;  // PNG paths relative to DIR
};

// The table entry of one run ("4.321", "27.1 (4.32)", "diverged @ 37 (non-finite)", "—").
std::string cell(const RunResult& r, bool translation);

void write_report(const std::string& dir, const Report& rep);

}  // namespace stx::sweep
