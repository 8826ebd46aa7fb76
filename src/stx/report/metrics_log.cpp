// stx/report/metrics_log.cpp — see metrics_log.h.
#include "stx/report/metrics_log.h"

#include <fstream>
#include <sstream>

#include "stx/core/atomic_file.h"
#include "stx/core/error.h"

namespace stx {

namespace {
// The complete lines of a file (a last line without '\n' is a torn write and is dropped).
std::vector<std::string> complete_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<std::string> out;
  if (!in) return out;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t start = 0;
  for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
    if (nl > start) out.push_back(text.substr(start, nl - start));
  return out;
}
}  // namespace

MetricsLog::MetricsLog(const std::string& path, int64_t keep_until_step) {
  if (keep_until_step >= 0) {
    std::string kept;
    for (auto& line : complete_lines(path)) {
      auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_object() && j.contains("step") && j["step"].get<int64_t>() <= keep_until_step) kept += line + "\n";
    }
    write_atomically(path, [&](const std::string& tmp) {
      std::ofstream o(tmp, std::ios::binary);
      o << kept;
      if (!o) throw InputError("cannot write " + tmp);
    });
  }
  f_ = std::fopen(path.c_str(), "ab");
  if (!f_) throw InputError("cannot open " + path + " for writing");
}

MetricsLog::~MetricsLog() {
  if (f_) std::fclose(f_);
}

void MetricsLog::write(const nlohmann::json& record) {
  const std::string line = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::fwrite(line.data(), 1, line.size(), f_);
  std::fflush(f_);
}

std::vector<nlohmann::json> MetricsLog::read(const std::string& path) {
  std::ifstream probe(path);
  if (!probe) throw InputError("cannot read " + path);
  std::vector<nlohmann::json> out;
  int64_t n = 0;
  for (auto& line : complete_lines(path)) {
    ++n;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw InputError(path + ":" + std::to_string(n) + ": not a JSON object");
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace stx
