// stx/core/error.h — the error types that map to the CLI's exit codes.
// InputError: bad input from the user (config, file, argument) → exit 2, one line.
// DistError: a peer of a distributed job failed or timed out → exit 4, one line.
// EnvError: the machine failed the command (disk full, I/O error) → exit 5, one line.
#pragma once
#include <stdexcept>
#include <string>

namespace stx {

// Bad input: the message names the problem and what is allowed. The CLI prints it on one
// line and exits with status 2, having written no output file.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A collective of a distributed job failed: a peer died, hung past the timeout, or the
// network failed. The CLI prints it on one line and exits with status 4.
struct DistError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The environment failed, not the input: a write hit a full disk or quota, or the device
// reported an I/O error. The CLI prints it on one line and exits with status 5; what was
// written before stays consistent (the last checkpoint and the log up to it).
struct EnvError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The error for a failed write to `path` with errno `err`: EnvError for a full disk, a quota,
// a file too large or an I/O error; InputError otherwise (permissions, missing directories,
// read-only file systems: the user chose the path).
[[noreturn]] void throw_write_error(const std::string& path, int err);

}  // namespace stx
