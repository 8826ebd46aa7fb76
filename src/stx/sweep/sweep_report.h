// stx/sweep/sweep_report.h — the outputs of `stx sweep` in DIR: sweep.md (the command, the
// unigram entropy H of the training split, a table in the style of DeepNet Table 1 — rows the
// residual schemes, columns the depths, each cell the final validation loss with the run's
// outcome label where it is not "trains" (grid/outcome.h), or BLEU for translation, or
// "diverges @ step (cause)" where the guard stopped it — the per-run details, the legend and the
// figures) and sweep.json (all the numbers). Losses are in the live table's unit: bits per byte
// when the runs are byte-level (data.tokenizer: bytes), else nats per token; sweep.json keeps the
// nats and adds the bits, the unit of the tables ("loss_unit"), H and the cut. Both written
// atomically.
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

// The table entry of one run ("4.321", "4.512 (stalls)", "27.1 (4.32)", "diverges @ 37 (non-finite)",
// "—"); `bits`: the loss in bits per byte (valid_nll / ln 2), else valid_loss in nats.
std::string cell(const RunResult& r, bool translation, bool bits = false);

void write_report(const std::string& dir, const Report& rep);

}  // namespace stx::sweep
