// stx/core/run_dir.cpp — see run_dir.h.
#include "stx/core/run_dir.h"

#include <filesystem>
#include <iostream>

#include "stx/core/dir_lock.h"
#include "stx/core/error.h"

namespace stx {

namespace fs = std::filesystem;

namespace {

// Points `to` at `from`'s file: a hard link, or a copy where links fail.
void link_or_copy(const std::string& from, const std::string& to, std::error_code& ec) {
  fs::create_hard_link(from, to, ec);
  if (ec) {
    ec.clear();
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  }
}

// Whether `path` exists; InputError naming it when it cannot be told (a symbolic link loop, a
// name too long, no permission) rather than a filesystem_error.
bool present(const std::string& path) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
    throw InputError(path + ": " + ec.message());
  return fs::exists(st);
}

}  // namespace

std::string RunDir::file(const std::string& name) const { return (fs::path(dir_) / name).string(); }

bool RunDir::holds_run() const { return present(last()); }

bool RunDir::has_prev() const { return present(prev()); }

void RunDir::check_start(bool resume, bool prev) const {
  if (!resume && holds_run())
    throw InputError(dir_ + " already holds a run (" + kLast +
                     "); pass --resume to continue it or choose another --out");
  if (!resume && has_prev())  // a run whose last checkpoint is gone: a fresh start would overwrite the one left
    throw InputError(dir_ + " holds a run with no " + kLast + " but a " + kPrev +
                     "; pass --resume-prev to continue from it or choose another --out");
  if (resume && prev && !has_prev())
    throw InputError("--resume-prev: " + dir_ + " has no " + kPrev + " to resume from");
  if (resume && !prev && !holds_run())
    throw InputError("--resume: " + dir_ + " has no " + kLast + " to resume from" +
                     (has_prev() ? std::string("; it has a ") + kPrev + ": pass --resume-prev" : std::string()));
}

void RunDir::create() {
  std::error_code ec;
  const bool made = fs::create_directories(dir_, ec);
  if (ec) throw InputError("cannot create the run directory " + dir_ + ": " + ec.message());
  if (!fs::is_directory(dir_, ec)) throw InputError("--out " + dir_ + " exists and is not a directory");
  created_ |= made;
}

void RunDir::own() {
  create();
  lock_ = std::make_shared<DirLock>(dir_, "run directory");
  if (lock_->stale_removed())
    std::cerr << dir_ << ": removed " << lock_->stale_removed() << " temporary file(s) ("
              << static_cast<int64_t>(lock_->stale_mb() + 0.5) << " MB) left by a killed process\n";
}

void RunDir::discard_if_unused() noexcept {
  if (!created_) return;
  std::error_code ec;
  bool only_lock = true;
  for (auto& e : fs::directory_iterator(dir_, ec)) only_lock &= e.path().filename() == DirLock::kFile;
  if (!ec && only_lock) {
    fs::remove(fs::path(dir_) / DirLock::kFile, ec);
    fs::remove(dir_, ec);
  }
  created_ = false;
}

void RunDir::keep_previous() const {
  if (!holds_run()) return;
  std::error_code ec;
  if (has_prev() && fs::equivalent(last(), prev(), ec)) return;  // already the same file (after --resume-prev)
  const std::string tmp = prev() + ".tmp";
  fs::remove(tmp, ec);
  link_or_copy(last(), tmp, ec);
  if (!ec) fs::rename(tmp, prev(), ec);  // atomic: prev is the old one or the new one
  if (ec) throw InputError("cannot keep " + last() + " as " + prev() + ": " + ec.message());
}

void RunDir::restore_previous() const {
  // checkpoint_last exists at every moment: the corrupt one is linked aside, then replaced by an
  // atomic rename of a link to checkpoint_prev.
  std::error_code ec;
  if (holds_run()) {
    fs::remove(file(kCorrupt), ec);
    link_or_copy(last(), file(kCorrupt), ec);
    if (ec) throw InputError("cannot keep " + last() + " as " + file(kCorrupt) + ": " + ec.message());
  }
  const std::string tmp = last() + ".tmp";
  fs::remove(tmp, ec);
  link_or_copy(prev(), tmp, ec);
  if (!ec) fs::rename(tmp, last(), ec);
  if (ec) throw InputError("cannot make " + prev() + " the last checkpoint: " + ec.message());
}

}  // namespace stx
