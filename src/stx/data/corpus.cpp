// stx/data/corpus.cpp — see corpus.h. Reading plain and gzip line files (zlib: gzopen/gzread,
// corruption and truncation from gzerror/gzclose_r), UTF-8 validation (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF), and the corpus layout of docs/data.md §1, §3, §4, §5.
#include "stx/data/corpus.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "stx/core/error.h"
#include "stx/core/user_path.h"

namespace fs = std::filesystem;

namespace stx {

namespace {

// zlib's error text for `gz` without the "PATH: " prefix gzerror adds.
std::string gz_message(gzFile gz, const std::string& path, int* errnum) {
  std::string msg = ::gzerror(gz, errnum);
  if (msg.rfind(path + ": ", 0) == 0) msg.erase(0, path.size() + 2);
  return msg;
}

// The whole file as bytes; gzip (magic 1f 8b) is decompressed, every member of a multi-member
// stream included.
std::string read_bytes(const std::string& path) {
  require_regular_file(path, "corpus file");  // before opening: a FIFO would block
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError("corpus file '" + path + "' cannot be read");
  unsigned char magic[2] = {0, 0};
  f.read(reinterpret_cast<char*>(magic), 2);
  const bool gzip = f.gcount() == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  if (!gzip) {
    f.clear();
    f.seekg(0);
    std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (f.bad()) throw InputError("corpus file '" + path + "' cannot be read");
    return s;
  }
  f.close();
  gzFile gz = ::gzopen(path.c_str(), "rb");
  if (!gz) throw InputError("corpus file '" + path + "' cannot be opened");
  ::gzbuffer(gz, 1 << 18);
  std::string out;
  std::vector<char> buf(1 << 20);
  for (;;) {
    const int n = ::gzread(gz, buf.data(), static_cast<unsigned>(buf.size()));
    if (n < 0) {
      int errnum = 0;
      const std::string msg = gz_message(gz, path, &errnum);
      ::gzclose_r(gz);
      throw InputError("corpus file '" + path + "' is a corrupt gzip stream (" + msg + ")");
    }
    if (n == 0) break;
    out.append(buf.data(), static_cast<size_t>(n));
  }
  // A stream cut short reads as a clean end of file; zlib reports it here (Z_BUF_ERROR).
  int errnum = 0;
  const std::string msg = gz_message(gz, path, &errnum);
  const int rc = ::gzclose_r(gz);
  if (errnum != Z_OK || rc != Z_OK)
    throw InputError("corpus file '" + path + "' is a truncated or corrupt gzip stream (" +
                     (msg.empty() || errnum == Z_OK ? std::string("unexpected end of file") : msg) + ")");
  return out;
}

// Length of the valid UTF-8 sequence at s[i], or 0 when it is not one.
size_t utf8_seq(const unsigned char* s, size_t i, size_t n) {
  const unsigned c = s[i];
  if (c < 0x80) return 1;
  size_t len;
  unsigned lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) len = 2;
  else if (c == 0xE0) len = 3, lo = 0xA0;  // no overlong 3-byte forms
  else if (c == 0xED) len = 3, hi = 0x9F;  // no surrogates U+D800–DFFF
  else if (c >= 0xE1 && c <= 0xEF) len = 3;
  else if (c == 0xF0) len = 4, lo = 0x90;  // no overlong 4-byte forms
  else if (c >= 0xF1 && c <= 0xF3) len = 4;
  else if (c == 0xF4) len = 4, hi = 0x8F;  // nothing above U+10FFFF
  else return 0;
  if (i + len > n) return 0;
  if (s[i + 1] < lo || s[i + 1] > hi) return 0;
  for (size_t k = 2; k < len; ++k)
    if (s[i + k] < 0x80 || s[i + k] > 0xBF) return 0;
  return len;
}

void check_utf8(const std::string& path, const std::string& line, size_t lineno) {
  const auto* s = reinterpret_cast<const unsigned char*>(line.data());
  for (size_t i = 0, n = line.size(); i < n;) {
    if (s[i] == 0)
      throw InputError("corpus file '" + path + "' line " + std::to_string(lineno) + " contains a NUL byte");
    const size_t len = utf8_seq(s, i, n);
    if (len == 0)
      throw InputError("corpus file '" + path + "' line " + std::to_string(lineno) + " is not valid UTF-8 (byte " +
                       std::to_string(i + 1) + ")");
    i += len;
  }
}

bool is_lm(const DataConfig& d) { return d.task == Task::LM; }

// Split names present in `dir`: for translation those with both SPLIT.src and SPLIT.tgt files
// (plain or .gz), for lm those with SPLIT.txt[.gz].
std::vector<std::string> available_splits(const std::string& dir, const DataConfig& d) {
  std::set<std::string> seen[2];
  const std::vector<std::string> exts =
      is_lm(d) ? std::vector<std::string>{".txt"} : std::vector<std::string>{"." + d.src_lang, "." + d.tgt_lang};
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.size() > 3 && name.compare(name.size() - 3, 3, ".gz") == 0) name.resize(name.size() - 3);
    for (size_t k = 0; k < exts.size(); ++k)
      if (name.size() > exts[k].size() && name.compare(name.size() - exts[k].size(), exts[k].size(), exts[k]) == 0)
        seen[k].insert(name.substr(0, name.size() - exts[k].size()));
  }
  std::vector<std::string> out;
  for (auto& s : seen[0])
    if (exts.size() == 1 || seen[1].count(s)) out.push_back(s);
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// DIR/STEM or DIR/STEM.gz (the plain file wins); empty when nothing is at either name. Something
// that is there but not a readable file (a directory, a FIFO, a symbolic link loop, …) is an
// InputError naming it, not a missing split.
std::string find_file(const std::string& dir, const std::string& stem) {
  for (const std::string& path : {dir + "/" + stem, dir + "/" + stem + ".gz"}) {
    if (inspect_path(path).kind == PathKind::Missing) continue;
    require_regular_file(path, "corpus file");
    return path;
  }
  return "";
}

}  // namespace

