// stx/core/error.cpp — see error.h.
#include "stx/core/error.h"

#include <cerrno>
#include <cstring>

namespace stx {

void throw_write_error(const std::string& path, int err) {
  const std::string what = "cannot write " + path + ": " + std::strerror(err);
  switch (err) {
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
    case EIO:
      throw EnvError(what + " (free space or mend the device, then run again; a training run continues with --resume)");
    default: throw InputError(what);
  }
}

}  // namespace stx
