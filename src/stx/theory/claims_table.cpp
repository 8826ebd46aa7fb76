#include "stx/theory/claims_table.h"

#include <fmt/format.h>

#include <cmath>
#include <sstream>

namespace stx {

namespace {
std::string num(double x) {
  if (x == 0) return "0";
  const double a = std::abs(x);
  if (a >= 1e4 || a < 1e-3) return fmt::format("{:.3e}", x);
  return fmt::format("{:.4g}", x);
}

// Display width of a UTF-8 string (code points; the table uses no wide glyphs).
size_t width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string pad(const std::string& s, size_t w) { return s + std::string(w > width(s) ? w - width(s) : 0, ' '); }
}  // namespace

std::string format_value(const nlohmann::json& v) {
  if (v.is_number()) return num(v.get<double>());
  if (v.is_array() && v.size() == 2) return "[" + num(v[0].get<double>()) + ", " + num(v[1].get<double>()) + "]";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

std::string claims_table_text(const theory::Result& r) {
  std::vector<std::array<std::string, 5>> rows{{"claim", "predicted", "measured", "tolerance", "holds"}};
  for (auto& c : r.claims)
    rows.push_back({c.statement, format_value(c.predicted), num(c.measured), format_value(c.tolerance),
                    std::string(c.holds ? "✓" : "✗") + (c.theory ? "" : " (obs)")});
  std::array<size_t, 5> w{};
  for (auto& row : rows)
    for (size_t i = 0; i < 5; ++i) w[i] = std::max(w[i], width(row[i]));
  w[0] = std::min<size_t>(w[0], 70);
  std::ostringstream os;
  for (size_t k = 0; k < rows.size(); ++k) {
    auto& row = rows[k];
    os << "  " << pad(row[0], w[0]);
    for (size_t i = 1; i < 5; ++i) os << "  " << pad(row[i], w[i]);
    os << "\n";
    if (k == 0) {
      size_t total = 2;
      for (auto x : w) total += x + 2;
      os << "  " << std::string(total - 4, '-') << "\n";
    }
  }
  return os.str();
}

std::string claims_markdown(const theory::Result& r, const std::string& summary, const std::string& png) {
  std::ostringstream os;
  os << "## " << r.experiment << "\n\n" << summary << "\n\n";
  os << "Settings: `" << r.config.dump() << "`\n\n";
  os << "| claim | predicted | measured | tolerance | holds |\n|---|---|---|---|---|\n";
  for (auto& c : r.claims)
    os << "| " << c.statement << " | " << format_value(c.predicted) << " | " << num(c.measured) << " | "
       << format_value(c.tolerance) << " | " << (c.holds ? "✓" : "✗") << (c.theory ? "" : " (observation)") << " |\n";
  if (!r.findings.empty()) {
    os << "\nFindings:\n\n";
    for (auto& f : r.findings) os << "- " << f << "\n";
  }
  if (!png.empty()) os << "\n![" << r.experiment << "](" << png << ")\n";
  os << "\n";
  return os.str();
}

}  // namespace stx
