// stx/core/dir_lock.cpp — see dir_lock.h.
#include "stx/core/dir_lock.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "stx/core/error.h"

namespace stx {

namespace fs = std::filesystem;

namespace {

std::string lock_path(const std::string& dir) { return (fs::path(dir) / DirLock::kFile).string(); }

// The pid and command line the holder wrote into the lock file ("" if unreadable).
std::string holder(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line.empty() ? "another process" : "process " + line;
}

[[noreturn]] void refuse(const std::string& dir, const std::string& what) {
  throw InputError(what + " " + dir + " is in use by " + holder(lock_path(dir)) +
                   "; wait for it to end, stop it, or choose another --out");
}

// A temporary file of a dead writer: core/atomic_file.h's "NAME.tmp.PID" whose process is
// gone, or a link-then-rename's "NAME.tmp" (run_dir.cpp; written only under the lock).
bool is_stale_temporary(const std::string& name) {
  const auto at = name.rfind(".tmp");
  if (at == std::string::npos || at == 0) return false;
  const std::string rest = name.substr(at + 4);
  if (rest.empty()) return true;
  if (rest[0] != '.' || rest.size() == 1 || rest.size() > 11) return false;
  for (size_t i = 1; i < rest.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(rest[i]))) return false;
  const auto pid = static_cast<pid_t>(std::stol(rest.substr(1)));
  return pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH;
}

}  // namespace

DirLock::DirLock(const std::string& dir, const std::string& what) {
  const std::string path = lock_path(dir);
  for (int attempt = 0; attempt < 10; ++attempt) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw InputError("cannot open the lock file " + path + ": " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      ::close(fd_), fd_ = -1;
      if (err == EWOULDBLOCK) refuse(dir, what);
      throw InputError("cannot lock " + path + ": " + std::strerror(err));
    }
    // The file locked must still be the one at `path` (not one unlinked meanwhile).
    struct stat a {
    }, b{};
    if (::fstat(fd_, &a) == 0 && ::stat(path.c_str(), &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev) break;
    ::close(fd_), fd_ = -1;
  }
  if (fd_ < 0) throw InputError("cannot lock " + path + ": it keeps being replaced");
  std::string me = std::to_string(::getpid());
  if (std::ifstream cmd("/proc/self/cmdline", std::ios::binary); cmd) {
    std::string args((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>());
    for (auto& c : args) c = c == '\0' ? ' ' : c;
    if (args.size() > 200) args = args.substr(0, 200) + "…";
    me += " (" + args.substr(0, args.find_last_not_of(' ') + 1) + ")";
  }
  me += "\n";
  if (::ftruncate(fd_, 0) == 0) (void)!::pwrite(fd_, me.data(), me.size(), 0);  // only for messages

  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!is_stale_temporary(name) || !e.is_regular_file(ec)) continue;
    const auto bytes = e.file_size(ec);
    if (fs::remove(e.path(), ec)) ++stale_, stale_mb_ += static_cast<double>(ec ? 0 : bytes) / 1e6;
  }
}

DirLock::~DirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock; the file stays (unlinking it would race)
}

void DirLock::check_free(const std::string& dir, const std::string& what) {
  const std::string path = lock_path(dir);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;  // no lock file: never owned
  const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  if (held) refuse(dir, what);
}

}  // namespace stx
