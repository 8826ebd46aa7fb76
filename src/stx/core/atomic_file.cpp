#include "stx/core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "stx/core/error.h"

namespace stx {

void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  try {
    write(tmp);
    int fd = ::open(tmp.c_str(), O_RDONLY);
    if (fd < 0) throw InputError("cannot reopen " + tmp + ": " + std::strerror(errno));
    ::fsync(fd);
    ::close(fd);
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      throw InputError("cannot write " + path + ": " + std::strerror(errno));
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
}

void write_text_atomically(const std::string& path, const std::string& text) {
  write_atomically(path, [&](const std::string& tmp) {
    std::ofstream out(tmp);
    out << text;
    if (!out.flush()) throw InputError("cannot write '" + tmp + "'");
  });
}

}  // namespace stx
