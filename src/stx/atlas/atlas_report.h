// stx/atlas/atlas_report.h — DIR/atlas.md and DIR/atlas.json of the atlas: the regime (model,
// token budget, the corpus's unigram entropy), per scheme × depth the best final bits per byte
// and its rate, the rate range within 0.1 bit/byte of it, Wortsman et al.'s learning-rate
// sensitivity, the no-warm-up column, the seed spread, and every failure with its cause and the
// signal that moved first; then every run. Both written atomically.
#pragma once
#include <string>
#include <vector>

#include "stx/atlas/atlas_summary.h"

namespace stx::atlas {

void write_report(const std::string& dir, const std::string& command, const AtlasPlan& p,
                  const std::vector<Entry>& entries, const std::vector<std::string>& figures);

}  // namespace stx::atlas
