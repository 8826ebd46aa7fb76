// stx/core/user_path.cpp — see user_path.h.
#include "stx/core/user_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "stx/core/error.h"

namespace stx {

namespace {

// The target of the symbolic link `path`, or "" when it cannot be read.
std::string link_target(const std::string& path) {
  std::vector<char> buf(4096);
  const ssize_t n = ::readlink(path.c_str(), buf.data(), buf.size());
  return n > 0 ? std::string(buf.data(), static_cast<size_t>(n)) : std::string();
}

std::string errno_problem(int err) {
  switch (err) {
    case ELOOP: return "symbolic link loop (too many levels of symbolic links)";
    case ENAMETOOLONG: return "file name too long (a path component over 255 bytes, or the path over 4096)";
    case EACCES:
    case EPERM: return "permission denied";
    case ENOTDIR: return "a component of the path is not a directory";
    default: return std::strerror(err);
  }
}

std::string with_hint(const std::string& msg, const std::string& hint) {
  return hint.empty() ? msg : msg + "; " + hint;
}

}  // namespace

PathInfo inspect_path(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISREG(st.st_mode)) return {PathKind::Regular, 0, {}};
    if (S_ISDIR(st.st_mode)) return {PathKind::Directory, 0, {}};
    if (S_ISFIFO(st.st_mode)) return {PathKind::Fifo, 0, {}};
    if (S_ISCHR(st.st_mode)) return {PathKind::CharDevice, 0, {}};
    if (S_ISBLK(st.st_mode)) return {PathKind::BlockDevice, 0, {}};
    return {PathKind::Socket, 0, {}};
  }
  const int err = errno;
  if (err != ENOENT) return {PathKind::Error, err, {}};
  struct stat lst {};
  if (!path.empty() && ::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode))
    return {PathKind::DanglingLink, 0, link_target(path)};
  return {PathKind::Missing, 0, {}};
}

std::string path_problem(const PathInfo& info, bool want_dir) {
  const std::string not_a = want_dir ? ", not a directory" : ", not a regular file";
  switch (info.kind) {
    case PathKind::Missing: return "not found";
    case PathKind::Regular: return want_dir ? "is a regular file, not a directory" : "";
    case PathKind::Directory: return want_dir ? "" : "is a directory, not a regular file";
    case PathKind::Fifo: return "is a FIFO (named pipe)" + not_a;
    case PathKind::CharDevice: return "is a character device" + not_a;
    case PathKind::BlockDevice: return "is a block device" + not_a;
    case PathKind::Socket: return "is a socket" + not_a;
    case PathKind::DanglingLink: return "is a symbolic link to '" + info.target + "', which does not exist";
    case PathKind::Error: return errno_problem(info.err);
  }
  return "";
}

void require_regular_file(const std::string& path, const std::string& what, const std::string& hint) {
  const auto info = inspect_path(path);
  std::string problem;
  if (info.kind != PathKind::Regular) problem = path_problem(info);
  else if (::access(path.c_str(), R_OK) != 0) problem = errno_problem(errno);
  if (!problem.empty()) throw InputError(with_hint("cannot open " + what + " '" + path + "': " + problem, hint));
}

bool regular_file_if_present(const std::string& path, const std::string& what) {
  const auto info = inspect_path(path);
  if (info.kind == PathKind::Missing) return false;
  if (info.kind == PathKind::Regular) return true;
  throw InputError("cannot use " + what + " '" + path + "': " + path_problem(info));
}

void require_directory(const std::string& path, const std::string& what) {
  const auto info = inspect_path(path);
  if (info.kind != PathKind::Directory)
    throw InputError("cannot use " + what + " '" + path + "': " + path_problem(info, /*want_dir=*/true));
}

void require_directory_or_missing(const std::string& path, const std::string& what) {
  const auto info = inspect_path(path);
  if (info.kind != PathKind::Directory && info.kind != PathKind::Missing)
    throw InputError(with_hint("cannot use " + what + " '" + path + "': " + path_problem(info, /*want_dir=*/true),
                               "allowed: a directory, or a path where one can be created"));
}

}  // namespace stx
