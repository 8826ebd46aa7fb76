// stx/core/run_dir.cpp — see run_dir.h.
#include "stx/core/run_dir.h"

#include <filesystem>

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

}  // namespace

std::string RunDir::file(const std::string& name) const { return (fs::path(dir_) / name).string(); }

bool RunDir::holds_run() const { return fs::exists(last()); }

bool RunDir::has_prev() const { return fs::exists(prev()); }

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
  created_ = fs::create_directories(dir_, ec);
  if (ec) throw InputError("cannot create the run directory " + dir_ + ": " + ec.message());
}

void RunDir::discard_if_unused() noexcept {
  if (!created_) return;
  std::error_code ec;
  if (fs::is_empty(dir_, ec) && !ec) fs::remove(dir_, ec);
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