std::vector<std::string> read_lines(const std::string& path) {
  const std::string bytes = read_bytes(path);
  std::vector<std::string> lines;
  size_t start = 0;
  if (bytes.compare(0, 3, "\xEF\xBB\xBF") == 0) start = 3;  // a UTF-8 byte-order mark is not text
  bool any = false;
  while (start < bytes.size()) {
    size_t end = bytes.find('\n', start);
    const size_t next = end == std::string::npos ? bytes.size() : end + 1;
    if (end == std::string::npos) end = bytes.size();
    if (end > start && bytes[end - 1] == '\r') --end;
    lines.emplace_back(bytes, start, end - start);
    check_utf8(path, lines.back(), lines.size());
    any = any || lines.back().find_first_not_of(" \t\f\v\r") != std::string::npos;
    start = next;
  }
  if (!any) throw InputError("corpus file '" + path + "' is empty (no line with text other than whitespace)");
  return lines;
}

std::string corpus_dir(const DataConfig& d) {
  const std::string src = STX_SOURCE_DIR;
  std::string dir;
  bool fetched = false;
  if (d.corpus == "bible-es-en" || d.corpus == "moby-dick") {
    dir = src + "/data/default/" + d.corpus;
  } else if (d.corpus == "deen" || d.corpus == "lm" || d.corpus == "python-stdlib") {
    dir = src + "/data/cache/" + d.corpus;
    fetched = true;
  } else {
    dir = d.corpus;
  }
  const auto info = inspect_path(dir);
  if (info.kind != PathKind::Missing && info.kind != PathKind::Directory)
    throw InputError("data.corpus '" + d.corpus + "': cannot use '" + dir + "': " + path_problem(info, true) +
                     " (allowed: bible-es-en, moby-dick, deen, lm, python-stdlib, or a corpus directory)");
  if (info.kind == PathKind::Missing) {
    std::string msg = "data.corpus '" + d.corpus + "': directory '" + dir + "' not found";
    if (d.corpus == "python-stdlib")
      msg += "; run scripts/data/build-python-corpus.sh (scripts/setup.sh does) to build it";
    else if (fetched)
      msg += "; run scripts/fetch-data.sh" + std::string(d.corpus == "deen" ? " --only deen" : " --only lm") +
             " to build it";
    else msg += " (allowed: bible-es-en, moby-dick, deen, lm, python-stdlib, or a corpus directory)";
    throw InputError(msg);
  }
  return dir;
}

CorpusFiles corpus_files(const DataConfig& d, const std::string& split) {
  const std::string dir = corpus_dir(d);
  CorpusFiles f;
  std::string missing;
  if (is_lm(d)) {
    f.tgt = find_file(dir, split + ".txt");
    if (f.tgt.empty()) missing = split + ".txt[.gz]";
  } else {
    f.src = find_file(dir, split + "." + d.src_lang);
    f.tgt = find_file(dir, split + "." + d.tgt_lang);
    if (f.src.empty()) missing = split + "." + d.src_lang + "[.gz]";
    if (f.tgt.empty()) missing += (missing.empty() ? "" : " and ") + split + "." + d.tgt_lang + "[.gz]";
  }
  if (!missing.empty()) {
    const auto splits = available_splits(dir, d);
    const std::string what = is_lm(d) ? "lm" : d.src_lang + "-" + d.tgt_lang;
    throw InputError("data.corpus '" + d.corpus + "' has no split '" + split + "' (" + what + "): " + dir + "/" +
                     missing + " not found; available splits: " + (splits.empty() ? "none" : join(splits)));
  }
  return f;
}

Corpus load_corpus(const DataConfig& d, const std::string& split) {
  const CorpusFiles f = corpus_files(d, split);
  auto lines = [&](const std::string& path) {
    try {
      return read_lines(path);
    } catch (const InputError& e) {
      throw InputError("split '" + split + "' of data.corpus '" + d.corpus + "': " + e.what());
    }
  };
  Corpus c;
  c.tgt = lines(f.tgt);
  if (!is_lm(d)) {
    c.src = lines(f.src);
    if (c.src.size() != c.tgt.size())
      throw InputError("split '" + split + "' of data.corpus '" + d.corpus + "' is not line-aligned: " + f.src +
                       " has " + std::to_string(c.src.size()) + " lines, " + f.tgt + " has " +
                       std::to_string(c.tgt.size()));
  }
  return c;
}

}  // namespace stx
