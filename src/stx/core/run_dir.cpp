// stx/core/run_dir.cpp — see run_dir.h.
#include "stx/core/run_dir.h"

#include <filesystem>

#include "stx/core/error.h"

namespace stx {

namespace fs = std::filesystem;

std::string RunDir::file(const std::string& name) const { return (fs::path(dir_) / name).string(); }

bool RunDir::holds_run() const { return fs::exists(last()); }

bool RunDir::has_prev() const { return fs::exists(prev()); }

void RunDir::check_start(bool resume, bool prev) const {
  if (!resume && holds_run())
    throw InputError(dir_ + " already holds a run (" + kLast +
                     "); pass --resume to continue it or choose another --out");
  if (resume && prev && !has_prev())
    throw InputError("--resume-prev: " + dir_ + " has no " + kPrev + " to resume from");
  if (resume && !prev && !holds_run()) throw InputError("--resume: " + dir_ + " has no " + kLast + " to resume from");
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
  const std::string tmp = prev() + ".tmp";
  std::error_code ec;
  fs::remove(tmp, ec);
  fs::create_hard_link(last(), tmp, ec);
  if (ec) fs::copy_file(last(), tmp, fs::copy_options::overwrite_existing, ec);
  if (!ec) fs::rename(tmp, prev(), ec);  // atomic: prev is the old one or the new one
  if (ec) throw InputError("cannot keep " + last() + " as " + prev() + ": " + ec.message());
}

void RunDir::restore_previous() const {
  std::error_code ec;
  if (holds_run()) fs::rename(last(), file(kCorrupt), ec);
  if (ec) throw InputError("cannot set " + last() + " aside: " + ec.message());
  fs::create_hard_link(prev(), last(), ec);
  if (ec) {
    ec.clear();
    fs::copy_file(prev(), last(), fs::copy_options::overwrite_existing, ec);
  }
  if (ec) throw InputError("cannot make " + prev() + " the last checkpoint: " + ec.message());
}

}  // namespace stx
