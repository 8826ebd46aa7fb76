// stx/data/corpus.h — the line corpora of docs/data.md: a translation corpus is two
// line-aligned files per split (`SPLIT.SRC` and `SPLIT.TGT`), an LM corpus one file per split
// (`SPLIT.txt`), plain or gzip-compressed (`.gz`). One segment per line, UTF-8.
#pragma once
#include <string>
#include <vector>

#include "stx/config/config.h"

namespace stx {

// The lines of a UTF-8 text file, plain or gzip (detected by its magic bytes), without the '\n'
// (a final line without '\n' counts; a trailing '\r' is removed). InputError (one line naming the
// file) when it is missing or unreadable, a corrupt or truncated gzip stream, not UTF-8 (names
// the line number), or has no non-empty line.
std::vector<std::string> read_lines(const std::string& path);

// Where data.corpus's files are. data.corpus is a name or a directory:
//   bible-es-en, moby-dick  → <source>/data/default/NAME   (embedded, always present)
//   deen, lm                → <source>/data/cache/NAME     (scripts/fetch-data.sh)
//   python-stdlib           → <source>/data/cache/NAME     (scripts/data/build-python-corpus.sh,
//                                                           run by scripts/setup.sh)
//   anything else           → a directory path
// A missing directory is an InputError that names it and, for deen/lm/python-stdlib, the
// script that builds it.
std::string corpus_dir(const DataConfig& d);

struct CorpusFiles {
  std::string src, tgt;  // translation: both; lm: tgt only (src empty)
};
// The files of one split (train, valid, test, or any other name such as test-ding): for
// translation DIR/SPLIT.{src_lang,tgt_lang}[.gz], for lm DIR/SPLIT.txt[.gz]; the plain file wins
// when both exist. A missing file is an InputError that lists the splits the directory has.
CorpusFiles corpus_files(const DataConfig& d, const std::string& split);

struct Corpus {
  std::vector<std::string> src, tgt;  // translation: aligned, equal sizes; lm: tgt only
};
// Reads a split. Translation: InputError if the two files' line counts differ (both counts
// and both paths in the message). Empty lines are kept here (the batcher drops empty examples).
Corpus load_corpus(const DataConfig& d, const std::string& split);

}  // namespace stx
