// stx/core/error.h — the error types that map to the CLI's exit codes.
// InputError: bad input from the user (config, file, argument) → exit 2, one line.
// DistError: a peer of a distributed job failed or timed out → exit 4, one line.
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

}  // namespace stx
