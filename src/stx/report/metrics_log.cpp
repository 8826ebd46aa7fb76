// stx/report/metrics_log.cpp — see metrics_log.h.
#include "stx/report/metrics_log.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <optional>

#include "stx/core/atomic_file.h"
#include "stx/core/error.h"
#include "stx/report/metrics_schema.h"

namespace stx {

namespace {
struct Line {
  int64_t number;  // 1-based
  std::string text;
  bool complete;  // ends with '\n'
};

std::vector<Line> lines_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<Line> out;
  if (!in) return out;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t start = 0;
  int64_t n = 0;
  for (size_t nl; start < text.size(); start = nl + 1) {
    nl = text.find('\n', start);
    ++n;
    if (nl == std::string::npos) {
      out.push_back({n, text.substr(start), false});
      break;
    }
    if (nl > start) out.push_back({n, text.substr(start, nl - start), true});
  }
  return out;
}
}  // namespace

std::string MetricsLog::Repair::describe(const std::string& path, int64_t step) const {
  if (after == 0 && torn.empty()) return "";
  std::string s = fmt::format("{}: kept {} line(s) up to step {}", path, kept, step);
  if (after) s += fmt::format("; dropped {} line(s) logged after that checkpoint", after);
  if (!torn.empty()) {
    s += fmt::format("; dropped {} torn line(s) (line", torn.size());
    for (size_t i = 0; i < torn.size() && i < 5; ++i) s += fmt::format("{} {}", i ? "," : "", torn[i]);
    s += torn.size() > 5 ? ", …)" : ")";
  }
  return s;
}

MetricsLog::MetricsLog(const std::string& path, int64_t keep_until_step) : path_(path) {
  if (keep_until_step >= 0) {
    // The log as it stood when the checkpoint was written: every line up to the last one at or
    // before its step. Lines before that one with a higher step (logged before a rollback to an
    // earlier checkpoint) stay, with the rollback's event, as in an uninterrupted run's log.
    const auto lines = lines_of(path);
    std::vector<std::optional<int64_t>> steps;
    size_t cut = 0;
    for (auto& line : lines) {
      auto j = nlohmann::json::parse(line.text, nullptr, /*allow_exceptions=*/false);
      const bool whole = line.complete && j.is_object() && j.contains("step") && j["step"].is_number_integer();
      steps.push_back(whole ? std::optional<int64_t>(j["step"].get<int64_t>()) : std::nullopt);
      if (whole && *steps.back() <= keep_until_step) cut = steps.size();
    }
    std::string kept;
    for (size_t i = 0; i < lines.size(); ++i) {
      if (!steps[i]) repair_.torn.push_back(lines[i].number);
      else if (i < cut) kept += lines[i].text + "\n", ++repair_.kept;
      else ++repair_.after;
    }
    write_text_atomically(path, kept);
  }
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw_write_error(path, errno);
  struct stat st {};
  if (::fstat(fd_, &st) == 0) size_ = st.st_size;
}

MetricsLog::~MetricsLog() {
  if (fd_ >= 0) ::close(fd_);
}

void MetricsLog::write(const nlohmann::json& record) {
  auto dump = [](const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); };
  std::string line;
  if (size_ == 0) {  // the file's first line states the schema version
    auto first = record;
    first[metrics::key::schema] = metrics::kSchemaVersion;
    line = dump(first) + "\n";
  } else {
    line = dump(record) + "\n";
  }
  try {
    write_all(fd_, line.data(), line.size(), path_);
  } catch (...) {
    (void)::ftruncate(fd_, size_);  // no torn line: the log ends with the last whole one
    throw;
  }
  size_ += static_cast<int64_t>(line.size());
}

}  // namespace stx
