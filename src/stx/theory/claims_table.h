// stx/theory/claims_table.h — a theory Result as a terminal table and as a markdown section.
#pragma once
#include <string>

#include "stx/theory/experiment.h"

namespace stx {

// Fixed-width table: claim, predicted, measured, tolerance, ✓/✗ (observations marked "obs").
std::string claims_table_text(const theory::Result& r);
// Markdown: heading, config, claims table, findings, figure (png relative to the report).
std::string claims_markdown(const theory::Result& r, const std::string& summary, const std::string& png);

// How a JSON number/interval/string prints in a table ("1.5", "[1.5, 2.5]").
std::string format_value(const nlohmann::json& v);

}  // namespace stx
