// stx/core/atomic_file.cpp — see atomic_file.h.
#include "stx/core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "stx/core/error.h"

namespace stx {

void write_all(int fd, const void* data, size_t n, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw_write_error(path, w < 0 ? errno : ENOSPC);  // write(2) returns 0 only when nothing fits
    p += w, n -= static_cast<size_t>(w);
  }
}

void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  try {
    write(tmp);
    const int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw_write_error(tmp, errno);
    const int synced = ::fsync(fd), err = errno;  // delayed allocation or the device may fail only here
    ::close(fd);
    if (synced != 0) throw_write_error(tmp, err);
    if (std::rename(tmp.c_str(), path.c_str()) != 0) throw_write_error(path, errno);
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
}

void write_file(const std::string& path, const std::string& text, bool append) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);
  if (fd < 0) throw_write_error(path, errno);
  try {
    write_all(fd, text.data(), text.size(), path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) throw_write_error(path, errno);
}

void write_text_atomically(const std::string& path, const std::string& text) {
  write_atomically(path, [&](const std::string& tmp) { write_file(tmp, text, /*append=*/false); });
}

}  // namespace stx
