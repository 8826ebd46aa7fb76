// stx/collapse/collapse_report.h — DIR/report.md and DIR/report.json of the entropy-collapse
// experiment: the learning-rate range over which each arm trains (outcome label "trains",
// grid/outcome.h), every run's label and reading (collapse, failure, their order), the measured relation between
// collapse and divergence over all runs, and the figures. Both written atomically.
#pragma once
#include <string>
#include <vector>

#include "stx/collapse/collapse_runner.h"

namespace stx::collapse {

void write_report(const std::string& dir, const std::string& command, const CollapsePlan& p,
                  const std::vector<Entry>& entries, const std::vector<std::string>& figures);

// "5e-04 … 4e-03" for the runs of an arm whose outcome is "trains", "none" if none trains.
std::string trained_range(const std::vector<Entry>& entries, const std::string& arm);

}  // namespace stx::collapse
