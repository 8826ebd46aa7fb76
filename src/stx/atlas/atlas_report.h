// stx/atlas/atlas_report.h — DIR/atlas.md and DIR/atlas.json of the atlas: the regime (model,
// token budget, the corpus's unigram entropy), per scheme × depth the best final bits per byte
// and its rate, the rate range within 0.1 bit/byte of it, Wortsman et al.'s learning-rate
// sensitivity, the no-warm-up column, the seed spread, and every failure with its cause and the
// signal that moved first; then every run with its outcome label (grid/outcome.h). atlas.json
// keeps per run "outcome" (the label's string), "guard_stop" (the divergence guard stopped it) and
// the reading (atlas_reading.h). Both written atomically.
#pragma once
#include <string>
#include <vector>

#include "stx/atlas/atlas_summary.h"

namespace stx::atlas {

void write_report(const std::string& dir, const std::string& command, const AtlasPlan& p,
                  const std::vector<Entry>& entries, const std::vector<std::string>& figures);

}  // namespace stx::atlas
